import type { Database } from '../../db/engine.ts'

/** Rows per statement, as the other prunes (src/events/prune.ts). */
const BATCH = 1000

/**
 * Retention for subscriptions (RETENTION_DAYS: `kns prune`, and servers hourly): one that
 * ended (or was deleted) more than `olderThanMs` ago is removed with its delivery endpoint,
 * once none of its deliveries is left (the events prune removes finished ones first; a pending
 * one keeps it). Live subscriptions are never touched. Returns how many were removed.
 */
export async function pruneSubscriptions(db: Database, olderThanMs: number, now = Date.now()): Promise<number> {
  const before = now - olderThanMs
  let total = 0
  for (;;) {
    const removed = await db.transaction(async (tx) => {
      const gone = await tx.all<{ id: string }>(`SELECT s.id FROM camara_subscriptions s WHERE s.status <> 'ACTIVE' AND s.ended_at < $1
        AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.subscription_id = s.id) ORDER BY s.ended_at LIMIT ${BATCH}`, [before])
      for (const { id } of gone) {
        await tx.run('DELETE FROM camara_subscriptions WHERE id = $1', [id])
        await tx.run('DELETE FROM webhook_subscriptions WHERE id = $1', [id])
      }
      return gone.length
    })
    total += removed
    if (removed < BATCH) return total
  }
}
