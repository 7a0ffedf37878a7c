import { ValidationError } from '../errors.ts'

export const HOUR = 3_600_000
export const DAY = 24 * HOUR
export const WEEK = 7 * DAY
export type Width = typeof HOUR | typeof DAY | typeof WEEK
export const WIDTHS: readonly Width[] = [HOUR, DAY, WEEK]

/** 1970-01-01 was a Thursday: weeks start on Monday 00:00 UTC, 4 days after the epoch. */
const WEEK_OFFSET = 4 * DAY

/** Start of the UTC bucket of `width` that contains `ms` (ms >= 0). */
export function bucketStart(ms: number, width: Width): number {
  const offset = width === WEEK ? WEEK_OFFSET : 0
  return Math.floor((ms - offset) / width) * width + offset
}

export function bucketCeil(ms: number, width: Width): number {
  const start = bucketStart(ms, width)
  return start === ms ? ms : start + width
}

/** SQL for bucketStart over a BIGINT column (integer division truncates; values are > 0). */
export function bucketSql(column: string, width: Width): string {
  return width === WEEK ? `((${column} - ${WEEK_OFFSET}) / ${WEEK}) * ${WEEK} + ${WEEK_OFFSET}` : `(${column} / ${width}) * ${width}`
}

export const WIDTH_NAMES: Record<Width, string> = { [HOUR]: 'hour', [DAY]: 'day', [WEEK]: 'week' }

/** Longest period per width, and the longest period of all. */
const HOUR_PERIOD_MAX = 3 * DAY
const DAY_PERIOD_MAX = 180 * DAY
const MAX_YEARS = 5

/**
 * How many buckets of a width a period can span once widened to whole buckets (hour: 3 days
 * -> 73, day: 180 days -> 181, week: 5 years -> 262), plus one. Previous activity further back
 * than this is stored as "long ago": no period of that width can start between the two.
 */
export const REACH: Record<Width, number> = { [HOUR]: 74, [DAY]: 182, [WEEK]: 264 }

/** Earliest session start accepted (2000-01-01): rejects seconds-for-milliseconds mistakes. */
export const EARLIEST_MS = Date.UTC(2000, 0, 1)

export interface Period {
  /** First bucket start (inclusive). */
  start: number
  /** End of the last bucket (exclusive). */
  end: number
  width: Width
}

/** ISO 8601 date-time with a zone (Z or +hh:mm), e.g. 2024-03-01T00:00:00+05:30. */
const DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,9})?)?(?:[Zz]|[+-](\d{2}):?(\d{2}))$/

/** Date.parse rolls 2024-02-30 over into March: check the calendar fields themselves. */
function validFields(match: RegExpExecArray): boolean {
  const [, y, mo, d, h, mi, s = '0', oh = '0', om = '0'] = match.map((v) => v ?? undefined)
  const month = Number(mo)
  const daysInMonth = new Date(Date.UTC(Number(y), month, 0)).getUTCDate()
  return month >= 1 && month <= 12 && Number(d) >= 1 && Number(d) <= daysInMonth && Number(h) <= 23 && Number(mi) <= 59 &&
    Number(s) <= 59 && Number(oh) <= 23 && Number(om) <= 59
}

export function parseInstant(value: string, field: string): number {
  const match = DATE_TIME.exec(value)
  const ms = match !== null && validFields(match) ? Date.parse(value.replace(' ', 'T')) : Number.NaN
  if (!Number.isFinite(ms)) {
    throw new ValidationError(`body: ${field} must be an ISO 8601 date-time with a time zone, e.g. 2024-01-01T00:00:00Z`, { field })
  }
  return ms
}

function addYears(ms: number, years: number): number {
  const d = new Date(ms)
  d.setUTCFullYear(d.getUTCFullYear() + years)
  return d.getTime()
}

export function widthFor(lengthMs: number): Width {
  if (lengthMs <= HOUR_PERIOD_MAX) return HOUR
  if (lengthMs <= DAY_PERIOD_MAX) return DAY
  return WEEK
}

/**
 * The requested [start, end) as the service answers it: an end in the future becomes now;
 * the bucket width follows the length (hour up to 3 days, day up to 180 days, week beyond);
 * then the period widens to whole UTC buckets, so that every bucket of the series is
 * complete and the period totals are exactly the sums of the series.
 */
export function normalizePeriod(startText: string, endText: string, now: number): Period {
  const start = parseInstant(startText, 'start')
  const requestedEnd = parseInstant(endText, 'end')
  if (start >= requestedEnd) throw new ValidationError('body: start must be before end', { field: 'start' })
  const end = Math.min(requestedEnd, now)
  if (start >= end) throw new ValidationError('body: start must not be in the future', { field: 'start' })
  if (end > addYears(start, MAX_YEARS)) throw new ValidationError(`body: the period must not exceed ${MAX_YEARS} years`, { field: 'end' })
  if (start < 0) throw new ValidationError('body: start must not be before 1970', { field: 'start' })
  const width = widthFor(end - start)
  return { start: bucketStart(start, width), end: bucketCeil(end, width), width }
}

/** Bucket starts of a period, in order. */
export function bucketsOf(period: Period): number[] {
  const out: number[] = []
  for (let t = period.start; t < period.end; t += period.width) out.push(t)
  return out
}
