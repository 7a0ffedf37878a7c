/**
 * Small hand-written SVG charts (no chart library): an area chart of one series and a stacked
 * bar chart of several. Drawn at the pixel size of their box (redrawn when it changes), so axis
 * text is real 12 px text on a phone as on a desktop. Every bucket's value can be read: hover or
 * tap a bucket, or focus the chart and use the arrow keys (Home/End, Escape).
 */
import { bucketLabel, formatCompact, tickIndices } from './format.ts'

const SVG = 'http://www.w3.org/2000/svg'
export interface Size { w: number; h: number }
/** Width / height of a small chart and of a wide one. */
const RATIO = { small: 320 / 170, wide: 640 / 220 }
const PAD = { left: 44, right: 10, top: 12, bottom: 26 }

export function svg<K extends keyof SVGElementTagNameMap>(name: K, attrs: Record<string, string | number> = {}): SVGElementTagNameMap[K] {
  const el = document.createElementNS(SVG, name)
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v))
  return el
}

/** A small card's content (a chart's readout, the map's tip): a bold heading, then a line each, then `more`. */
export function fillCard(box: HTMLElement, heading: string, lines: string[], more: HTMLElement[] = []): void {
  const title = document.createElement('strong')
  title.textContent = heading
  box.replaceChildren(title, ...lines.map((line) => {
    const span = document.createElement('span')
    span.textContent = line
    return span
  }), ...more)
}

function niceMax(max: number): number {
  if (max <= 0) return 1
  const p = 10 ** Math.floor(Math.log10(max))
  for (const m of [1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10]) if (m * p >= max) return m * p
  return 10 * p
}

/** The box's size in px (a hidden box, e.g. an empty network's, gets a nominal one). */
function sizeOf(container: HTMLElement, ratio: number): Size {
  const w = Math.round(container.clientWidth) || 320
  return { w, h: Math.round(w / ratio) }
}

function frame(root: SVGSVGElement, { w: W, h: H }: Size, max: number, ts: number[], step: number, x: (i: number) => number): void {
  const plotH = H - PAD.top - PAD.bottom
  for (const f of [0, 0.5, 1]) {
    const y = PAD.top + plotH * (1 - f)
    root.append(svg('line', { x1: PAD.left, x2: W - PAD.right, y1: y, y2: y, class: 'grid' }))
    const label = svg('text', { x: PAD.left - 6, y: y + 4, class: 'axis', 'text-anchor': 'end' })
    label.textContent = formatCompact(max * f)
    root.append(label)
  }
  const ticks = tickIndices(ts.length, W - PAD.left - PAD.right)
  ticks.forEach((i, k) => {
    const anchor = ticks.length > 1 && k === 0 ? 'start' : k === ticks.length - 1 && ticks.length > 1 ? 'end' : 'middle'
    const label = svg('text', { x: x(i).toFixed(1), y: H - 8, class: 'axis', 'text-anchor': anchor })
    label.textContent = bucketLabel(ts[i]!, step)
    root.append(label)
  })
}

function emptyNote(container: HTMLElement, text: string): void {
  const p = document.createElement('p')
  p.className = 'chart-empty'
  p.textContent = text
  container.replaceChildren(p)
  // Nothing to read bucket by bucket: not a focusable group any more.
  for (const attribute of ['tabindex', 'role', 'aria-label']) container.removeAttribute(attribute)
  container.onkeydown = container.onfocus = container.onblur = container.onpointerleave = null
  charts.delete(container)
}

/** The bucket a reader is on, per chart: kept across a redraw while the chart has the focus. */
const readingAt = new WeakMap<HTMLElement, number>()

export interface ChartOptions {
  /**
   * The last bucket is not finished (it reaches past the period's end, e.g. now): drawn dashed
   * and marked, so an unfinished hour or day does not read as the network going down.
   */
  partial?: boolean
  /** A bucket's value as read out ("1,234 sessions", "12.50 GB"). */
  format?: (value: number) => string
  /** Sums of buckets mean something (sessions, data); for clients they do not (daily uniques overlap). */
  additive?: boolean
}

/**
 * Each drawn chart: what it was drawn from (a refresh with the same data leaves it, and a reader's
 * place, alone), the width it was drawn at, and how to draw it again.
 */
const charts = new WeakMap<Element, { signature: string; width: number; draw: () => void }>()
const resized = typeof ResizeObserver === 'undefined' ? null : new ResizeObserver((entries) => {
  for (const entry of entries) {
    const known = charts.get(entry.target)
    const width = Math.round((entry.target as HTMLElement).clientWidth)
    if (known !== undefined && width > 0 && width !== known.width) {
      known.width = width
      known.draw()
    }
  }
})

/** Draws now (unless it shows this very data already), and again whenever the box's width changes. */
function drawn(container: HTMLElement, signature: string, draw: () => void): void {
  if (charts.get(container)?.signature === signature && container.querySelector('svg') !== null) return
  charts.set(container, { signature, width: Math.round(container.clientWidth), draw })
  resized?.observe(container)
  draw()
}

