import { createHash } from 'node:crypto'
import { createLocalJWKSet, errors as joseErrors, jwtVerify, type JWTPayload } from 'jose'
import type { CamaraClient } from '../accounts/clients.ts'
import type { PublicJwk } from '../accounts/signing-keys.ts'
import type { Executor } from '../db/engine.ts'
import { camaraAudience, type CamaraAccess } from './access.ts'
import { CamaraError } from './camara-error.ts'

/**
 * The CAMARA APIs' resource server side of the tokens our provider issues
 * (src/accounts/camara-provider.ts): `verify(authorizationHeader)` gives who calls, or throws
 * CamaraError 401 UNAUTHENTICATED saying which rule failed (never echoing the token).
 *
 * A token is an RFC 9068 JWT access token: typ at+jwt, RS256 by a key the provider publishes
 * (the signing key, the next one and the retired ones in their overlap), our issuer, the CAMARA
 * audience, unexpired, with jti, client_id and scope; its client still registered as a CAMARA
 * client (removing a client ends its tokens at once). `sub` equal to `client_id` is a
 * two-legged token (no number); any other sub is a three-legged client's pairwise subject,
 * opened back to the user (src/accounts/pairwise-subjects.ts) whose number is looked up now
 * (a user gone since is refused). The phone number is never in the token.
 */
export interface CamaraTokenDeps {
  config: { zkLoginIssuer: string; publicBaseUrl: string }
  db: Executor
  accounts: {
    keys: { published(now?: number): Promise<PublicJwk[]> }
    clients: { camara(clientId: string): Promise<CamaraClient | null> }
    subjects: { userIdOf(sub: string, clientId: string): string | null }
  }
}

