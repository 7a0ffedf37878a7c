/**
 * A client's activity, reduced to the UTC hours in which it started sessions, and the
 * "points" that activity contributes to the rollups: for every width, one point per bucket
 * in which the client was active, labelled with the bucket of its previous activity.
 * Pure functions: ingestion and tests use them alike.
 */
import { bucketStart, HOUR, REACH, WEEK, WIDTHS, type Width } from '../time.ts'

/** prev_ms of a client's first bucket ever. */
export const FIRST_EVER = -1
/** prev_ms when the previous activity lies beyond REACH buckets. */
export const LONG_AGO = -2

export interface Point {
  width: Width
  bucket: number
  prev: number
}

/** Hour index (hours since the epoch) of an instant. */
export function hourOf(ms: number): number {
  return Math.floor(ms / HOUR)
}

/** The 7 daily 24-bit masks of a week row -> sorted hour indexes. */
export function hoursOfWeek(weekMs: number, masks: readonly number[]): number[] {
  const first = weekMs / HOUR
  const hours: number[] = []
  for (let day = 0; day < 7; day++) {
    const mask = masks[day]!
    if (mask === 0) continue
    for (let h = 0; h < 24; h++) if (mask & (1 << h)) hours.push(first + day * 24 + h)
  }
  return hours
}

/** Sorted hour indexes -> week rows (week start -> 7 masks). */
export function weeksOfHours(hours: Iterable<number>): Map<number, number[]> {
  const weeks = new Map<number, number[]>()
  for (const hour of hours) {
    const ms = hour * HOUR
    const week = bucketStart(ms, WEEK)
    let masks = weeks.get(week)
    if (masks === undefined) weeks.set(week, masks = [0, 0, 0, 0, 0, 0, 0])
    const offset = (ms - week) / HOUR
    const day = Math.floor(offset / 24)
    masks[day] = masks[day]! | (1 << (offset % 24))
  }
  return weeks
}

/**
 * Points of activity in `hours` (sorted, distinct), given the last active hour before them
 * (null when there was none). Calls `emit` for every point of every width.
 */
export function forEachPoint(prevHour: number | null, hours: ArrayLike<number>, emit: (p: Point) => void): void {
  for (const width of WIDTHS) {
    let last = prevHour === null ? null : bucketStart(prevHour * HOUR, width)
    const reach = REACH[width]! * width
    for (let h = 0; h < hours.length; h++) {
      const bucket = bucketStart(hours[h]! * HOUR, width)
      if (bucket === last) continue
      const prev = last === null ? FIRST_EVER : bucket - last > reach ? LONG_AGO : last
      emit({ width, bucket, prev })
      last = bucket
    }
  }
}

/**
 * Multiset of points as counts. Keys pack (width, bucket hour, previous bucket hour) into one
 * number (43 bits): Map lookups on numbers are far cheaper than on composed strings.
 */
export type PointCounts = Map<number, number>

const HOURS_BITS = 2 ** 20 // hour indexes up to 2089
const PREV_BITS = 2 ** 22

export function pointKey(p: Point): number {
  const prev = p.prev === FIRST_EVER ? 0 : p.prev === LONG_AGO ? 1 : p.prev / HOUR + 2
  return (WIDTHS.indexOf(p.width) * HOURS_BITS + p.bucket / HOUR) * PREV_BITS + prev
}

export function parsePointKey(key: number): Point {
  const prevCode = key % PREV_BITS
  const rest = (key - prevCode) / PREV_BITS
  const bucketHour = rest % HOURS_BITS
  const width = WIDTHS[(rest - bucketHour) / HOURS_BITS]!
  const prev = prevCode === 0 ? FIRST_EVER : prevCode === 1 ? LONG_AGO : (prevCode - 2) * HOUR
  return { width, bucket: bucketHour * HOUR, prev }
}

export function addPoints(counts: PointCounts, prevHour: number | null, hours: readonly number[], sign: 1 | -1): void {
  forEachPoint(prevHour, hours, (p) => {
    const key = pointKey(p)
    counts.set(key, (counts.get(key) ?? 0) + sign)
  })
}

/**
 * Adds the points of `after` and removes those of `before` (after = before plus some hours,
 * both sorted, starting from the same first hour or with no activity before them). Their
 * common prefix gives the same points in both, so only the tails are computed.
 */
export function addPointChange(counts: PointCounts, before: readonly number[], after: readonly number[]): void {
  let p = 0
  while (p < before.length && before[p] === after[p]) p++
  const prevHour = p === 0 ? null : after[p - 1]!
  addPoints(counts, prevHour, after.slice(p), 1)
  addPoints(counts, prevHour, before.slice(p), -1)
}

/** Sorted union of two sorted hour lists, without duplicates. */
export function mergeHours(a: readonly number[], b: readonly number[]): number[] {
  const out: number[] = []
  let i = 0
  let j = 0
  while (i < a.length || j < b.length) {
    const next = j >= b.length || (i < a.length && a[i]! <= b[j]!) ? a[i++]! : b[j++]!
    if (out.length === 0 || out[out.length - 1] !== next) out.push(next)
  }
  return out
}
