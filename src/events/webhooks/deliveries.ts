import type { Database, Executor } from '../../db/engine.ts'
import { NotFoundError, ValidationError } from '../../errors.ts'
import { randomHex } from '../../lib/random-hex.ts'
import { CLIENT_OWNER_PREFIX, queueDeliveries, TEST_EVENT_TYPE, type EventType } from '../../db/outbox.ts'
import type { DeliveryFormat } from './delivery-format.ts'

/** A delivery claimed for one attempt: everything the attempt needs. */
export interface ClaimedDelivery {
  id: number
  /** This claim's token: the outcome is recorded only while it still holds. */
  claim: string
  /** The subscription was removed after this delivery was queued (a removal racing a decision). */
  removed: boolean
  eventId: string
  subscriptionId: string
  url: string
  secretSealed: string
  /** How the attempt is written (delivery-format.ts). */
  format: DeliveryFormat
  body: string
  /** Attempts including this one. */
  attempts: number
  createdAt: number
  /** The trace of what queued it (W3C traceparent), continued by the attempt's span; null untraced. */
  traceparent: string | null
}

export type DeliveryState = 'pending' | 'delivered' | 'failed'

export interface DeliveryRecord {
  id: number
  eventId: string
  type: EventType
  approvalNumber: string | null
  subscriptionId: string
  url: string
  state: DeliveryState
  attempts: number
  lastStatus: number | null
  lastError: string | null
  nextAttemptAt: number | null
  createdAt: number
  finishedAt: number | null
}

/** How deliveries are shared out between endpoints (src/events/webhooks/delivery-worker.ts). */
export interface Fairness {
  /** Attempts in flight at once per subscription, over every process (its claims' leases). */
  perEndpoint: number
  /** Consecutive failed attempts after which a subscription is paused (its breaker opens). */
  breakerFailures: number
}

export const DEFAULT_FAIRNESS: Fairness = { perEndpoint: 4, breakerFailures: 5 }

/**
 * Takes up to `limit` due deliveries for this process: each gets a claim token and a lease
 * (`locked_until`); another process skips it until the lease ends, so a process killed
 * mid-delivery leaves it to be retried, never lost. On PostgreSQL, FOR UPDATE SKIP LOCKED
 * lets concurrent claimers pass each other; SQLite's writers take turns anyway.
 *
 * Fair between endpoints: each subscription gets at most `perEndpoint` attempts in flight
 * (those already leased count), taken round-robin (every endpoint's first due delivery
 * before any endpoint's second), so one vendor's backlog or slow endpoint cannot hold the
 * slots others need. A paused subscription (its breaker open: `paused_until` ahead) gets
 * none; once the pause is over it gets one attempt at a time (half-open) until one succeeds.
 * A delivery waits while an earlier one of the same approval to the same endpoint is
 * pending: events of one approval arrive in order. `only`: that delivery alone (a test sent
 * at once, whatever the breaker says).
 */
export async function claimDue(db: Database, now: number, limit: number, leaseMs: number, only?: number, fairness: Fairness = DEFAULT_FAIRNESS): Promise<ClaimedDelivery[]> {
  const claim = randomHex(12)
  const skipLocked = db.engine === 'postgres' ? 'FOR UPDATE SKIP LOCKED' : ''
  const due = `d.state = 'pending' AND d.next_attempt_at <= $3 AND (d.locked_until IS NULL OR d.locked_until <= $3)
        AND NOT EXISTS (SELECT 1 FROM webhook_deliveries e WHERE e.state = 'pending' AND e.subscription_id = d.subscription_id
          AND e.approval_number = d.approval_number AND e.id < d.id)`
  const pick = only !== undefined
    ? `SELECT d.id FROM webhook_deliveries d WHERE ${due} AND d.id = $5 LIMIT $4`
    : `SELECT r.id FROM (
        SELECT d.id, d.subscription_id, d.next_attempt_at,
          ROW_NUMBER() OVER (PARTITION BY d.subscription_id ORDER BY d.next_attempt_at, d.id) AS rn
        FROM webhook_deliveries d JOIN webhook_subscriptions s ON s.id = d.subscription_id
        WHERE ${due} AND (s.paused_until IS NULL OR s.paused_until <= $3)
      ) r
      JOIN webhook_subscriptions s ON s.id = r.subscription_id
      LEFT JOIN (SELECT subscription_id, COUNT(*) AS n FROM webhook_deliveries
        WHERE state = 'pending' AND locked_until > $3 GROUP BY subscription_id) busy ON busy.subscription_id = r.subscription_id
      WHERE r.rn + COALESCE(busy.n, 0) <= CASE WHEN s.consecutive_failures >= $5 THEN 1 ELSE $6 END
      ORDER BY r.rn, r.next_attempt_at, r.id LIMIT $4`
  const params = only !== undefined ? [claim, now + leaseMs, now, limit, only] : [claim, now + leaseMs, now, limit, fairness.breakerFailures, fairness.perEndpoint]
  // The lease is checked again on the locked row (PostgreSQL re-reads a row another claimer
  // changed meanwhile; the chosen ids alone are from the statement's snapshot), so a delivery
  // another process claimed a moment ago is skipped, not claimed twice.
  const claimed = await db.run(`UPDATE webhook_deliveries SET claim = $1, locked_until = $2, attempts = attempts + 1
    WHERE id IN (SELECT id FROM webhook_deliveries WHERE id IN (${pick})
      AND state = 'pending' AND (locked_until IS NULL OR locked_until <= $3) ${skipLocked})`, params)
  if (claimed === 0) return []
  const rows = await db.all<{ id: number; event_id: string; subscription_id: string; url: string; secret_sealed: string; format: DeliveryFormat; body: string; attempts: number; created_at: number; removed_at: number | null; traceparent: string | null }>(
    `SELECT d.id, d.event_id, d.subscription_id, s.url, s.secret_sealed, s.format, e.body, d.attempts, d.created_at, s.removed_at, d.traceparent
     FROM webhook_deliveries d
     JOIN webhook_subscriptions s ON s.id = d.subscription_id
     JOIN approval_events e ON e.event_id = d.event_id
     WHERE d.claim = $1 ORDER BY d.id`, [claim])
  return rows.map((r) => ({
    id: Number(r.id), claim, removed: r.removed_at !== null, eventId: r.event_id, subscriptionId: r.subscription_id, url: r.url, secretSealed: r.secret_sealed, format: r.format,
    body: r.body, attempts: Number(r.attempts), createdAt: Number(r.created_at), traceparent: r.traceparent ?? null,
  }))
}

