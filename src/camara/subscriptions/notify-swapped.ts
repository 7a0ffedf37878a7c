import type { Executor } from '../../db/engine.ts'
import { FAMILY_KINDS, type ChangeKind } from '../../swaps/latest-change.ts'
import { queueSwapped } from './cloud-event.ts'
import { endSubscription } from './end-subscription.ts'
import { fromRow, type SubscriptionRow } from './subscription.ts'

/**
 * How long before a subscription started a change may have happened and still be sent to it, when
 * it is recorded after the start: operators report in batches, minutes late. A bank that checked
 * (false: not recorded yet) and subscribed must still hear of the swap it subscribed for; an
 * operator's back-fill of older history is not news.
 */
export const LATE_REPORT_GRACE_MS = 24 * 3600_000

/** A change just recorded (src/swaps), as the subscriptions need it. */
export interface RecordedChange { phone: string; kind: ChangeKind; changedAt: number }

/**
 * Called in the transaction that records changes: each SIM change (a new SIM, or an activation:
 * CAMARA counts a new subscription as a swap, as `check` does) queues a `swapped` CloudEvent to
 * every live subscription of the number that had started when it was recorded, unless the change
 * happened more than LATE_REPORT_GRACE_MS before the subscription started. The event count is taken
 * with a conditional update, so concurrent recordings never send more than
 * `subscriptionMaxEvents`; the one that reaches it ends the subscription (MAX_EVENTS_REACHED).
 * A subscription whose expiry has passed but which the sweeper has not ended yet gets nothing.
 */
export async function notifySwapped(tx: Executor, changes: readonly RecordedChange[], publicBaseUrl: string, now: number): Promise<number> {
  let queued = 0
  for (const change of changes) {
    if (!FAMILY_KINDS.sim.includes(change.kind)) continue
    const live = await tx.all<{ id: string }>(`SELECT id FROM camara_subscriptions WHERE phone = $1 AND status = 'ACTIVE'
      AND created_at <= $2 AND (expires_at IS NULL OR expires_at > $3) ORDER BY id`, [change.phone, change.changedAt + LATE_REPORT_GRACE_MS, now])
    for (const { id } of live) {
      const counted = await tx.get<SubscriptionRow>(`UPDATE camara_subscriptions SET events_sent = events_sent + 1
        WHERE id = $1 AND status = 'ACTIVE' AND (max_events IS NULL OR events_sent < max_events) RETURNING *`, [id])
      if (counted === undefined) continue
      const subscription = fromRow(counted)
      await queueSwapped(tx, subscription, change.changedAt, publicBaseUrl, now)
      queued++
      if (subscription.maxEvents !== null && subscription.eventsSent >= subscription.maxEvents) {
        await endSubscription(tx, id, 'MAX_EVENTS_REACHED', publicBaseUrl, now)
      }
    }
  }
  return queued
}
