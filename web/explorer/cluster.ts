/**
 * Screen-space clustering of map markers (pure: no DOM). Points closer than `distance` to a
 * cluster's seed join it; seeds are therefore at least `distance` apart, so targets of that
 * diameter never overlap. A grid of `distance`-sized cells keeps it linear in the points.
 */

export interface Point<T> { x: number; y: number; item: T }

export interface Cluster<T> {
  /** Where it is drawn: its seed's position (view units). */
  x: number
  y: number
  items: T[]
  /** Its points' positions before the zoom (map units): how far apart they really are. */
  origins: { x: number; y: number }[]
}

export function clusterNodes<T>(points: (Point<T> & { origin: { x: number; y: number } })[], distance: number): Cluster<T>[] {
  const clusters: Cluster<T>[] = []
  const grid = new Map<string, Cluster<T>[]>()
  const cell = (v: number) => Math.floor(v / distance)
  for (const p of points) {
    const cx = cell(p.x)
    const cy = cell(p.y)
    let home: Cluster<T> | undefined
    let best = Infinity
    for (let dx = -1; dx <= 1; dx++) {
      for (let dy = -1; dy <= 1; dy++) {
        for (const c of grid.get(`${cx + dx},${cy + dy}`) ?? []) {
          const d = Math.hypot(c.x - p.x, c.y - p.y)
          if (d < distance && d < best) { best = d; home = c }
        }
      }
    }
    if (home === undefined) {
      home = { x: p.x, y: p.y, items: [], origins: [] }
      clusters.push(home)
      const key = `${cx},${cy}`
      grid.set(key, [...(grid.get(key) ?? []), home])
    }
    home.items.push(p.item)
    home.origins.push(p.origin)
  }
  return clusters
}

/** The largest distance between a cluster's points before the zoom (0: they share one spot). */
export function spreadOf(origins: { x: number; y: number }[]): number {
  let max = 0
  for (const a of origins) for (const b of origins) max = Math.max(max, Math.hypot(a.x - b.x, a.y - b.y))
  return max
}
