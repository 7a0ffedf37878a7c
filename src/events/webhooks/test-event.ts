import type { Database } from '../../db/engine.ts'
import { recordEvent, TEST_EVENT_TYPE } from '../../db/outbox.ts'
import type { DeliveryWorker } from './delivery-worker.ts'
import { findSubscription } from './subscriptions.ts'

export interface TestOutcome { eventId: string; delivered: boolean; status: number | null; error: string | null }

/**
 * `kns webhook test <id>`: a `webhook.test` event to that endpoint alone, attempted at once,
 * and the attempt's outcome. A failed test is retried on the normal schedule, like any event.
 */
export async function sendTestEvent(db: Database, worker: DeliveryWorker, subscriptionId: string): Promise<TestOutcome> {
  const subscription = await findSubscription(db, subscriptionId)
  const { eventId } = await db.transaction((tx) => recordEvent(tx, {
    type: TEST_EVENT_TYPE, approvalNumber: null, apiKeyId: subscription.keyId, occurredAt: Date.now(),
    data: { webhookId: subscription.id, message: 'A test delivery from kns: the signature verifies with your whsec_ secret.' },
  }, { subscriptionId: subscription.id }))
  const delivery = await db.get<{ id: number }>('SELECT id FROM webhook_deliveries WHERE event_id = $1', [eventId])
  const outcome = delivery === undefined ? null : await worker.deliverNow(Number(delivery.id))
  if (outcome === null) return { eventId, delivered: false, status: null, error: 'queued: a server process is delivering it' }
  return outcome.delivered
    ? { eventId, delivered: true, status: outcome.status, error: null }
    : { eventId, delivered: false, status: outcome.status, error: outcome.error }
}
