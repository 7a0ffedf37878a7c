import type { Database } from '../db/engine.ts'

/** Rows per statement: a first prune of a long backlog holds no long transaction or lock. */
const BATCH = 5000

/**
 * The monitored period (SIM_SWAP_MONITORED_DAYS) applied: change records older than it are
 * deleted, in batches, oldest first (the sim_changes_changed index). What the operator may no
 * longer answer from is not kept. Returns how many went.
 */
export async function pruneChanges(db: Database, monitoredDays: number, now = Date.now()): Promise<number> {
  const before = now - monitoredDays * 86_400_000
  let total = 0
  for (;;) {
    const removed = await db.run(`DELETE FROM sim_changes WHERE event_id IN (
      SELECT event_id FROM sim_changes WHERE changed_at < $1 ORDER BY changed_at LIMIT ${BATCH})`, [before])
    total += removed
    if (removed < BATCH) return total
  }
}
