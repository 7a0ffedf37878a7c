import type { Database, Executor } from '../db/engine.ts'
import { ValidationError } from '../errors.ts'
import { MAX_CHANGES_PER_BATCH } from '../contract/swaps-schemas.ts'
import { insertRows } from '../stats/sql-rows.ts'
import { ChangeConflict, ChangeRejected, parseChange, sameChange, type ChangeRecord, type RecordedChange } from './parse-change.ts'

/**
 * Told of the changes a batch newly stored (never of duplicates), inside the batch's
 * transaction: what it writes (a subscription's event, say) commits with them or not at all.
 * A listener that throws refuses the whole batch.
 */
export type ChangeListener = (tx: Executor, recorded: readonly RecordedChange[]) => Promise<void>

export interface RecordOptions {
  /** Who reported it: `key:<API key id>`, `cli`. */
  recordedBy: string
  /** SIM_SWAP_MONITORED_DAYS. */
  monitoredDays: number
  now?: number
  listeners?: readonly ChangeListener[]
}

export interface RecordResult {
  recorded: number
  duplicates: number
  /** Changes older than the monitored period: their lines recorded, not the changes. */
  outsidePeriod: number
}

const COLUMNS = ['event_id', 'phone', 'kind', 'changed_at', 'approval_number', 'recorded_by', 'recorded_at'] as const

interface Indexed { change: ChangeRecord; index: number }

/**
 * Records a batch of reported SIM and device changes, all or none, idempotent by eventId: a
 * change stored before (or given twice) with the same content is a duplicate and changes
 * nothing; with other content it is a 409 naming it. Every item is checked before anything is
 * written (400 naming its index and field). Safe under concurrency on both engines: the insert
 * skips what another transaction stored first (ON CONFLICT DO NOTHING waits for it to commit on
 * PostgreSQL; SQLite runs one writer at a time), and what it skipped is then compared.
 */
export async function recordChanges(db: Database, changes: readonly unknown[], options: RecordOptions): Promise<RecordResult> {
  if (changes.length === 0) return { recorded: 0, duplicates: 0, outsidePeriod: 0 }
  if (changes.length > MAX_CHANGES_PER_BATCH) throw new ValidationError(`body: changes holds at most ${MAX_CHANGES_PER_BATCH} changes per request`, { field: 'changes' })
  const now = options.now ?? Date.now()
  const all = changes.map((raw, index) => parseChange(raw, index, { now, monitoredDays: options.monitoredDays }))
  const parsed = all.filter((change) => change.outsidePeriod !== true)
  const { unique, repeated } = oncePerEventId(parsed)
  return db.transaction(async (tx) => {
    await recordLines(tx, all, now)
    await checkApprovals(tx, unique, now)
    const rows = unique.map(({ change: c }) => [c.eventId, c.phone, c.kind, c.changedAt, c.approvalNumber, options.recordedBy, now])
    const { rows: inserted } = await insertRows<{ event_id: string }>(tx, 'sim_changes', COLUMNS, rows, 'ON CONFLICT (event_id) DO NOTHING RETURNING event_id')
    const stored = new Set(inserted.map((r) => r.event_id))
    await compareWithStored(tx, unique.filter(({ change }) => !stored.has(change.eventId)))
    const recorded = unique.filter(({ change }) => stored.has(change.eventId)).map(({ change }) => ({ ...change, recordedBy: options.recordedBy, recordedAt: now }))
    if (recorded.length > 0) for (const listener of options.listeners ?? []) await listener(tx, recorded)
    return { recorded: recorded.length, duplicates: repeated + unique.length - recorded.length, outsidePeriod: all.length - parsed.length }
  })
}

/** Every line the batch names is known from now on (in phone order: concurrent batches take their row locks alike). */
async function recordLines(tx: Executor, changes: readonly ChangeRecord[], now: number): Promise<void> {
  const phones = [...new Set(changes.map((c) => c.phone))].sort()
  await insertRows(tx, 'sim_lines', ['phone', 'known_since'], phones.map((phone) => [phone, now]), 'ON CONFLICT (phone) DO NOTHING')
}

/**
 * Each eventId once, sorted: two batches that share events then lock their rows in the same
 * order (PostgreSQL), so they wait for each other instead of deadlocking.
 */
function oncePerEventId(parsed: ChangeRecord[]): { unique: Indexed[]; repeated: number } {
  const first = new Map<string, Indexed>()
  let repeated = 0
  parsed.forEach((change, index) => {
    const earlier = first.get(change.eventId)
    if (earlier === undefined) first.set(change.eventId, { change, index })
    else if (sameChange(earlier.change, change)) repeated++
    else throw new ChangeConflict(index, change.eventId, 'batch')
  })
  return { unique: [...first.values()].sort((a, b) => (a.change.eventId < b.change.eventId ? -1 : a.change.eventId > b.change.eventId ? 1 : 0)), repeated }
}

/** The changes already stored (by another request, or earlier): each must say what its report says. */
async function compareWithStored(tx: Executor, skipped: Indexed[]): Promise<void> {
  if (skipped.length === 0) return
  const found = await tx.all<{ event_id: string; phone: string; kind: string; changed_at: number | string; approval_number: string | null }>(
    `SELECT event_id, phone, kind, changed_at, approval_number FROM sim_changes WHERE event_id IN (${skipped.map((_, i) => `$${i + 1}`).join(', ')})`,
    skipped.map(({ change }) => change.eventId))
  const byId = new Map(found.map((r) => [r.event_id, r]))
  for (const { change, index } of skipped) {
    const row = byId.get(change.eventId)
    // Skipped, then gone: the prune took it between the two statements (it had just aged out of
    // the monitored period). It was stored, so this report is a duplicate of it.
    if (row === undefined) continue
    const stored: ChangeRecord = { eventId: row.event_id, phone: row.phone, kind: row.kind as ChangeRecord['kind'], changedAt: Number(row.changed_at), approvalNumber: row.approval_number }
    if (!sameChange(stored, change)) throw new ChangeConflict(index, change.eventId, 'stored')
  }
}

/**
 * An approvalNumber must name an approved request for the same number: a change the owner
 * authorised in KNS. Approved is final, so reading it in the batch's transaction is enough.
 */
async function checkApprovals(tx: Executor, batch: Indexed[], now: number): Promise<void> {
  const named = batch.filter(({ change }) => change.approvalNumber !== null)
  if (named.length === 0) return
  const numbers = [...new Set(named.map(({ change }) => change.approvalNumber!))]
  const rows = await tx.all<{ approval_number: string; status: string; phone_number: string | null; expires_at: number | string }>(
    `SELECT approval_number, status, phone_number, expires_at FROM approvals WHERE approval_number IN (${numbers.map((_, i) => `$${i + 1}`).join(', ')})`, numbers)
  const byNumber = new Map(rows.map((r) => [r.approval_number, r]))
  for (const { change, index } of named.sort((a, b) => a.index - b.index)) {
    const approval = byNumber.get(change.approvalNumber!)
    if (approval === undefined) throw new ChangeRejected(index, 'approvalNumber', 'names no KNS approval')
    const status = approval.status === 'pending' && Number(approval.expires_at) <= now ? 'expired' : approval.status
    if (status !== 'approved') throw new ChangeRejected(index, 'approvalNumber', `names an approval that is ${status}, not approved`)
    // Its number is not said: the reporter may not learn which number another approval was for.
    if (approval.phone_number !== change.phone) throw new ChangeRejected(index, 'approvalNumber', 'names an approval for another number')
  }
}
