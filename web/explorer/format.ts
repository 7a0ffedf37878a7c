/** Number formatting and periods of the explorer (pure: no DOM). */

const HOUR = 3_600_000
const DAY = 24 * HOUR

const integer = new Intl.NumberFormat('en-US', { maximumFractionDigits: 0 })
const twoDecimals = new Intl.NumberFormat('en-US', { minimumFractionDigits: 2, maximumFractionDigits: 2 })
const compact = new Intl.NumberFormat('en-US', { notation: 'compact', maximumFractionDigits: 1 })

export const formatInt = (n: number): string => integer.format(n)
/** GB and MB figures: two decimals, grouped. */
export const formatDecimal = (n: number): string => twoDecimals.format(n)
/** Axis labels. */
export const formatCompact = (n: number): string => compact.format(n)

/** Data volumes (decimal units, as the API's: MB = 10^6 bytes): one unit for a set of values, the largest that keeps them >= 1. */
const BYTE_UNITS = [['MB', 1], ['GB', 1e3], ['TB', 1e6], ['PB', 1e9]] as const
export type ByteUnit = (typeof BYTE_UNITS)[number][0]

export function byteUnitFor(maxMB: number): { unit: ByteUnit; perMB: number } {
  let chosen: (typeof BYTE_UNITS)[number] = BYTE_UNITS[0]
  // 999.999 MB reads "1.00 GB", not "1,000.00 MB": a unit is taken from where its value rounds to 1.00.
  for (const u of BYTE_UNITS) if (maxMB >= u[1] * 0.999995) chosen = u
  return { unit: chosen[0], perMB: chosen[1] }
}

/** A data volume given in MB, in the unit that reads best: "1.53 TB", not "1,529,685.92 MB". */
export function formatData(mb: number): string {
  const { unit, perMB } = byteUnitFor(mb)
  const value = mb / perMB
  return `${twoDecimals.format(value)} ${unit}`
}

export type Preset = '24h' | '7d' | '30d' | '1y'
export const PRESETS: Record<Preset, number> = { '24h': DAY, '7d': 7 * DAY, '30d': 30 * DAY, '1y': 365 * DAY }

export interface Period { start: string; end: string }

/** A preset ending now. */
export function presetPeriod(preset: Preset, now: number): Period {
  return { start: new Date(now - PRESETS[preset]).toISOString(), end: new Date(now).toISOString() }
}

/**
 * A custom period from two `<input type="date">` values (YYYY-MM-DD), both days included, in UTC.
 * Returns an error text instead when the dates cannot make a period.
 */
export function customPeriod(from: string, to: string, now: number): Period | string {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(from) || !/^\d{4}-\d{2}-\d{2}$/.test(to)) return 'Choose both dates.'
  const start = Date.parse(`${from}T00:00:00Z`)
  const end = Date.parse(`${to}T00:00:00Z`) + DAY
  if (Number.isNaN(start) || Number.isNaN(end)) return 'Choose valid dates.'
  if (start >= end) return 'The start must be on or before the end.'
  if (start > now) return 'The start cannot be in the future.'
  if (end - start > 5 * 366 * DAY) return 'A period can be at most 5 years long.'
  return { start: new Date(start).toISOString(), end: new Date(Math.min(end, now)).toISOString() }
}

const dayMonthYear = (ms: number) => new Date(ms).toLocaleDateString('en-GB', { day: 'numeric', month: 'short', year: 'numeric', timeZone: 'UTC' })
const hourOf = (ms: number) => `${String(new Date(ms).getUTCHours()).padStart(2, '0')}:00`

/**
 * The period a page shows, as people read it: the year on both ends, the last day included
 * (a period ending at 00:00 ends the day before), "now" for a period ending now, the time only
 * where the buckets are hourly. Never a date after the period.
 */
export function describePeriod(period: Period, stepMs: number, now: number): string {
  const start = Date.parse(period.start)
  const end = Date.parse(period.end)
  const hourly = stepMs < DAY
  const from = hourly ? `${dayMonthYear(start)} ${hourOf(start)}` : dayMonthYear(start)
  let to: string
  if (Math.abs(now - end) < 60_000) to = 'now'
  else if (!hourly && end % DAY === 0) to = dayMonthYear(end - DAY)
  else to = hourly || end % DAY !== 0 ? `${dayMonthYear(end)} ${hourOf(end)}` : dayMonthYear(end)
  const buckets = hourly ? 'hourly' : stepMs === DAY ? 'daily' : 'weekly'
  return `${from} – ${to} (UTC, ${buckets})`
}

/** Label of a bucket start for the width of the series (hourly series show the time). */
export function bucketLabel(ms: number, stepMs: number): string {
  const d = new Date(ms)
  const date = d.toLocaleDateString('en-GB', { day: 'numeric', month: 'short', timeZone: 'UTC' })
  if (stepMs < DAY) return `${date} ${String(d.getUTCHours()).padStart(2, '0')}:00`
  if (stepMs > 7 * DAY || ms < Date.UTC(new Date().getUTCFullYear(), 0, 1)) return `${date} ${d.getUTCFullYear()}`
  return date
}

const regionNames = (() => {
  try { return new Intl.DisplayNames(['en'], { type: 'region' }) } catch { return null }
})()

/** Country name of an ISO 3166-1 alpha-2 code; ZZ = numbers of no single country. */
export function countryName(code: string): string {
  if (code === 'ZZ') return 'Non-geographic'
  try { return regionNames?.of(code) ?? code } catch { return code }
}

/**
 * A period total against the one of the same length just before it: "▲ 12%", "▼ 3%", "no change",
 * "new" (nothing before), or nothing at all when both are zero.
 */
export function formatChange(current: number, previous: number): string {
  if (current === 0 && previous === 0) return ''
  if (previous === 0) return 'new'
  const pct = ((current - previous) / previous) * 100
  if (Math.abs(pct) < 0.5) return 'no change'
  const size = Math.abs(pct)
  return `${pct > 0 ? '▲' : '▼'} ${size >= 10 ? integer.format(size) : String(Math.round(size * 10) / 10)}%`
}

/** "the 30 days before", "the 24 hours before": what a change is measured against. */
export function previousLabel(lengthMs: number): string {
  if (lengthMs < 2 * DAY) return `the ${Math.round(lengthMs / HOUR)} hours before`
  return `the ${Math.round(lengthMs / DAY)} days before`
}

/** The period of the same length that ends where `period` starts. */
export function previousPeriod(period: Period): Period {
  const start = Date.parse(period.start)
  const length = Date.parse(period.end) - start
  return { start: new Date(start - length).toISOString(), end: period.start }
}

/** Room per x-axis label of a chart, in px: how many labels fit. */
const LABEL_ROOM = 96

/** Indices of the buckets that get an x-axis label: evenly spread, as many as fit, first and last included. */
export function tickIndices(count: number, plotWidth: number): number[] {
  if (count <= 0) return []
  const fit = Math.max(2, Math.min(count, Math.floor(plotWidth / LABEL_ROOM) + 1))
  if (count === 1) return [0]
  const ticks = new Set<number>()
  for (let k = 0; k < fit; k++) ticks.add(Math.round((k * (count - 1)) / (fit - 1)))
  return [...ticks]
}
