import type { Database, Executor } from '../../db/engine.ts'
import { NotFoundError, ValidationError } from '../../errors.ts'
import type { lookup as dnsLookup } from 'node:dns'
import { checkOutboundUrlResolved, OutboundRefusedError } from '../../lib/outbound-http.ts'
import { randomHex } from '../../lib/random-hex.ts'
import type { SealedBox } from '../../lib/sealed-box.ts'
import { DECISION_EVENT_TYPES, type DecisionEventType } from '../../db/outbox.ts'
import { newWebhookSecret } from './signature.ts'

/** A vendor's endpoint: the events of approvals created with one API key, sent to one URL. */
export interface Subscription {
  id: string
  keyId: string
  url: string
  /** The event types it receives. */
  events: DecisionEventType[]
  createdAt: number
  removedAt: number | null
  /** Its circuit breaker (src/events/webhooks/deliveries.ts): failed attempts in a row, and the pause they earned. */
  consecutiveFailures: number
  pausedUntil: number | null
}

interface SubscriptionRow {
  id: string; api_key_id: string; url: string; events: string; created_at: number; removed_at: number | null
  consecutive_failures: number | null; paused_until: number | null
}

/** `active`, `paused` (breaker open), or `probing` (the pause is over, one attempt at a time until one succeeds). */
export function breakerState(s: Pick<Subscription, 'consecutiveFailures' | 'pausedUntil'>, breakerFailures: number, now = Date.now()): 'active' | 'paused' | 'probing' {
  if (s.pausedUntil !== null && s.pausedUntil > now) return 'paused'
  return s.consecutiveFailures >= breakerFailures ? 'probing' : 'active'
}

/** Longest webhook URL accepted (browsers' practical limit; a URL is not a payload). */
export const MAX_URL_LENGTH = 2048
/** Live subscriptions per API key: enough for every environment of a vendor, not a fan-out amplifier. */
export const MAX_SUBSCRIPTIONS_PER_KEY = 10

function fromRow(row: SubscriptionRow): Subscription {
  return {
    id: row.id,
    keyId: row.api_key_id,
    url: row.url,
    events: row.events === '*' ? [...DECISION_EVENT_TYPES] : (row.events.split(',') as DecisionEventType[]),
    createdAt: Number(row.created_at),
    removedAt: row.removed_at === null ? null : Number(row.removed_at),
    consecutiveFailures: Number(row.consecutive_failures ?? 0),
    pausedUntil: row.paused_until == null ? null : Number(row.paused_until),
  }
}

/** `--events approval.approved,approval.cancelled`: every name must be a decision event type. */
export function parseEventTypes(raw: string | readonly string[] | undefined): DecisionEventType[] | '*' {
  if (raw === undefined) return '*'
  const names = (typeof raw === 'string' ? raw.split(',') : [...raw]).map((name) => name.trim()).filter((name) => name !== '')
  if (names.length === 0) return '*'
  const unknown = names.filter((name) => !(DECISION_EVENT_TYPES as readonly string[]).includes(name))
  if (unknown.length > 0) {
    throw new ValidationError(`unknown event type ${unknown.map((u) => JSON.stringify(u.slice(0, 40))).join(', ')}; known: ${DECISION_EVENT_TYPES.join(', ')}`, { field: 'events' })
  }
  const unique = [...new Set(names)] as DecisionEventType[]
  return unique.length === DECISION_EVENT_TYPES.length ? '*' : unique
}

/**
 * A webhook URL judged as deliveries will judge it (src/lib/outbound-http.ts): the static rules,
 * and a name that resolves to a loopback or private address refused now rather than failing at
 * every delivery. The admin API and `kns webhook add` both call it, with the server's
 * WEBHOOK_ALLOW_PRIVATE (a CLI uses the one the server recorded: src/db/outbound-rules.ts).
 */
export async function checkWebhookUrl(url: string, allowPrivate: boolean, lookup?: typeof dnsLookup): Promise<string> {
  if (url.length > MAX_URL_LENGTH) throw new ValidationError(`the URL is longer than ${MAX_URL_LENGTH} characters`, { field: 'url' })
  try {
    return (await checkOutboundUrlResolved(url, { allowPrivate, ...(lookup === undefined ? {} : { lookup }) })).href
  } catch (err) {
    if (err instanceof OutboundRefusedError) {
      throw new ValidationError(`webhook URL refused: ${err.message}${allowPrivate ? '' : ' (a server started with WEBHOOK_ALLOW_PRIVATE=true allows them, for development)'}`, { field: 'url' })
    }
    throw err
  }
}