/** First pause 30 s, doubling per pause in a row, at most 10 min. */
export function pauseMs(pauses: number): number {
  return Math.min(30_000 * 2 ** Math.min(pauses, 10), 600_000)
}

/** An attempt to the subscription's endpoint succeeded: its breaker closes. */
export async function endpointAnswered(db: Executor, subscriptionId: string): Promise<void> {
  await db.run(`UPDATE webhook_subscriptions SET consecutive_failures = 0, paused_until = NULL, pauses = 0
    WHERE id = $1 AND (consecutive_failures <> 0 OR paused_until IS NOT NULL)`, [subscriptionId])
}

/**
 * An attempt failed at the endpoint: one more failure in a row; at `breakerFailures` (or on a
 * failed probe of a paused one) it is paused for pauseMs(pauses). Returns the pause's end,
 * or null while it is not paused.
 */
export async function endpointFailed(db: Executor, subscriptionId: string, now: number, breakerFailures: number): Promise<number | null> {
  const row = await db.get<{ consecutive_failures: number; pauses: number }>(
    'UPDATE webhook_subscriptions SET consecutive_failures = consecutive_failures + 1 WHERE id = $1 RETURNING consecutive_failures, pauses', [subscriptionId])
  if (row === undefined || Number(row.consecutive_failures) < breakerFailures) return null
  const until = now + pauseMs(Number(row.pauses))
  await db.run('UPDATE webhook_subscriptions SET paused_until = $1, pauses = pauses + 1 WHERE id = $2', [until, subscriptionId])
  return until
}

export async function markDelivered(db: Executor, id: number, status: number, now: number): Promise<void> {
  // Whoever holds the claim now: the endpoint has it, whatever another attempt does.
  await db.run(`UPDATE webhook_deliveries SET state = 'delivered', last_status = $1, last_error = NULL, finished_at = $2,
    claim = NULL, locked_until = NULL WHERE id = $3 AND state = 'pending'`, [status, now, id])
}

/**
 * An attempt failed: retry at `retryAt`, or give up when it is null. Only under the attempt's
 * own claim: an attempt that outlived its lease must not release (or reschedule) the claim of
 * the process that took the delivery over and may be sending it now.
 */
export async function markAttemptFailed(db: Executor, delivery: { id: number; claim: string }, outcome: { status: number | null; error: string }, now: number, retryAt: number | null): Promise<void> {
  if (retryAt === null) {
    await db.run(`UPDATE webhook_deliveries SET state = 'failed', last_status = $1, last_error = $2, finished_at = $3,
      claim = NULL, locked_until = NULL WHERE id = $4 AND state = 'pending' AND claim = $5`, [outcome.status, outcome.error, now, delivery.id, delivery.claim])
    return
  }
  await db.run(`UPDATE webhook_deliveries SET last_status = $1, last_error = $2, next_attempt_at = $3,
    claim = NULL, locked_until = NULL WHERE id = $4 AND state = 'pending' AND claim = $5`, [outcome.status, outcome.error, retryAt, delivery.id, delivery.claim])
}

interface RecordRow {
  id: number; event_id: string; type: EventType; approval_number: string | null; subscription_id: string; url: string; state: DeliveryState
  attempts: number; last_status: number | null; last_error: string | null; next_attempt_at: number; created_at: number; finished_at: number | null
}

