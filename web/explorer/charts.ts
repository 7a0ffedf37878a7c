/**
 * Small hand-written SVG charts (no chart library): an area chart of one series and a stacked
 * bar chart of several. Drawn in a fixed viewBox and scaled by CSS, so they fit any width.
 */
import { bucketLabel, formatCompact } from './format.ts'

const SVG = 'http://www.w3.org/2000/svg'
export interface Size { w: number; h: number }
const SMALL: Size = { w: 320, h: 150 }
const PAD = { left: 38, right: 8, top: 10, bottom: 22 }

export function svg<K extends keyof SVGElementTagNameMap>(name: K, attrs: Record<string, string | number> = {}): SVGElementTagNameMap[K] {
  const el = document.createElementNS(SVG, name)
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v))
  return el
}

function niceMax(max: number): number {
  if (max <= 0) return 1
  const p = 10 ** Math.floor(Math.log10(max))
  for (const m of [1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10]) if (m * p >= max) return m * p
  return 10 * p
}

function frame(root: SVGSVGElement, { w: W, h: H }: Size, max: number, first: number, last: number, step: number): void {
  const plotH = H - PAD.top - PAD.bottom
  for (const f of [0, 0.5, 1]) {
    const y = PAD.top + plotH * (1 - f)
    root.append(svg('line', { x1: PAD.left, x2: W - PAD.right, y1: y, y2: y, class: 'grid' }))
    const label = svg('text', { x: PAD.left - 4, y: y + 3, class: 'axis', 'text-anchor': 'end' })
    label.textContent = formatCompact(max * f)
    root.append(label)
  }
  const a = svg('text', { x: PAD.left, y: H - 6, class: 'axis', 'text-anchor': 'start' })
  a.textContent = bucketLabel(first, step)
  const b = svg('text', { x: W - PAD.right, y: H - 6, class: 'axis', 'text-anchor': 'end' })
  b.textContent = bucketLabel(last, step)
  root.append(a, b)
}

function emptyNote(container: HTMLElement, text: string): void {
  const p = document.createElement('p')
  p.className = 'chart-empty'
  p.textContent = text
  container.replaceChildren(p)
}

export interface ChartOptions {
  /**
   * The last bucket is not finished (it reaches past the period's end, e.g. now): drawn dashed
   * and marked, so an unfinished hour or day does not read as the network going down.
   */
  partial?: boolean
}

/** Area chart of `[[ms, value], ...]`; "No data in this period" when every value is 0. */
export function areaChart(container: HTMLElement, series: number[][], label: string, unit: string, size: Size = SMALL, options: ChartOptions = {}): void {
  const { w: W, h: H } = size
  const points = series.filter((p): p is [number, number] => p.length === 2)
  if (points.length === 0 || points.every(([, v]) => v === 0)) return emptyNote(container, 'No data in this period')
  const max = niceMax(Math.max(...points.map(([, v]) => v)))
  const step = points.length > 1 ? points[1]![0] - points[0]![0] : 3_600_000
  const plotW = W - PAD.left - PAD.right
  const plotH = H - PAD.top - PAD.bottom
  const x = (i: number) => PAD.left + (points.length === 1 ? plotW / 2 : (plotW * i) / (points.length - 1))
  const y = (v: number) => PAD.top + plotH * (1 - v / max)
  const root = svg('svg', { viewBox: `0 0 ${W} ${H}`, role: 'img', class: 'chart' })
  const title = svg('title')
  const total = points.reduce((s, [, v]) => s + v, 0)
  title.textContent = `${label}: ${points.length} buckets, peak ${formatCompact(Math.max(...points.map(([, v]) => v)))} ${unit}, total ${formatCompact(total)} ${unit}`
  root.append(title)
  frame(root, size, max, points[0]![0], points[points.length - 1]![0], step)
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
    root.append(segment, svg('circle', { cx: x(i).toFixed(1), cy: y(points[i]![1]).toFixed(1), r: 2.5, class: 'partial-point' }))
    title.textContent += '; the last bucket is not finished yet'
  }
  container.replaceChildren(root)
}

/** Stacked bars: one bar per bucket of `ts`, a segment per entry of `stacks` (colour class by index). */
export function stackedBars(container: HTMLElement, ts: number[], stacks: { key: string; values: number[] }[], label: string, size: Size = SMALL, options: ChartOptions = {}): void {
  const { w: W, h: H } = size
  const totals = ts.map((_, i) => stacks.reduce((s, st) => s + (st.values[i] ?? 0), 0))
  if (ts.length === 0 || totals.every((t) => t === 0)) return emptyNote(container, 'No sign-ups in this period')
  const max = niceMax(Math.max(...totals))
  const step = ts.length > 1 ? ts[1]! - ts[0]! : 3_600_000
  const plotW = W - PAD.left - PAD.right
  const plotH = H - PAD.top - PAD.bottom
  const slot = plotW / ts.length
  const barW = Math.max(0.5, slot * 0.8)
  const root = svg('svg', { viewBox: `0 0 ${W} ${H}`, role: 'img', class: 'chart' })
  const title = svg('title')
  title.textContent = `${label}: ${totals.reduce((a, b) => a + b, 0)} in ${ts.length} buckets`
  root.append(title)
  frame(root, size, max, ts[0]!, ts[ts.length - 1]!, step)
  ts.forEach((_, i) => {
    let base = 0
    stacks.forEach((st, k) => {
      const v = st.values[i] ?? 0
      if (v === 0) return
      const h = (plotH * v) / max
      root.append(svg('rect', {
        x: (PAD.left + slot * i + (slot - barW) / 2).toFixed(2), y: (PAD.top + plotH - base - h).toFixed(2),
        width: barW.toFixed(2), height: h.toFixed(2), class: `bar s${k}${options.partial === true && i === ts.length - 1 ? ' partial' : ''}`,
      }))
      base += h
    })
  })
  container.replaceChildren(root)
}