/** Keys are re-read this often at most (a rotation publishes the next key an hour before it signs)... */
const KEYS_FRESH_MS = 60_000
/** ...or sooner for a kid not seen, but not more than once a second, whatever kids a caller invents. */
const UNKNOWN_KID_REREAD_MS = 1000
const MAX_TOKEN = 8192
const BEARER = /^Bearer +([A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+) *$/i
const CLOCK_TOLERANCE_S = 5
/**
 * A token's signature and claims, once verified, are taken again without the RS256 check (most
 * of a call's CPU) for this long, never past its `exp`: a bank sends one token for many calls.
 * The client and the user are still looked up on every call, so a client removed or a user gone
 * is refused at once.
 */
const VERIFIED_REUSE_MS = 60_000
/** Tokens remembered at most (the oldest forgotten first). */
const VERIFIED_MAX = 4096

const unauthenticated = (why: string) => new CamaraError(401, 'UNAUTHENTICATED', why)

export class CamaraTokens {
  readonly #deps: CamaraTokenDeps
  readonly #issuer: string
  readonly #audience: string
  #keys: { at: number; kids: Set<string>; set: ReturnType<typeof createLocalJWKSet> } | undefined
  /** By the token's SHA-256 (a lookup by the token itself would time its characters). */
  readonly #verified = new Map<string, { payload: JWTPayload; until: number }>()

  /** `new CamaraTokens(service)`: a Service has config, db and accounts. */
  constructor(deps: CamaraTokenDeps) {
    this.#deps = deps
    this.#issuer = deps.config.zkLoginIssuer
    this.#audience = camaraAudience(deps.config.publicBaseUrl)
  }

  async verify(authorization: string | undefined, now = Date.now()): Promise<CamaraAccess> {
    const payload = await this.#verifiedPayload(bearerToken(authorization), now)
    const clientId = payload.client_id as string
    const client = await this.#deps.accounts.clients.camara(clientId)
    if (client === null) throw unauthenticated('the token\'s client is no longer registered')
    // Issued to an earlier client of the same ID (removed, then registered again): not this one's.
    // `iat` is in whole seconds: only a token whose second ended before the registration is refused.
    if ((payload.iat! + 1) * 1000 <= client.registeredAt) throw unauthenticated('the token was issued before its client was registered (to an earlier client of that ID)')
    // Scopes the client has lost since are not honoured; a token without the purpose
    // (FRAUD_PREVENTION_PURPOSE) is the routes' 403 PERMISSION_DENIED, as a missing scope is.
    const scopes = new Set(String(payload.scope).split(' ').filter((s) => s !== '' && client.scopes.has(s)))
    return { clientId, scopes, phoneNumber: await this.#phoneOf(payload.sub!, client), tokenId: payload.jti! }
  }

  /** The token's claims, its signature verified now or within VERIFIED_REUSE_MS (and its `exp`). */
  async #verifiedPayload(token: string, now: number): Promise<JWTPayload> {
    const digest = createHash('sha256').update(token).digest('base64url')
    const known = this.#verified.get(digest)
    if (known !== undefined && now < known.until) return known.payload
    if (known !== undefined) this.#verified.delete(digest)
    const payload = await this.#verifySignatureAndClaims(token, now)
    if (this.#verified.size >= VERIFIED_MAX) this.#verified.delete(this.#verified.keys().next().value!)
    this.#verified.set(digest, { payload, until: Math.min(now + VERIFIED_REUSE_MS, payload.exp! * 1000) })
    return payload
  }

  async #verifySignatureAndClaims(token: string, now: number): Promise<JWTPayload> {
    const options = {
      issuer: this.#issuer, audience: this.#audience, algorithms: ['RS256'], typ: 'at+jwt', currentDate: new Date(now),
      clockTolerance: CLOCK_TOLERANCE_S, requiredClaims: ['exp', 'iat', 'jti', 'sub', 'client_id', 'scope'],
    }
    let payload: JWTPayload
    try {
      payload = (await jwtVerify(token, await this.#keySet(now, token), options)).payload
    } catch (err) {
      throw unauthenticated(`the access token is not valid: ${describe(err)}`)
    }
    for (const claim of ['jti', 'sub', 'client_id', 'scope'] as const) {
      if (typeof payload[claim] !== 'string' || payload[claim] === '') throw unauthenticated(`the access token's ${claim} must be a string`)
    }
    return payload
  }

  /** The published keys, cached; read again when stale or when the token names a kid not among them. */
  async #keySet(now: number, token: string): Promise<ReturnType<typeof createLocalJWKSet>> {
    const kid = kidOf(token)
    const cached = this.#keys
    const stale = cached === undefined || now - cached.at > KEYS_FRESH_MS
    const unknownKid = cached !== undefined && kid !== undefined && !cached.kids.has(kid) && now - cached.at > UNKNOWN_KID_REREAD_MS
    if (stale || unknownKid) {
      const keys = await this.#deps.accounts.keys.published(now)
      this.#keys = { at: now, kids: new Set(keys.map((k) => k.kid)), set: createLocalJWKSet({ keys }) }
    }
    return this.#keys!.set
  }

  /** Null for a two-legged token (sub is the client); the user's number for a three-legged one. */
  async #phoneOf(sub: string, client: CamaraClient): Promise<string | null> {
    if (sub === client.clientId) {
      if (client.grantType !== 'client_credentials') throw unauthenticated('the token names no user, but its client is a three-legged one')
      return null
    }
    if (client.grantType !== 'authorization_code') throw unauthenticated('the token names a user, but its client is a two-legged one')
    const userId = this.#deps.accounts.subjects.userIdOf(sub, client.clientId)
    if (userId === null) throw unauthenticated('the token\'s subject is not one this service issued to its client')
    const row = await this.#deps.db.get<{ phone: string }>('SELECT phone FROM users WHERE user_id = $1', [userId])
    if (row === undefined) throw unauthenticated('the token\'s user no longer has an account')
    return row.phone
  }
}

function bearerToken(authorization: string | undefined): string {
  if (authorization === undefined || authorization === '') throw unauthenticated('an access token is required: Authorization: Bearer <token>')
  if (authorization.length > MAX_TOKEN) throw unauthenticated('the Authorization header is too long for an access token')
  const match = BEARER.exec(authorization)
  if (match === null) throw unauthenticated('the Authorization header must be Bearer and a JWT access token')
  return match[1]!
}

function kidOf(token: string): string | undefined {
  try {
    const header = JSON.parse(Buffer.from(token.slice(0, token.indexOf('.')), 'base64url').toString('utf8')) as { kid?: unknown }
    return typeof header.kid === 'string' ? header.kid : undefined
  } catch {
    return undefined
  }
}

function describe(err: unknown): string {
  if (err instanceof joseErrors.JWTExpired) return 'expired'
  if (err instanceof joseErrors.JWTClaimValidationFailed) {
    if (err.claim === 'typ') return 'not an access token (typ must be at+jwt)'
    return `claim ${err.claim} ${err.reason === 'check_failed' ? 'does not match' : 'is missing or invalid'}`
  }
  if (err instanceof joseErrors.JWKSNoMatchingKey) return 'signed by no key this provider publishes'
  if (err instanceof joseErrors.JWSSignatureVerificationFailed) return 'the signature does not verify'
  if (err instanceof joseErrors.JOSEAlgNotAllowed) return 'not RS256'
  return 'malformed'
}
