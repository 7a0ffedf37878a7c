import { ConflictError, ValidationError } from '../errors.ts'
import { canonicalPhone, isE164 } from '../identity/phone.ts'
import { CHANGE_EVENT_ID, PATTERN_WORDS, RFC3339_DATE_TIME } from '../contract/text.ts'
import { parseInstant } from '../stats/time.ts'
import { CHANGE_KINDS, type ChangeKind } from './latest-change.ts'

/** One change as stored in sim_changes (src/swaps/migrations.ts), before it is recorded. */
export interface ChangeRecord {
  eventId: string
  /** `+` and digits. */
  phone: string
  kind: ChangeKind
  /** Epoch ms. */
  changedAt: number
  approvalNumber: string | null
  /**
   * It happened before the monitored period: only the line is recorded (that it exists), not the
   * change, which the operator may no longer keep and KNS may not answer about.
   */
  outsidePeriod?: boolean
}

/** A change this request stored (not a duplicate): what listeners are told of. */
export interface RecordedChange extends ChangeRecord {
  recordedBy: string
  recordedAt: number
}

/** How far ahead of our clock a report may be: the operator's clock is not ours. */
export const CLOCK_SKEW_MS = 5 * 60_000
const DAY_MS = 86_400_000

/**
 * An item of a batch refused: names its position and field, so that an API caller (`changes.3.kind`)
 * and the file import (its line) can both say which. Nothing of its batch is stored.
 */
export class ChangeRejected extends ValidationError {
  readonly index: number
  readonly reason: string
  constructor(index: number, name: string, reason: string) {
    super(`body: changes.${index}.${name} ${reason}`, { field: `changes.${index}.${name}` })
    this.index = index
    this.reason = `${name} ${reason}`
  }
}

/** The same eventId with other content than the one stored (or given earlier in the batch). */
export class ChangeConflict extends ConflictError {
  readonly index: number
  readonly reason: string
  constructor(index: number, eventId: string, earlier: 'stored' | 'batch') {
    const reason = `eventId ${eventId} is ${earlier === 'stored' ? 'already recorded' : 'given earlier in this batch'} with other content ` +
      '(phoneNumber, kind, changedAt or approvalNumber): an event ID names one change'
    super(`changes.${index}: ${reason}`, { field: `changes.${index}.eventId` })
    this.index = index
    this.reason = reason
  }
}

const EVENT_ID = new RegExp(CHANGE_EVENT_ID)
const DATE_TIME = new RegExp(RFC3339_DATE_TIME)
const APPROVAL_NUMBER = /^[0-9a-f]{24}$/

export interface ParseOptions { now: number; monitoredDays: number }

/**
 * One reported change checked field by field, as the route's schema and beyond it: the instant
 * not ahead of our clock (past CLOCK_SKEW_MS); one older than the monitored period is marked
 * `outsidePeriod` (its line is recorded, not the change: a record pruned at once could never be
 * answered, and the operator may not keep it).
 */
export function parseChange(raw: unknown, index: number, { now, monitoredDays }: ParseOptions): ChangeRecord {
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) throw new ChangeRejected(index, 'item', 'must be an object')
  const item = raw as Record<string, unknown>
  const text = (name: string): string => {
    const value = item[name]
    if (value === undefined || value === null || value === '') throw new ChangeRejected(index, name, 'is required')
    if (typeof value !== 'string') throw new ChangeRejected(index, name, 'must be a string')
    return value
  }
  const eventId = text('eventId')
  if (!EVENT_ID.test(eventId)) throw new ChangeRejected(index, 'eventId', PATTERN_WORDS[CHANGE_EVENT_ID]!)
  const phoneNumber = text('phoneNumber')
  if (!isE164(phoneNumber)) throw new ChangeRejected(index, 'phoneNumber', 'must be an E.164 number: + and 6-15 digits, the first not 0')
  const kind = text('kind')
  if (!(CHANGE_KINDS as readonly string[]).includes(kind)) throw new ChangeRejected(index, 'kind', `must be one of ${CHANGE_KINDS.join(', ')}`)
  const changedAt = instant(text('changedAt'), index)
  if (changedAt > now + CLOCK_SKEW_MS) throw new ChangeRejected(index, 'changedAt', `is in the future (more than ${CLOCK_SKEW_MS / 60_000} minutes ahead of the server's clock)`)
  let approvalNumber: string | null = null
  if (item.approvalNumber !== undefined && item.approvalNumber !== null && item.approvalNumber !== '') {
    if (typeof item.approvalNumber !== 'string' || !APPROVAL_NUMBER.test(item.approvalNumber)) {
      throw new ChangeRejected(index, 'approvalNumber', 'must be an approval number: 24 lowercase hex characters')
    }
    approvalNumber = item.approvalNumber
  }
  const outsidePeriod = changedAt < now - monitoredDays * DAY_MS
  return { eventId, phone: canonicalPhone(phoneNumber), kind: kind as ChangeKind, changedAt, approvalNumber, ...(outsidePeriod ? { outsidePeriod } : {}) }
}

function instant(value: string, index: number): number {
  if (!DATE_TIME.test(value)) throw new ChangeRejected(index, 'changedAt', PATTERN_WORDS[RFC3339_DATE_TIME]!)
  try {
    return parseInstant(value, 'changedAt')
  } catch {
    // The shape was right: a day or an hour that does not exist (2026-02-30, 25:00).
    throw new ChangeRejected(index, 'changedAt', 'is not a real date and time')
  }
}

/** Do two reports of one eventId say the same thing (the instant compared, not how it was written)? */
export function sameChange(a: ChangeRecord, b: ChangeRecord): boolean {
  return a.phone === b.phone && a.kind === b.kind && a.changedAt === b.changedAt && a.approvalNumber === b.approvalNumber
}
