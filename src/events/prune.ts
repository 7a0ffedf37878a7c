import type { Database } from '../db/engine.ts'

/** What a prune removed, per table. */
export interface PruneCounts { deliveries: number; events: number; ledgerEvents: number; rejections: number }

/** Rows per statement: a prune of a year's backlog never holds a long transaction or lock. */
const BATCH = 5000

/**
 * Retention (RETENTION_DAYS; `kns prune`, and the server once an hour): rows older than
 * `olderThanMs` that nothing needs any more are deleted, in batches.
 * - webhook deliveries that are finished (delivered or given up); pending ones never;
 * - events with no delivery left (so no pending delivery loses its body); an event pruned can no
 *   longer be replayed, which is what retention means;
 * - the embedded ledger's ApprovalEvent feed rows the ledger watcher has read past (its cursor
 *   is a feed sequence number: rows at or before it are never read again);
 * - the watcher's record of refused events.
 * Approvals and the ledger's own transactions are not touched (verify_transaction reads them).
 */
export async function prune(db: Database, olderThanMs: number, options: { embeddedFeedSource?: string } = {}, now = Date.now()): Promise<PruneCounts> {
  const before = now - olderThanMs
  const counts: PruneCounts = { deliveries: 0, events: 0, ledgerEvents: 0, rejections: 0 }
  const inBatches = async (statement: string, params: unknown[]): Promise<number> => {
    let total = 0
    for (;;) {
      const removed = await db.run(statement, params)
      total += removed
      if (removed < BATCH) return total
    }
  }
  counts.deliveries = await inBatches(`DELETE FROM webhook_deliveries WHERE id IN (
    SELECT id FROM webhook_deliveries WHERE state <> 'pending' AND finished_at < $1 LIMIT ${BATCH})`, [before])
  counts.events = await inBatches(`DELETE FROM approval_events WHERE event_id IN (
    SELECT e.event_id FROM approval_events e WHERE e.created_at < $1
      AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.event_id = e.event_id) LIMIT ${BATCH})`, [before])
  // The embedded ledger's feed: its cursor is the row's sequence number.
  const read = options.embeddedFeedSource === undefined ? undefined
    : await db.get<{ cursor: string }>('SELECT cursor FROM ledger_watch_cursors WHERE source = $1', [options.embeddedFeedSource])
  const readUpTo = read === undefined ? 0 : Number(read.cursor)
  if (Number.isSafeInteger(readUpTo) && readUpTo > 0) {
    counts.ledgerEvents = await inBatches(`DELETE FROM ledger_events WHERE seq IN (
      SELECT seq FROM ledger_events WHERE seq <= $1 AND created_at < $2 LIMIT ${BATCH})`, [readUpTo, before])
  }
  counts.rejections = await inBatches(`DELETE FROM ledger_watch_rejections WHERE (source, digest, event_index) IN (
    SELECT source, digest, event_index FROM ledger_watch_rejections WHERE created_at < $1 LIMIT ${BATCH})`, [before])
  return counts
}
