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
