/**
 * The world map: Natural Earth land (world-atlas 110m, bundled) in the Natural Earth projection
 * (d3-geo), nodes as markers by lat/lon coloured by status, details on hover, focus or tap.
 * A separate chunk (dynamic import from main.ts) so the figures and charts do not wait for it.
 */
import { geoNaturalEarth1, geoPath } from 'd3-geo'
import { feature } from 'topojson-client'
import land from 'world-atlas/land-110m.json'
import { svg } from './charts.ts'
import type { MapNode } from './nodes.ts'

const W = 960
const H = 500
const projection = geoNaturalEarth1().fitExtent([[4, 4], [W - 4, H - 4]], { type: 'Sphere' })
const path = geoPath(projection)
let landPath: string | null = null

function landD(): string {
  if (landPath === null) {
    const objects = land.objects as Record<string, Parameters<typeof feature>[1]>
    landPath = path(feature(land, objects['land']!) as Parameters<typeof path>[0]) ?? ''
  }
  return landPath
}

/** Draws the map into `container` and wires the tooltip `tip` (an absolutely placed element). */
export function drawMap(container: HTMLElement, tip: HTMLElement, nodes: MapNode[]): void {
  const root = svg('svg', { viewBox: `0 0 ${W} ${H}`, class: 'map', role: 'img', 'aria-label': `World map with ${nodes.length} nodes` })
  root.append(svg('path', { d: path({ type: 'Sphere' }) ?? '', class: 'sphere' }))
  root.append(svg('path', { d: landD(), class: 'land' }))
  const markers = svg('g', { class: 'markers' })
  // Markers at least ~9 px across on screen however narrow the map (tap targets on phones).
  const scale = Math.max(1, 540 / Math.max(1, container.clientWidth))
  const r = 5 * scale
  const side = 8 * scale
  // Offline and pending drawn last: on top of the (many) online ones.
  const order = { Online: 0, Pending: 1, Offline: 2 } as Record<string, number>
  const sorted = [...nodes].sort((a, b) => (order[a.status] ?? 3) - (order[b.status] ?? 3))
  for (const node of sorted) {
    const p = projection([node.lon, node.lat])
    if (p === null) continue
    const attrs = { class: `marker ${node.network} status-${node.status.toLowerCase()}`, 'data-uid': node.uid }
    const marker = node.network === 'gateway'
      ? svg('circle', { ...attrs, cx: p[0].toFixed(1), cy: p[1].toFixed(1), r: r.toFixed(1) })
      : svg('rect', { ...attrs, x: (p[0] - side / 2).toFixed(1), y: (p[1] - side / 2).toFixed(1), width: side.toFixed(1), height: side.toFixed(1), transform: `rotate(45 ${p[0].toFixed(1)} ${p[1].toFixed(1)})` })
    markers.append(marker)
  }
  root.append(markers)
  container.replaceChildren(root)

  const byUid = new Map(nodes.map((n) => [`${n.network}:${n.uid}`, n]))
  let pinned: Element | null = null
  const show = (target: Element, x: number, y: number) => {
    const cls = target.getAttribute('class') ?? ''
    const node = byUid.get(`${cls.includes('gateway') ? 'gateway' : 'wifi'}:${target.getAttribute('data-uid')}`)
    if (node === undefined) return
    const title = document.createElement('strong')
    title.textContent = node.name
    const lines = [`${node.network === 'gateway' ? 'Gateway' : 'WiFi node'} · ${node.uid}`, `Status: ${node.status}`, node.detail,
      `${node.lat.toFixed(3)}, ${node.lon.toFixed(3)}`]
    tip.replaceChildren(title, ...lines.filter((l) => l !== '').map((l) => {
      const span = document.createElement('span')
      span.textContent = l
      return span
    }))
    tip.hidden = false
    const box = container.getBoundingClientRect()
    const left = Math.min(Math.max(0, x - box.left + 12), Math.max(0, box.width - tip.offsetWidth))
    const top = y - box.top + 12 + tip.offsetHeight > box.height ? Math.max(0, y - box.top - tip.offsetHeight - 12) : y - box.top + 12
    tip.style.left = `${left}px`
    tip.style.top = `${top}px`
  }
  root.addEventListener('pointermove', (e) => {
    const target = e.target as Element
    if (target.classList.contains('marker')) show(target, e.clientX, e.clientY)
    else if (pinned === null) tip.hidden = true
  })
  root.addEventListener('pointerleave', () => { if (pinned === null) tip.hidden = true })
  root.addEventListener('click', (e) => {
    const target = e.target as Element
    if (target.classList.contains('marker')) {
      pinned = target
      show(target, e.clientX, e.clientY)
    } else {
      pinned = null
      tip.hidden = true
    }
  })
}