export interface NewSubscription { keyId: string; url: string; events?: string | readonly string[] }

/** Adds a subscription; the secret is returned here only (stored sealed). */
export async function addSubscription(
  db: Database, box: SealedBox, input: NewSubscription, options: { allowPrivate: boolean; lookup?: typeof dnsLookup },
): Promise<Subscription & { secret: string }> {
  const url = await checkWebhookUrl(input.url, options.allowPrivate, options.lookup)
  const events = parseEventTypes(input.events)
  const secret = newWebhookSecret()
  const id = `whk_${randomHex(12)}`
  const now = Date.now()
  await db.transaction(async (tx) => {
    // PostgreSQL: the key's row locked until commit, so adds for one key started together count
    // one after another (each read the same count and all inserted past the quota), and a
    // revocation waits for them. SQLite runs one write transaction at a time.
    const lock = tx.engine === 'postgres' ? ' FOR UPDATE' : ''
    const key = await tx.get<{ revoked_at: number | null }>(`SELECT revoked_at FROM api_keys WHERE id = $1${lock}`, [input.keyId])
    if (key === undefined) throw new NotFoundError(`no API key ${input.keyId}`, { field: 'keyId' })
    if (key.revoked_at !== null) throw new ValidationError(`API key ${input.keyId} is revoked`, { field: 'keyId' })
    const live = await tx.get<{ n: number }>('SELECT COUNT(*) AS n FROM webhook_subscriptions WHERE api_key_id = $1 AND removed_at IS NULL', [input.keyId])
    if (Number(live?.n ?? 0) >= MAX_SUBSCRIPTIONS_PER_KEY) {
      throw new ValidationError(`API key ${input.keyId} has ${MAX_SUBSCRIPTIONS_PER_KEY} webhooks already; remove one first`, { field: 'keyId' })
    }
    await tx.run(`INSERT INTO webhook_subscriptions (id, api_key_id, url, events, secret_sealed, created_at) VALUES ($1, $2, $3, $4, $5, $6)`,
      [id, input.keyId, url, events === '*' ? '*' : events.join(','), box.seal(secret), now])
  })
  return { id, keyId: input.keyId, url, events: events === '*' ? [...DECISION_EVENT_TYPES] : events, createdAt: now, removedAt: null, consecutiveFailures: 0, pausedUntil: null, secret }
}

/** A vendor's endpoints only: a CAMARA subscription (format `cloudevents`) is its client's, managed through the CAMARA API. */
const VENDOR_ENDPOINT = `removed_at IS NULL AND format = 'standard-webhooks'`

export async function listSubscriptions(db: Executor, filter: { keyId?: string } = {}): Promise<Subscription[]> {
  const rows = filter.keyId === undefined
    ? await db.all<SubscriptionRow>(`SELECT * FROM webhook_subscriptions WHERE ${VENDOR_ENDPOINT} ORDER BY created_at, id`)
    : await db.all<SubscriptionRow>(`SELECT * FROM webhook_subscriptions WHERE ${VENDOR_ENDPOINT} AND api_key_id = $1 ORDER BY created_at, id`, [filter.keyId])
  return rows.map(fromRow)
}

export async function findSubscription(db: Executor, id: string): Promise<Subscription & { secretSealed: string }> {
  const row = await db.get<SubscriptionRow & { secret_sealed: string }>(`SELECT * FROM webhook_subscriptions WHERE id = $1 AND ${VENDOR_ENDPOINT}`, [id])
  if (row === undefined) throw new NotFoundError(`no webhook ${id}`, { field: 'id' })
  return { ...fromRow(row), secretSealed: row.secret_sealed }
}

/**
 * Removes a subscription: nothing more is queued for it, and what was still pending is given
 * up (marked failed, "subscription removed"), so a removed endpoint hears nothing more.
 */
export async function removeSubscription(db: Database, id: string): Promise<Subscription> {
  return db.transaction(async (tx) => {
    const now = Date.now()
    const row = await tx.get<SubscriptionRow>(`UPDATE webhook_subscriptions SET removed_at = $1 WHERE id = $2 AND ${VENDOR_ENDPOINT} RETURNING *`, [now, id])
    if (row === undefined) throw new NotFoundError(`no webhook ${id}`, { field: 'id' })
    await tx.run(`UPDATE webhook_deliveries SET state = 'failed', last_error = 'subscription removed', finished_at = $1, claim = NULL, locked_until = NULL
      WHERE subscription_id = $2 AND state = 'pending'`, [now, id])
    return fromRow(row)
  })
}
