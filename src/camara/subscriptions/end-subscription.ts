import type { Executor } from '../../db/engine.ts'
import { CLIENT_OWNER_PREFIX } from '../../db/outbox.ts'
import { queueSubscriptionEnded } from './cloud-event.ts'
import { fromRow, type StoredSubscription, type SubscriptionRow, type TerminationReason } from './subscription.ts'

const DESCRIPTIONS: Record<TerminationReason, string> = {
  SUBSCRIPTION_EXPIRED: 'subscription expire time reached',
  MAX_EVENTS_REACHED: 'maximum number of events reached',
  ACCESS_TOKEN_EXPIRED: 'the sink credential\'s access token expires',
  SUBSCRIPTION_DELETED: 'subscription deleted by the requester',
  NETWORK_TERMINATED: 'the operator ended the subscription',
}

/**
 * Ends a live subscription once, whoever gets here first (a deletion, the sweeper of any
 * process, the last allowed event): the conditional update decides, and only its winner queues
 * the `subscription-ended` event with the reason. Nothing more is queued for it after this;
 * what was queued before is still delivered, in order. A deleted one is gone from the API;
 * any other end leaves it readable as EXPIRED.
 */
export async function endSubscription(tx: Executor, id: string, reason: TerminationReason, publicBaseUrl: string, now: number): Promise<StoredSubscription | null> {
  const status = reason === 'SUBSCRIPTION_DELETED' ? 'DELETED' : 'EXPIRED'
  const row = await tx.get<SubscriptionRow>(`UPDATE camara_subscriptions SET status = $1, ended_reason = $2, ended_at = $3
    WHERE id = $4 AND status = 'ACTIVE' RETURNING *`, [status, reason, now, id])
  if (row === undefined) return null
  const ended = fromRow(row)
  await queueSubscriptionEnded(tx, ended, reason, DESCRIPTIONS[reason], publicBaseUrl, now)
  return ended
}

/**
 * A CAMARA client was removed (`kns oidc client remove`): its subscriptions end with it, in the
 * removal's transaction. Its tokens are refused at once, so its sinks must hear nothing more of
 * the numbers either (no `subscription-ended`: the client is gone), what is still queued to them
 * is given up, and a client registered later under the same ID inherits none of them.
 */
export async function endClientSubscriptions(tx: Executor, clientId: string, now: number): Promise<number> {
  const owner = `${CLIENT_OWNER_PREFIX}${clientId}`
  const ended = await tx.run(`UPDATE camara_subscriptions SET status = 'DELETED', ended_reason = COALESCE(ended_reason, 'NETWORK_TERMINATED'),
    ended_at = COALESCE(ended_at, $2) WHERE client_id = $1 AND status <> 'DELETED'`, [clientId, now])
  await tx.run(`UPDATE webhook_deliveries SET state = 'failed', last_error = 'client removed', finished_at = $2, claim = NULL, locked_until = NULL
    WHERE state = 'pending' AND subscription_id IN (SELECT id FROM webhook_subscriptions WHERE api_key_id = $1)`, [owner, now])
  await tx.run('UPDATE webhook_subscriptions SET removed_at = $2 WHERE api_key_id = $1 AND removed_at IS NULL', [owner, now])
  return ended
}
