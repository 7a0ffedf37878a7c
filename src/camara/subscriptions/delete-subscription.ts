import type { Database } from '../../db/engine.ts'
import { CamaraError } from '../camara-error.ts'
import { endSubscription } from './end-subscription.ts'
import { findOwnSubscription } from './subscription.ts'

/**
 * `DELETE .../subscriptions/{id}`: the client's own (a three-legged caller: its number's)
 * subscription ends now with SUBSCRIPTION_DELETED, which the sink hears after anything queued
 * before. Another client's subscription is 404 like one that never was, and so is one deleted
 * already, even by a delete running at the same time. One that had ended already (expired) is
 * simply deleted (no second ending event).
 */
export async function deleteSubscription(db: Database, id: string, owner: { clientId: string; phone: string | null }, publicBaseUrl: string, now = Date.now()): Promise<void> {
  await db.transaction(async (tx) => {
    const found = await findOwnSubscription(tx, id, owner)
    if (found === null) throw new CamaraError(404, 'NOT_FOUND', 'The specified resource is not found.')
    if (found.status === 'ACTIVE' && (await endSubscription(tx, id, 'SUBSCRIPTION_DELETED', publicBaseUrl, now)) !== null) return
    // Conditional, as the ending: of two deletes together only one finds it still there (on
    // PostgreSQL both may have read it live; the second waits for the first, then finds it gone).
    const deleted = await tx.get(`UPDATE camara_subscriptions SET status = 'DELETED' WHERE id = $1 AND status <> 'DELETED' RETURNING id`, [id])
    if (deleted === undefined) throw new CamaraError(404, 'NOT_FOUND', 'The specified resource is not found.')
  })
}
