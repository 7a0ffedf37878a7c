import { DECISION_EVENT_TYPES, type DecisionEventType } from '../contract/events-schemas.ts'
import type { Executor } from './engine.ts'
import { randomHex } from '../lib/random-hex.ts'
import { currentTraceparent } from '../lib/tracing.ts'

export { DECISION_EVENT_TYPES, type DecisionEventType }
/** `kns webhook test`: sent to one subscription only, whatever it subscribed to. */
export const TEST_EVENT_TYPE = 'webhook.test'
export type EventType = DecisionEventType | typeof TEST_EVENT_TYPE
/**
 * The owner (`api_key_id`) of the events and subscriptions of an OAuth client of the login
 * provider (the CAMARA subscriptions), `client:<clientId>`: never an API key's ID (16 hex digits).
 */
export const CLIENT_OWNER_PREFIX = 'client:'

export interface NewEvent {
  type: EventType
  /** null for a test event. */
  approvalNumber: string | null
  /** The key that created the approval: only its subscriptions receive the event. */
  apiKeyId: string
  /** When it happened (epoch ms): the decision, or the expiry instant. */
  occurredAt: number
  data: Record<string, unknown>
}

/**
 * The body every delivery of an event sends, as Standard Webhooks suggests (`type`,
 * `timestamp`, `data`), with the event's ID as well. Stored once, so a retry or a replay
 * sends exactly the same bytes under the same `webhook-id`.
 */
export function eventBody(eventId: string, event: NewEvent): string {
  return JSON.stringify({ id: eventId, type: event.type, timestamp: new Date(event.occurredAt).toISOString(), data: event.data })
}

export function newEventId(): string {
  return `evt_${randomHex(16)}`
}

/**
 * Writes the event and one pending delivery per matching subscription of the approval's key,
 * in the caller's transaction: the decision, its event and its deliveries commit together or
 * not at all (the outbox). A decision event is unique per approval and type: recorded once
 * whoever decides. Returns the event ID and how many deliveries it queued.
 */
export async function recordEvent(tx: Executor, event: NewEvent, options: { subscriptionId?: string; now?: number } = {}): Promise<{ eventId: string; deliveries: number }> {
  const eventId = newEventId()
  const now = options.now ?? Date.now()
  await tx.run(`INSERT INTO approval_events (event_id, approval_number, api_key_id, type, occurred_at, body, created_at)
    VALUES ($1, $2, $3, $4, $5, $6, $7)`, [eventId, event.approvalNumber, event.apiKeyId, event.type, event.occurredAt, eventBody(eventId, event), now])
  const deliveries = await queueDeliveries(tx, eventId, event, now, options.subscriptionId)
  return { eventId, deliveries }
}

/**
 * One pending delivery of `eventId` per live subscription of the event's key that wants its
 * type (or only to `subscriptionId`, for a test or a replay to one endpoint).
 */
export async function queueDeliveries(
  tx: Executor, eventId: string, event: { type: string; approvalNumber: string | null; apiKeyId: string }, now: number, subscriptionId?: string,
): Promise<number> {
  const wanted = subscriptionId === undefined
    ? `api_key_id = $4 AND (events = '*' OR (',' || events || ',') LIKE $5)`
    : 'api_key_id = $4 AND id = $5'
  // The trace of what queues them (a decision's request), for the delivery attempts to continue.
  return tx.run(`INSERT INTO webhook_deliveries (event_id, subscription_id, approval_number, state, attempts, next_attempt_at, created_at, traceparent)
    SELECT $1, id, $2, 'pending', 0, $3, $3, $6 FROM webhook_subscriptions
    WHERE removed_at IS NULL AND ${wanted}`,
  [eventId, event.approvalNumber, now, event.apiKeyId, subscriptionId ?? `%,${event.type},%`, currentTraceparent()])
}