const RECORD_SELECT = `SELECT d.id, d.event_id, e.type, d.approval_number, d.subscription_id, s.url, d.state, d.attempts, d.last_status,
  d.last_error, d.next_attempt_at, d.created_at, d.finished_at
  FROM webhook_deliveries d JOIN webhook_subscriptions s ON s.id = d.subscription_id JOIN approval_events e ON e.event_id = d.event_id`

function record(r: RecordRow): DeliveryRecord {
  return {
    id: Number(r.id), eventId: r.event_id, type: r.type, approvalNumber: r.approval_number, subscriptionId: r.subscription_id, url: r.url,
    state: r.state, attempts: Number(r.attempts), lastStatus: r.last_status === null ? null : Number(r.last_status), lastError: r.last_error,
    nextAttemptAt: r.state === 'pending' ? Number(r.next_attempt_at) : null, createdAt: Number(r.created_at),
    finishedAt: r.finished_at === null ? null : Number(r.finished_at),
  }
}

/** Newest first. `failed`: given-up deliveries only; `keyId`: one vendor's. */
export async function listDeliveries(db: Executor, filter: { failed?: boolean; keyId?: string; eventId?: string; limit: number }): Promise<DeliveryRecord[]> {
  const where: string[] = []
  const params: unknown[] = []
  if (filter.failed === true) where.push(`d.state = 'failed'`)
  if (filter.keyId !== undefined) { params.push(filter.keyId); where.push(`s.api_key_id = $${params.length}`) }
  if (filter.eventId !== undefined) { params.push(filter.eventId); where.push(`d.event_id = $${params.length}`) }
  params.push(filter.limit)
  const rows = await db.all<RecordRow>(`${RECORD_SELECT} ${where.length === 0 ? '' : `WHERE ${where.join(' AND ')}`}
    ORDER BY d.id DESC LIMIT $${params.length}`, params)
  return rows.map(record)
}

export async function findDelivery(db: Executor, id: number): Promise<DeliveryRecord> {
  const row = await db.get<RecordRow>(`${RECORD_SELECT} WHERE d.id = $1`, [id])
  if (row === undefined) throw new NotFoundError(`no delivery ${id}`)
  return record(row)
}

/** The CAMARA subscriptions' last event type (src/camara/subscriptions/subscription.ts SUBSCRIPTION_ENDED_TYPE), which events may not import. */
const CAMARA_ENDED_SUFFIX = '.subscription-ended'

/**
 * `kns webhook replay <eventId>`: the event again (same `webhook-id`, same body) to every live
 * subscription of its key that takes its type. Returns the new deliveries' count.
 */
export async function replayEvent(db: Database, eventId: string): Promise<{ eventId: string; deliveries: number }> {
  return db.transaction(async (tx) => {
    const event = await tx.get<{ type: EventType; approval_number: string | null; api_key_id: string }>(
      'SELECT type, approval_number, api_key_id FROM approval_events WHERE event_id = $1', [eventId])
    if (event === undefined) throw new NotFoundError(`no event ${eventId}`, { field: 'eventId' })
    if (event.type === TEST_EVENT_TYPE) throw new ValidationError('a test event is not replayed: send a new one (kns webhook test)', { field: 'eventId' })
    if (event.api_key_id.startsWith(CLIENT_OWNER_PREFIX)) {
      // A CAMARA event (a CloudEvent) concerns one subscription, one number: sent again to the
      // subscription(s) it went to, never to the client's other sinks. Ordered after the
      // subscription's pending events, as at first (their delivery key is the subscription).
      // A subscription its client deleted hears nothing more of the number; only its own
      // subscription-ended event (how it ended) may be sent again.
      const ending = event.type.endsWith(CAMARA_ENDED_SUFFIX)
      const earlier = await tx.all<{ subscription_id: string }>(`SELECT DISTINCT d.subscription_id FROM webhook_deliveries d WHERE d.event_id = $1
        AND ($2 = 1 OR NOT EXISTS (SELECT 1 FROM camara_subscriptions c WHERE c.id = d.subscription_id AND c.status = 'DELETED'))`, [eventId, ending ? 1 : 0])
      let deliveries = 0
      for (const { subscription_id: id } of earlier) {
        deliveries += await queueDeliveries(tx, eventId, { type: event.type, approvalNumber: id, apiKeyId: event.api_key_id }, Date.now(), id)
      }
      return { eventId, deliveries }
    }
    const deliveries = await queueDeliveries(tx, eventId, { type: event.type, approvalNumber: event.approval_number, apiKeyId: event.api_key_id }, Date.now())
    return { eventId, deliveries }
  })
}

/** Age (ms) of the oldest delivery still pending, 0 when none: the metric an operator alerts on. */
export async function oldestPendingAgeMs(db: Executor, now: number): Promise<number> {
  const row = await db.get<{ oldest: number | null }>(`SELECT MIN(created_at) AS oldest FROM webhook_deliveries WHERE state = 'pending'`)
  return row?.oldest == null ? 0 : Math.max(0, now - Number(row.oldest))
}
