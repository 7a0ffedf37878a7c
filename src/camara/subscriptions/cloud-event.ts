import type { Executor } from '../../db/engine.ts'
import { CLIENT_OWNER_PREFIX, newEventId, queueDeliveries } from '../../db/outbox.ts'
import type { StoredSubscription, TerminationReason } from './subscription.ts'
import { SUBSCRIPTION_ENDED_TYPE, SWAPPED_TYPE } from './subscription.ts'

/** Where the events come from (CloudEvents `source`): the subscriptions API of this service. */
export function eventSource(publicBaseUrl: string): string {
  return `${publicBaseUrl.replace(/\/+$/, '')}/sim-swap-subscriptions/v0.3`
}

type EventData = Record<string, unknown>

/**
 * Queues one CloudEvent (1.0, structured mode) for one subscription's sink, in the caller's
 * transaction (the outbox: it is sent if and only if what caused it commits). The body is
 * stored once, so every attempt and a replay send the same bytes under the same ID. The
 * number is in the event only when the subscriber named it (two-legged): a three-legged
 * subscriber never gets it back (CAMARA's data minimisation).
 */
async function queueCloudEvent(tx: Executor, subscription: StoredSubscription, type: string, data: EventData, occurredAt: number, publicBaseUrl: string, now: number): Promise<string> {
  const id = newEventId()
  const body = JSON.stringify({
    id, source: eventSource(publicBaseUrl), type, specversion: '1.0', datacontenttype: 'application/json',
    time: new Date(occurredAt).toISOString(),
    data: { ...(subscription.identifiedByToken ? {} : { phoneNumber: subscription.phone }), subscriptionId: subscription.id, ...data },
  })
  const owner = `${CLIENT_OWNER_PREFIX}${subscription.clientId}`
  await tx.run(`INSERT INTO approval_events (event_id, approval_number, api_key_id, type, occurred_at, body, created_at)
    VALUES ($1, NULL, $2, $3, $4, $5, $6)`, [id, owner, type, occurredAt, body, now])
  // The delivery's ordering key is the subscription: its events reach the sink in order (swapped before subscription-ended).
  await queueDeliveries(tx, id, { type, approvalNumber: subscription.id, apiKeyId: owner }, now, subscription.id)
  return id
}

export function queueSwapped(tx: Executor, subscription: StoredSubscription, changedAt: number, publicBaseUrl: string, now: number): Promise<string> {
  return queueCloudEvent(tx, subscription, SWAPPED_TYPE, {}, changedAt, publicBaseUrl, now)
}

export function queueSubscriptionEnded(tx: Executor, subscription: StoredSubscription, reason: TerminationReason, description: string, publicBaseUrl: string, now: number): Promise<string> {
  return queueCloudEvent(tx, subscription, SUBSCRIPTION_ENDED_TYPE, { terminationReason: reason, terminationDescription: description }, now, publicBaseUrl, now)
}
