import type { Executor } from '../../db/engine.ts'
import { fromRow, type StoredSubscription, type SubscriptionRow } from './subscription.ts'

/** Most subscriptions one list answers (newest first): the API has no paging. */
export const MAX_LISTED = 1000

/**
 * The client's subscriptions, live and ended (not deleted), newest first: a three-legged
 * caller sees only those of its own number (CAMARA's implicit filter); a two-legged one may
 * filter by number.
 */
export async function listSubscriptions(db: Executor, owner: { clientId: string; phone: string | null }): Promise<StoredSubscription[]> {
  const rows = owner.phone === null
    ? await db.all<SubscriptionRow>(`SELECT * FROM camara_subscriptions WHERE client_id = $1 AND status <> 'DELETED'
        ORDER BY created_at DESC, id LIMIT ${MAX_LISTED}`, [owner.clientId])
    : await db.all<SubscriptionRow>(`SELECT * FROM camara_subscriptions WHERE client_id = $1 AND phone = $2 AND status <> 'DELETED'
        ORDER BY created_at DESC, id LIMIT ${MAX_LISTED}`, [owner.clientId, owner.phone])
  return rows.map(fromRow)
}