interface Readout {
  /** x of bucket i in the svg. */
  x: (i: number) => number
  /** Where the marker of bucket i sits (y), or null for none. */
  y: (i: number) => number | null
  count: number
  describe: (i: number) => { heading: string; lines: string[] }
}

/**
 * Per-bucket values on hover, tap and keyboard: a guide line and a dot in the chart, and a
 * readout box (a live region, so a screen reader hears the values the arrow keys reach).
 */
function readable(container: HTMLElement, root: SVGSVGElement, size: Size, label: string, readout: Readout): void {
  const guide = svg('line', { y1: PAD.top, y2: size.h - PAD.bottom, class: 'guide', visibility: 'hidden' })
  const dot = svg('circle', { r: 4, class: 'guide-dot', visibility: 'hidden' })
  root.append(guide, dot)
  const box = document.createElement('div')
  box.className = 'chart-readout'
  box.setAttribute('role', 'status')
  box.hidden = true
  container.append(box)
  container.tabIndex = 0
  container.setAttribute('role', 'group')
  container.setAttribute('aria-label', `${label}. Arrow keys read each bucket.`)
  let current = -1

  const show = (i: number) => {
    current = Math.max(0, Math.min(readout.count - 1, i))
    readingAt.set(container, current)
    const x = readout.x(current)
    guide.setAttribute('x1', x.toFixed(1))
    guide.setAttribute('x2', x.toFixed(1))
    guide.setAttribute('visibility', 'visible')
    const y = readout.y(current)
    if (y === null) dot.setAttribute('visibility', 'hidden')
    else {
      dot.setAttribute('cx', x.toFixed(1))
      dot.setAttribute('cy', y.toFixed(1))
      dot.setAttribute('visibility', 'visible')
    }
    const { heading, lines } = readout.describe(current)
    fillCard(box, heading, lines)
    box.hidden = false
    // Beside the guide, on whichever side has room; never outside the box.
    const scale = container.clientWidth / size.w
    const left = x * scale + 10 + box.offsetWidth > container.clientWidth ? x * scale - 10 - box.offsetWidth : x * scale + 10
    box.style.left = `${Math.max(0, left)}px`
  }
  const hide = () => {
    current = -1
    readingAt.delete(container)
    guide.setAttribute('visibility', 'hidden')
    dot.setAttribute('visibility', 'hidden')
    box.hidden = true
  }
  const nearest = (clientX: number) => {
    const rect = root.getBoundingClientRect()
    const x = ((clientX - rect.left) / rect.width) * size.w
    let best = 0
    for (let i = 1; i < readout.count; i++) if (Math.abs(readout.x(i) - x) < Math.abs(readout.x(best) - x)) best = i
    return best
  }
  root.addEventListener('pointermove', (e) => show(nearest(e.clientX)))
  root.addEventListener('pointerdown', (e) => show(nearest(e.clientX)))
  // Handler properties, not listeners: a redraw replaces them instead of adding more.
  container.onpointerleave = (e) => { if (e.pointerType === 'mouse' && document.activeElement !== container) hide() }
  container.onblur = hide
  container.onfocus = () => { if (current < 0) show(readout.count - 1) }
  container.onkeydown = (e) => {
    const moves: Record<string, number> = { ArrowLeft: current - 1, ArrowRight: current + 1, Home: 0, End: readout.count - 1 }
    if (e.key in moves) {
      e.preventDefault()
      show(moves[e.key]!)
    } else if (e.key === 'Escape') hide()
  }
  // Redrawn while being read (new data, a new width): the reader stays on their bucket.
  const at = readingAt.get(container)
  if (document.activeElement === container && at !== undefined) show(at)
}

/** Area chart of `[[ms, value], ...]`; "No data in this period" when every value is 0. */
export function areaChart(container: HTMLElement, series: number[][], label: string, unit: string, options: ChartOptions = {}): void {
  const points = series.filter((p): p is [number, number] => p.length === 2)
  if (points.length === 0 || points.every(([, v]) => v === 0)) return emptyNote(container, 'No data in this period')
  drawn(container, JSON.stringify([points, label, unit, options.partial, options.additive]), () => drawArea(container, points, label, unit, options))
}

