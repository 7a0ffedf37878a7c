import { randomUUID } from 'node:crypto'
import type { lookup as dnsLookup } from 'node:dns'
import type { Database, Executor } from '../../db/engine.ts'
import { isUniqueViolation } from '../../db/engine.ts'
import { CLIENT_OWNER_PREFIX } from '../../db/outbox.ts'
import { sealableSinkCredential } from '../../events/webhooks/delivery-format.ts'
import { checkOutboundUrlResolved, OutboundRefusedError } from '../../lib/outbound-http.ts'
import type { SealedBox } from '../../lib/sealed-box.ts'
import { isKnownNumber } from '../../swaps/latest-change.ts'
import type { CamaraAccess } from '../access.ts'
import { parseInstant } from '../../stats/time.ts'
import { CamaraError } from '../camara-error.ts'
import { swapSubject } from '../swap-subject.ts'
import { fromRow, SUBSCRIPTION_TYPES, SWAPPED_TYPE, type StoredSubscription, type SubscriptionRow } from './subscription.ts'

/** The request body (the route's schema has checked its shape; the rules CAMARA gives codes to are checked here). */
export interface SubscriptionRequest {
  protocol: string
  sink: string
  sinkCredential?: { credentialType: string; accessToken?: string; accessTokenExpiresUtc?: string; accessTokenType?: string }
  types: string[]
  config: { subscriptionDetail: { phoneNumber?: string }; subscriptionExpireTime?: string; subscriptionMaxEvents?: number }
}

export interface CreateDeps {
  db: Database
  /** The webhook secrets' box (the sink credential is sealed there). */
  box: SealedBox
  publicBaseUrl: string
  /** WEBHOOK_ALLOW_PRIVATE: loopback and private sinks (development and tests); https always. */
  allowPrivate: boolean
  lookup?: typeof dnsLookup
}

/** Live subscriptions per client: a bank watching its customers, not a fan-out amplifier (429 QUOTA_EXCEEDED past it). */
export const MAX_LIVE_SUBSCRIPTIONS_PER_CLIENT = 10_000
const MAX_SINK_LENGTH = 2048
/** RFC 6750's b64token: what may follow `Bearer ` (nothing that could end the header). */
const BEARER_TOKEN = /^[A-Za-z0-9._~+/-]+=*$/
const MAX_TOKEN_LENGTH = 4096

/** Step: HTTP is the one delivery protocol offered. */
function checkProtocol(request: SubscriptionRequest): void {
  if (request.protocol !== 'HTTP') throw new CamaraError(400, 'INVALID_PROTOCOL', 'Only HTTP is supported.')
}

/** Step: exactly one type, the one this API has. */
function checkTypes(request: SubscriptionRequest): void {
  if (request.types.length !== 1 || !(SUBSCRIPTION_TYPES as readonly string[]).includes(request.types[0]!)) {
    throw new CamaraError(400, 'INVALID_ARGUMENT', `types must be [${SWAPPED_TYPE}].`)
  }
}

/** Step: an https sink that deliveries may reach (the guarded client's rules, its name resolved now). */
async function checkSink(request: SubscriptionRequest, deps: CreateDeps): Promise<string> {
  if (request.sink.length > MAX_SINK_LENGTH) throw new CamaraError(400, 'INVALID_SINK', `The sink is longer than ${MAX_SINK_LENGTH} characters.`)
  try {
    const { href } = await checkOutboundUrlResolved(request.sink, { allowPrivate: deps.allowPrivate, allowHttp: false, ...(deps.lookup === undefined ? {} : { lookup: deps.lookup }) })
    // Normalised, a URL can grow (each non-ASCII character percent-encoded into up to 12): the limit holds for what is stored and shown.
    if (href.length > MAX_SINK_LENGTH) throw new CamaraError(400, 'INVALID_SINK', `The sink is longer than ${MAX_SINK_LENGTH} characters once percent-encoded.`)
    return href
  } catch (err) {
    if (err instanceof OutboundRefusedError) throw new CamaraError(400, 'INVALID_SINK', `The sink is not valid for HTTP delivery: ${err.message}.`)
    throw err
  }
}

/**
 * RFC 3339 with a zone, as the definitions say; also seconds since the epoch as a string,
 * which is what CAMARA's own example sends for accessTokenExpiresUtc ("1717753038").
 */
function instant(value: string, field: string): number {
  const refused = new CamaraError(400, 'INVALID_ARGUMENT', `${field} must be an RFC 3339 date-time with a time zone.`)
  if (/^\d{9,11}$/.test(value)) return Number(value) * 1000
  if (!/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/i.test(value)) throw refused
  // The calendar checked too (parseInstant): Date.parse alone rolls 2027-02-30 over into March.
  try {
    return parseInstant(value, field)
  } catch {
    throw refused
  }
}

