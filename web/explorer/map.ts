/**
 * The world map: Natural Earth land (world-atlas 110m, bundled) in the Natural Earth projection
 * (d3-geo). Nodes closer on screen than a tap target are one cluster with a count; zoom (buttons,
 * wheel, double-click, + and -) and pan (drag, arrow keys) split them, and a cluster whose nodes
 * share one spot lists them. Every marker and cluster is a 24 px or larger target, reachable by
 * Tab and Enter. A separate chunk (dynamic import from main.ts) so the figures and charts do not
 * wait for it.
 */
import { geoNaturalEarth1, geoPath } from 'd3-geo'
import { feature } from 'topojson-client'
import land from 'world-atlas/land-110m.json'
import { fillCard, svg } from './charts.ts'
import { clusterNodes, spreadOf, type Cluster, type Point } from './cluster.ts'
import { typeLabel } from './node-list.ts'
import type { MapNode } from './nodes.ts'

const W = 960
const H = 500
const projection = geoNaturalEarth1().fitExtent([[4, 4], [W - 4, H - 4]], { type: 'Sphere' })
const path = geoPath(projection)
let landPath: string | null = null
/** Screen px: a marker's tap target, the cluster radius that keeps targets apart, the zoom range. */
const TARGET_PX = 28
const MAX_ZOOM = 32

function landD(): string {
  if (landPath === null) {
    const objects = land.objects as Record<string, Parameters<typeof feature>[1]>
    landPath = path(feature(land, objects['land']!) as Parameters<typeof path>[0]) ?? ''
  }
  return landPath
}

/** Watches the box of the map drawn last (a redraw replaces it). */
let resizing: ResizeObserver | null = null
/** The zoom and pan, kept across redraws (a refresh that brings a changed node keeps the reader's view). */
const view = { k: 1, x: 0, y: 0 }

const ORDER: Record<string, number> = { Online: 0, Pending: 1, Offline: 2 }

export interface MapOptions {
  /** A node was chosen on the map (its detail link). */
  nodeHref?: (node: MapNode) => string
}

