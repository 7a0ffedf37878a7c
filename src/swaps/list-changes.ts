import type { Executor } from '../db/engine.ts'
import type { ChangeKind } from './latest-change.ts'
import type { RecordedChange } from './parse-change.ts'

/** A number's kept change records, newest first (at most `limit`). `phone`: `+` and digits. */
export async function listChanges(db: Executor, phone: string, limit: number): Promise<RecordedChange[]> {
  const rows = await db.all<{ event_id: string; phone: string; kind: string; changed_at: number | string; approval_number: string | null; recorded_by: string; recorded_at: number | string }>(
    `SELECT event_id, phone, kind, changed_at, approval_number, recorded_by, recorded_at FROM sim_changes
     WHERE phone = $1 ORDER BY changed_at DESC, event_id LIMIT $2`, [phone, limit])
  return rows.map((r) => ({
    eventId: r.event_id, phone: r.phone, kind: r.kind as ChangeKind, changedAt: Number(r.changed_at), approvalNumber: r.approval_number,
    recordedBy: r.recorded_by, recordedAt: Number(r.recorded_at),
  }))
}