/** Step: an ACCESSTOKEN credential with a bearer token that has not expired, or none. */
function checkSinkCredential(request: SubscriptionRequest, now: number): { accessToken?: string; expiresAt: number | null } {
  const credential = request.sinkCredential
  if (credential === undefined) return { expiresAt: null }
  if (credential.credentialType !== 'ACCESSTOKEN') throw new CamaraError(400, 'INVALID_CREDENTIAL', 'Only Access token is supported.')
  if (credential.accessTokenType !== 'bearer') throw new CamaraError(400, 'INVALID_TOKEN', 'Only bearer token is supported.')
  const token = credential.accessToken
  if (token === undefined || token.length > MAX_TOKEN_LENGTH || !BEARER_TOKEN.test(token)) {
    throw new CamaraError(400, 'INVALID_ARGUMENT', `sinkCredential.accessToken must be a bearer token (RFC 6750 characters, at most ${MAX_TOKEN_LENGTH}).`)
  }
  if (credential.accessTokenExpiresUtc === undefined) throw new CamaraError(400, 'INVALID_ARGUMENT', 'sinkCredential.accessTokenExpiresUtc is required.')
  const expiresAt = instant(credential.accessTokenExpiresUtc, 'sinkCredential.accessTokenExpiresUtc')
  if (expiresAt <= now) throw new CamaraError(400, 'INVALID_ARGUMENT', 'sinkCredential.accessTokenExpiresUtc is in the past.')
  return { accessToken: token, expiresAt }
}

/** Step: an expiry in the future, if any (one in the past is INVALID_ARGUMENT, as the definition's tests say). */
function checkExpiry(request: SubscriptionRequest, now: number): number | null {
  const requested = request.config.subscriptionExpireTime
  if (requested === undefined) return null
  const at = instant(requested, 'config.subscriptionExpireTime')
  if (at <= now) throw new CamaraError(400, 'INVALID_ARGUMENT', 'config.subscriptionExpireTime is in the past.')
  return at
}

/** The advisory-lock namespace of a client's subscriptions ("kcs1"): the two-key form, apart from the one-key locks elsewhere. */
const CLIENT_SUBSCRIPTIONS_LOCK = 0x6b637331

/**
 * Creates of one client run one after the other, so that the quota's count and the insert are
 * one step: PostgreSQL's read-committed transactions would otherwise each count the same live
 * subscriptions and all insert past the quota (a transaction-scoped advisory lock on the
 * client; SQLite's write transactions are serial already).
 */
async function lockClientSubscriptions(tx: Executor, clientId: string): Promise<void> {
  // Keyed by the schema too: two deployments sharing one database in their own schemas do not wait on each other.
  if (tx.engine === 'postgres') await tx.run(`SELECT pg_advisory_xact_lock($1, hashtext(current_schema() || ':' || $2))`, [CLIENT_SUBSCRIPTIONS_LOCK, clientId])
}

/**
 * `POST /sim-swap-subscriptions/v0.3/subscriptions`: checks the request step by step, in
 * CAMARA's order of codes, then stores the subscription (and its delivery endpoint, which holds
 * the sink credential sealed) in one transaction. One live subscription per client, number and
 * sink (a unique index, so two created together cannot both pass): 409 ALREADY_EXISTS.
 */
export async function createSubscription(access: CamaraAccess, request: SubscriptionRequest, deps: CreateDeps, now = Date.now()): Promise<StoredSubscription> {
  checkProtocol(request)
  checkTypes(request)
  const phone = swapSubject(access, request.config.subscriptionDetail.phoneNumber)
  const credential = checkSinkCredential(request, now)
  const expiresAt = checkExpiry(request, now)
  const sink = await checkSink(request, deps)
  if (!(await isKnownNumber(deps.db, phone))) throw new CamaraError(404, 'IDENTIFIER_NOT_FOUND', 'The phone number is not known to this service.')
  const id = randomUUID()
  const owner = `${CLIENT_OWNER_PREFIX}${access.clientId}`
  const sealed = deps.box.seal(sealableSinkCredential(credential.accessToken === undefined ? {} : { accessToken: credential.accessToken }))
  try {
    return await deps.db.transaction(async (tx) => {
      await lockClientSubscriptions(tx, access.clientId)
      const live = await tx.get<{ n: number | string }>(`SELECT COUNT(*) AS n FROM camara_subscriptions WHERE client_id = $1 AND status = 'ACTIVE'`, [access.clientId])
      if (Number(live?.n ?? 0) >= MAX_LIVE_SUBSCRIPTIONS_PER_CLIENT) {
        throw new CamaraError(429, 'QUOTA_EXCEEDED', `This client has ${MAX_LIVE_SUBSCRIPTIONS_PER_CLIENT} live subscriptions: delete one first.`)
      }
      await tx.run(`INSERT INTO webhook_subscriptions (id, api_key_id, url, events, secret_sealed, created_at, format) VALUES ($1, $2, $3, $4, $5, $6, 'cloudevents')`,
        [id, owner, sink, SWAPPED_TYPE, sealed, now])
      const row = await tx.get<SubscriptionRow>(`INSERT INTO camara_subscriptions (id, client_id, phone, identified_by_token, types, sink, expires_at, max_events,
        access_token_expires_at, status, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, 'ACTIVE', $10) RETURNING *`,
      [id, access.clientId, phone, access.phoneNumber === null ? 0 : 1, JSON.stringify(request.types), sink, expiresAt,
        request.config.subscriptionMaxEvents ?? null, credential.expiresAt, now])
      return fromRow(row!)
    })
  } catch (err) {
    if (isUniqueViolation(err)) throw new CamaraError(409, 'ALREADY_EXISTS', 'This client has a live subscription for this phone number and sink already.')
    throw err
  }
}