/** Draws the map into `container` with its tooltip `tip` (an absolutely placed element) and zoom controls. */
export function drawMap(container: HTMLElement, tip: HTMLElement, nodes: MapNode[], options: MapOptions = {}): void {
  const root = svg('svg', {
    viewBox: `0 0 ${W} ${H}`, class: 'map', role: 'group', tabindex: 0,
    'aria-label': `World map with ${nodes.length} nodes. Arrow keys move the map, plus and minus zoom; Tab reaches each marker or cluster.`,
  })
  const world = svg('g', { class: 'world' })
  world.append(svg('path', { d: path({ type: 'Sphere' }) ?? '', class: 'sphere' }), svg('path', { d: landD(), class: 'land' }))
  const markers = svg('g', { class: 'markers' })
  root.append(world, markers)
  const controls = document.createElement('div')
  controls.className = 'map-controls'
  const button = (label: string, text: string, action: () => void) => {
    const b = document.createElement('button')
    b.type = 'button'
    b.className = 'map-button'
    b.setAttribute('aria-label', label)
    b.textContent = text
    b.addEventListener('click', () => { if (b.getAttribute('aria-disabled') !== 'true') action() })
    controls.append(b)
    return b
  }
  // A redraw (a refresh) must not drop the keyboard user's place: the marker focused before is focused again.
  let restoreKey = container.contains(document.activeElement) ? document.activeElement?.getAttribute('data-key') ?? null : null
  container.replaceChildren(root, controls)

  const located: Point<MapNode>[] = []
  for (const node of nodes) {
    const p = projection([node.lon, node.lat])
    if (p !== null) located.push({ x: p[0], y: p[1], item: node })
  }
  // Offline and pending first: a cluster's look and a single marker's order favour what needs attention.
  located.sort((a, b) => (ORDER[b.item.status] ?? 3) - (ORDER[a.item.status] ?? 3))

  /** viewBox units per screen px (the svg is scaled to its box). */
  const unit = () => W / Math.max(1, container.clientWidth)
  let pinned: string | null = null

  const clamp = () => {
    view.k = Math.min(MAX_ZOOM, Math.max(1, view.k))
    view.x = Math.min(0, Math.max(W - W * view.k, view.x))
    view.y = Math.min(0, Math.max(H - H * view.k, view.y))
  }
  const zoomAt = (factor: number, cx = W / 2, cy = H / 2) => {
    hideTip()
    const k = Math.min(MAX_ZOOM, Math.max(1, view.k * factor))
    view.x = cx - ((cx - view.x) * k) / view.k
    view.y = cy - ((cy - view.y) * k) / view.k
    view.k = k
    render()
  }

  function describeCluster(c: Cluster<MapNode>): string {
    const counts = new Map<string, number>()
    for (const n of c.items) counts.set(n.status, (counts.get(n.status) ?? 0) + 1)
    const statuses = [...counts].sort((a, b) => b[1] - a[1]).map(([s, n]) => `${n} ${s.toLowerCase()}`).join(', ')
    return `${c.items.length} nodes near ${c.items[0]!.name}: ${statuses}`
  }

  /** A link to a node's page (plain text where the map was given no pages to link to). */
  function nodeLink(node: MapNode, text: string): HTMLElement {
    const link = document.createElement(options.nodeHref === undefined ? 'span' : 'a')
    if (link instanceof HTMLAnchorElement) link.href = options.nodeHref!(node)
    link.textContent = text
    return link
  }

  function showTip(lines: { title: string; rows: string[]; links?: HTMLElement[] }, at: { x: number; y: number }): void {
    fillCard(tip, lines.title, lines.rows, lines.links)
    tip.hidden = false
    const box = container.getBoundingClientRect()
    const scale = box.width / W
    const px = at.x * scale
    const py = at.y * scale
    const left = Math.min(Math.max(0, px + 14), Math.max(0, box.width - tip.offsetWidth))
    const top = py + 14 + tip.offsetHeight > box.height ? Math.max(0, py - tip.offsetHeight - 14) : py + 14
    tip.style.left = `${left}px`
    tip.style.top = `${top}px`
  }
  function hideTip(): void {
    pinned = null
    tip.hidden = true
  }

  function nodeTip(node: MapNode, at: { x: number; y: number }): void {
    showTip({
      title: node.name,
      rows: [`${typeLabel(node)} · ${node.uid}`, `Status: ${node.status}`, node.detail, `${node.lat.toFixed(3)}, ${node.lon.toFixed(3)}`].filter((l) => l !== ''),
      links: options.nodeHref === undefined ? [] : [nodeLink(node, 'Node page')],
    }, at)
  }

  /** A cluster chosen: zoom in on it, or (its nodes share one spot, or the zoom is at its end) list them. */
  function openCluster(c: Cluster<MapNode>, key: string): void {
    const spread = spreadOf(c.origins)
    if (spread * MAX_ZOOM > TARGET_PX * unit() && view.k < MAX_ZOOM) {
      // Enough zoom to set its nodes a tap target apart (at least doubling), centred on it.
      const k = Math.min(MAX_ZOOM, Math.max(view.k * 2, (TARGET_PX * 1.5 * unit()) / spread))
      const o = c.origins[0]!
      view.k = k
      view.x = W / 2 - o.x * k
      view.y = H / 2 - o.y * k
      hideTip()
      render()
      return
    }
    pinned = key
    showTip({ title: describeCluster(c), rows: c.items.length > 12 ? [`First 12 of ${c.items.length}:`] : [], links: c.items.slice(0, 12).map((n) => nodeLink(n, `${n.name} · ${n.status}`)) }, c)
    ;(tip.querySelector('a') as HTMLElement | null)?.focus()
  }

  function render(): void {
    clamp()
    world.setAttribute('transform', `translate(${view.x.toFixed(2)} ${view.y.toFixed(2)}) scale(${view.k.toFixed(4)})`)
    const u = unit()
    const onScreen = located.map((p) => ({ x: p.x * view.k + view.x, y: p.y * view.k + view.y, item: p.item, origin: { x: p.x, y: p.y } }))
      .filter((p) => p.x >= -TARGET_PX * u && p.x <= W + TARGET_PX * u && p.y >= -TARGET_PX * u && p.y <= H + TARGET_PX * u)
    const clusters = clusterNodes(onScreen, TARGET_PX * u)
    const focusedKey = restoreKey ?? (markers.contains(document.activeElement) ? document.activeElement?.getAttribute('data-key') ?? null : null)
    restoreKey = null
    markers.replaceChildren()
    for (const c of clusters) {
      const key = c.items.map((n) => `${n.network}:${n.uid}`).sort().join('|')
      const g = svg('g', { class: c.items.length === 1 ? 'node' : 'cluster', tabindex: 0, role: 'button', 'data-key': key })
      if (c.items.length === 1) {
        const node = c.items[0]!
        g.setAttribute('data-uid', node.uid)
        g.setAttribute('data-network', node.network)
        g.setAttribute('aria-label', `${node.name}, ${typeLabel(node).toLowerCase()}, ${node.status}`)
        g.append(svg('circle', { cx: c.x.toFixed(1), cy: c.y.toFixed(1), r: ((TARGET_PX / 2) * u).toFixed(2), class: 'hit' }))
        const cls = `marker ${node.network} status-${node.status.toLowerCase()}`
        if (node.network === 'gateway') g.append(svg('circle', { cx: c.x.toFixed(1), cy: c.y.toFixed(1), r: (6 * u).toFixed(2), class: cls }))
        else {
          const side = 10 * u
          g.append(svg('rect', {
            x: (c.x - side / 2).toFixed(1), y: (c.y - side / 2).toFixed(1), width: side.toFixed(1), height: side.toFixed(1),
            transform: `rotate(45 ${c.x.toFixed(1)} ${c.y.toFixed(1)})`, class: cls,
          }))
        }
      } else {
        g.setAttribute('aria-label', `${describeCluster(c)}. Enter to zoom in or list them.`)
        const worst = c.items.reduce((w, n) => Math.max(w, ORDER[n.status] ?? 0), 0)
        g.setAttribute('data-count', String(c.items.length))
        g.append(svg('circle', { cx: c.x.toFixed(1), cy: c.y.toFixed(1), r: ((TARGET_PX / 2) * u).toFixed(2), class: `cluster-disc worst-${worst}` }))
        const label = svg('text', { x: c.x.toFixed(1), y: (c.y + 4.5 * u).toFixed(1), 'text-anchor': 'middle', class: 'cluster-count', 'font-size': (13 * u).toFixed(2) })
        label.textContent = String(c.items.length)
        g.append(label)
      }
      const activate = () => {
        if (c.items.length === 1) {
          pinned = key
          nodeTip(c.items[0]!, c)
        } else openCluster(c, key)
      }
      g.addEventListener('click', (e) => { e.stopPropagation(); activate() })
      g.addEventListener('keydown', (e) => {
        if (e.key === 'Enter' || e.key === ' ') { e.preventDefault(); e.stopPropagation(); activate() }
      })
      g.addEventListener('pointerenter', (e) => {
        if (e.pointerType !== 'mouse' || pinned !== null) return
        if (c.items.length === 1) nodeTip(c.items[0]!, c)
        else showTip({ title: describeCluster(c), rows: ['Click to zoom in'] }, c)
      })
      g.addEventListener('pointerleave', (e) => { if (e.pointerType === 'mouse' && pinned === null) tip.hidden = true })
      g.addEventListener('focus', () => { if (pinned !== key) (c.items.length === 1 ? nodeTip(c.items[0]!, c) : showTip({ title: describeCluster(c), rows: ['Enter to zoom in'] }, c)) })
      markers.append(g)
    }
    if (focusedKey !== null) {
      // The same target, or (it split or merged) the first one holding one of its nodes, or the map itself.
      const parts = focusedKey.split('|')
      const targets = [...markers.querySelectorAll<SVGGElement>('[data-key]')]
      const shared = (t: SVGGElement) => t.getAttribute('data-key')!.split('|').filter((part) => parts.includes(part)).length
      const best = targets.reduce<SVGGElement | null>((b, t) => (shared(t) > (b === null ? 0 : shared(b)) ? t : b), null)
      ;(best ?? root).focus({ preventScroll: true })
    }
    // aria-disabled, not disabled: a button that reaches its end keeps the keyboard focus.
    zoomOut.setAttribute('aria-disabled', String(view.k <= 1))
    reset.setAttribute('aria-disabled', String(view.k <= 1))
    zoomIn.setAttribute('aria-disabled', String(view.k >= MAX_ZOOM))
    container.dataset['zoom'] = view.k.toFixed(2)
  }

  const zoomIn = button('Zoom in', '+', () => { hideTip(); zoomAt(2) })
  const zoomOut = button('Zoom out', '−', () => { hideTip(); zoomAt(0.5) })
  const reset = button('Zoom out to the whole world', '⟲', () => { view.k = 1; view.x = 0; view.y = 0; hideTip(); render() })

  // Pan by dragging the map (a mouse, or a horizontal finger drag: vertical ones scroll the page).
  let drag: { id: number; x: number; y: number; vx: number; vy: number; moved: boolean } | null = null
  root.addEventListener('pointerdown', (e) => {
    if (view.k <= 1 || (e.target as Element).closest('.node, .cluster') !== null) return
    drag = { id: e.pointerId, x: e.clientX, y: e.clientY, vx: view.x, vy: view.y, moved: false }
    root.setPointerCapture(e.pointerId)
  })
  root.addEventListener('pointermove', (e) => {
    if (drag === null || e.pointerId !== drag.id) return
    const u = unit()
    view.x = drag.vx + (e.clientX - drag.x) * u
    view.y = drag.vy + (e.clientY - drag.y) * u
    if (!drag.moved) hideTip()
    drag.moved = true
    render()
  })
  const endDrag = () => { drag = null }
  root.addEventListener('pointerup', endDrag)
  root.addEventListener('pointercancel', endDrag)
  root.addEventListener('click', (e) => { if ((e.target as Element).closest('.node, .cluster') === null) hideTip() })
  root.addEventListener('dblclick', (e) => {
    const rect = root.getBoundingClientRect()
    zoomAt(2, ((e.clientX - rect.left) / rect.width) * W, ((e.clientY - rect.top) / rect.height) * H)
  })
  root.addEventListener('wheel', (e) => {
    // Zoom only while the map is being used (focused): a page scroll passing over it stays a scroll.
    if (document.activeElement !== root && !root.contains(document.activeElement)) return
    e.preventDefault()
    const rect = root.getBoundingClientRect()
    zoomAt(e.deltaY < 0 ? 1.5 : 1 / 1.5, ((e.clientX - rect.left) / rect.width) * W, ((e.clientY - rect.top) / rect.height) * H)
  }, { passive: false })
  root.addEventListener('keydown', (e) => {
    const step = 80 * unit()
    const pans: Record<string, [number, number]> = { ArrowLeft: [step, 0], ArrowRight: [-step, 0], ArrowUp: [0, step], ArrowDown: [0, -step] }
    if (e.key in pans && view.k > 1) {
      e.preventDefault()
      hideTip()
      view.x += pans[e.key]![0]
      view.y += pans[e.key]![1]
      render()
    } else if (e.key === '+' || e.key === '=') { e.preventDefault(); zoomAt(2) }
    else if (e.key === '-' || e.key === '_') { e.preventDefault(); zoomAt(0.5) }
    else if (e.key === 'Escape') hideTip()
  })
  // Escape in the tip (a cluster's list has the focus) closes it and goes back to the map.
  tip.onkeydown = (e) => {
    if (e.key !== 'Escape') return
    const back = pinned
    hideTip()
    ;((back === null ? null : markers.querySelector<SVGGElement>(`[data-key="${CSS.escape(back)}"]`)) ?? root).focus()
  }

  // Marker sizes are screen px: a new box width needs them drawn again.
  let width = container.clientWidth
  resizing?.disconnect()
  resizing = new ResizeObserver(() => {
    if (container.clientWidth !== width) {
      width = container.clientWidth
      render()
    }
  })
  resizing.observe(container)
  render()
}