function drawArea(container: HTMLElement, points: [number, number][], label: string, unit: string, options: ChartOptions): void {
  const size = sizeOf(container, RATIO.small)
  const { w: W, h: H } = size
  const max = niceMax(Math.max(...points.map(([, v]) => v)))
  const step = points.length > 1 ? points[1]![0] - points[0]![0] : 3_600_000
  const plotW = W - PAD.left - PAD.right
  const plotH = H - PAD.top - PAD.bottom
  const x = (i: number) => PAD.left + (points.length === 1 ? plotW / 2 : (plotW * i) / (points.length - 1))
  const y = (v: number) => PAD.top + plotH * (1 - v / max)
  const root = svg('svg', { viewBox: `0 0 ${W} ${H}`, width: W, height: H, role: 'img', class: 'chart' })
  const format = options.format ?? ((v: number) => `${formatCompact(v)} ${unit}`)
  const title = svg('title')
  const peak = Math.max(...points.map(([, v]) => v))
  // A total only where adding buckets means something: daily unique clients overlap from day to day.
  title.textContent = `${label}: ${points.length} buckets, peak ${format(peak)}` +
    (options.additive === false ? '' : `, total ${format(points.reduce((s, [, v]) => s + v, 0))}`)
  root.append(title)
  frame(root, size, max, points.map(([t]) => t), step, x)
  const partial = options.partial === true && points.length > 1
  // Finished buckets are the area and the solid line; an unfinished last one only a dashed segment.
  const finished = partial ? points.slice(0, -1) : points
  const line = finished.map(([, v], i) => `${i === 0 ? 'M' : 'L'}${x(i).toFixed(1)},${y(v).toFixed(1)}`).join('')
  root.append(svg('path', { d: `${line}L${x(finished.length - 1).toFixed(1)},${y(0)}L${x(0).toFixed(1)},${y(0)}Z`, class: 'area' }))
  root.append(svg('path', { d: line, class: 'line' }))
  if (partial) {
    const i = points.length - 1
    const segment = svg('path', { d: `M${x(i - 1).toFixed(1)},${y(points[i - 1]![1]).toFixed(1)}L${x(i).toFixed(1)},${y(points[i]![1]).toFixed(1)}`, class: 'line partial' })
    const note = svg('title')
    note.textContent = 'The last bucket is not finished yet'
    segment.append(note)
    root.append(segment, svg('circle', { cx: x(i).toFixed(1), cy: y(points[i]![1]).toFixed(1), r: 3, class: 'partial-point' }))
    title.textContent += '; the last bucket is not finished yet'
  }
  container.replaceChildren(root)
  readable(container, root, size, label, {
    x, y: (i) => y(points[i]![1]), count: points.length,
    describe: (i) => ({
      heading: bucketLabel(points[i]![0], step) + (partial && i === points.length - 1 ? ' (so far)' : ''),
      lines: [format(points[i]![1])],
    }),
  })
}

/** Stacked bars: one bar per bucket of `ts`, a segment per entry of `stacks` (colour class by index). */
export function stackedBars(container: HTMLElement, ts: number[], stacks: { key: string; name: string; values: number[] }[], label: string,
  options: ChartOptions = {}): void {
  const totals = ts.map((_, i) => stacks.reduce((s, st) => s + (st.values[i] ?? 0), 0))
  if (ts.length === 0 || totals.every((t) => t === 0)) return emptyNote(container, 'No sign-ups in this period')
  drawn(container, JSON.stringify([ts, stacks, label, options.partial]), () => drawBars(container, ts, stacks, totals, label, options))
}

function drawBars(container: HTMLElement, ts: number[], stacks: { key: string; name: string; values: number[] }[], totals: number[],
  label: string, options: ChartOptions): void {
  const size = sizeOf(container, RATIO.wide)
  const { w: W, h: H } = size
  const max = niceMax(Math.max(...totals))
  const step = ts.length > 1 ? ts[1]! - ts[0]! : 3_600_000
  const plotW = W - PAD.left - PAD.right
  const plotH = H - PAD.top - PAD.bottom
  const slot = plotW / ts.length
  const barW = Math.max(0.5, slot * 0.8)
  const x = (i: number) => PAD.left + slot * i + slot / 2
  const root = svg('svg', { viewBox: `0 0 ${W} ${H}`, width: W, height: H, role: 'img', class: 'chart' })
  const title = svg('title')
  title.textContent = `${label}: ${totals.reduce((a, b) => a + b, 0)} in ${ts.length} buckets`
  root.append(title)
  frame(root, size, max, ts, step, x)
  ts.forEach((_, i) => {
    let base = 0
    stacks.forEach((st, k) => {
      const v = st.values[i] ?? 0
      if (v === 0) return
      const h = (plotH * v) / max
      root.append(svg('rect', {
        x: (x(i) - barW / 2).toFixed(2), y: (PAD.top + plotH - base - h).toFixed(2),
        width: barW.toFixed(2), height: h.toFixed(2), class: `bar s${k}${options.partial === true && i === ts.length - 1 ? ' partial' : ''}`,
      }))
      base += h
    })
  })
  container.replaceChildren(root)
  const format = options.format ?? formatCompact
  readable(container, root, size, label, {
    x, y: () => null, count: ts.length,
    describe: (i) => ({
      heading: `${bucketLabel(ts[i]!, step)}${options.partial === true && i === ts.length - 1 ? ' (so far)' : ''}: ${format(totals[i]!)}`,
      lines: stacks.filter((st) => (st.values[i] ?? 0) > 0).map((st) => `${st.name}: ${format(st.values[i]!)}`),
    }),
  })
}
