import { createHash } from 'node:crypto'
import { createLocalJWKSet, errors as joseErrors, jwtVerify, type JSONWebKeySet, type JWTPayload } from 'jose'
import type { Executor } from '../db/engine.ts'
import type { CamaraAccess } from './access.ts'
import { CamaraError } from './camara-error.ts'

/** Published keys are re-read at most this often (a token signed by a key not seen yet re-reads at once). */
const KEY_CACHE_MS = 5000
/**
 * A token verified is taken again without its RS256 signature check (most of a call's CPU) for
 * this long, never past its `exp`: a bank sends one token for many calls. A key withdrawn or a
 * user removed is noticed within it.
 */
const VERIFIED_REUSE_MS = 60_000
/** Tokens remembered at most (the oldest forgotten first). */
const VERIFIED_MAX = 4096

export interface CamaraTokenDeps {
  db: Executor
  /** The login provider's published signing keys (its JWKS). */
  keys: { published(): Promise<Array<{ kid: string }>> }
  /** The provider's issuer (`iss`). */
  issuer: string
  /** camaraAudience(PUBLIC_BASE_URL): the `aud` every CAMARA token carries. */
  audience: string
}

/** Every refusal says the same (Commonalities: "a non-descriptive generic error ... whatever the reason"). */
const UNAUTHENTICATED = 'Request not authenticated due to missing, invalid, or expired credentials.'
const refused = () => new CamaraError(401, 'UNAUTHENTICATED', UNAUTHENTICATED)

/**
 * The CAMARA access token of a request (`Authorization: Bearer <JWT>`, RFC 9068), verified
 * into the CamaraAccess it grants: signed by our login provider with a key it publishes, typed
 * `at+jwt`, issued by it, for the CAMARA audience, not expired; its `client_id`, `scope` and
 * `jti`; and the subject: the client itself (two-legged, client credentials) or a user whose
 * number the token is for (three-legged). Anything else is 401 UNAUTHENTICATED.
 */
export class CamaraTokens {
  readonly #deps: CamaraTokenDeps
  #keySet: { at: number; kids: Set<string>; jwks: ReturnType<typeof createLocalJWKSet> } | undefined
  /** By the token's SHA-256 (a lookup by the token itself would time its characters). */
  readonly #verified = new Map<string, { access: CamaraAccess & { expiresAt: number }; until: number }>()

  constructor(deps: CamaraTokenDeps) {
    this.#deps = deps
  }

  async verify(authorization: string | undefined): Promise<CamaraAccess> {
    const token = bearerToken(authorization)
    const digest = createHash('sha256').update(token).digest('base64url')
    const now = Date.now()
    const known = this.#verified.get(digest)
    if (known !== undefined && now < known.until) return known.access
    if (known !== undefined) this.#verified.delete(digest)
    const access = await this.#verifyToken(token)
    if (this.#verified.size >= VERIFIED_MAX) this.#verified.delete(this.#verified.keys().next().value!)
    this.#verified.set(digest, { access, until: Math.min(now + VERIFIED_REUSE_MS, access.expiresAt) })
    return access
  }

  async #verifyToken(token: string): Promise<CamaraAccess & { expiresAt: number }> {
    let payload: JWTPayload
    try {
      ({ payload } = await jwtVerify(token, await this.#keysFor(token), {
        issuer: this.#deps.issuer, audience: this.#deps.audience, typ: 'at+jwt', algorithms: ['RS256'],
        requiredClaims: ['exp', 'sub', 'client_id', 'jti'],
      }))
    } catch (err) {
      if (err instanceof joseErrors.JOSEError || err instanceof TypeError) throw refused()
      throw err
    }
    return { ...accessClaims(payload), phoneNumber: await this.#subjectPhone(payload), expiresAt: payload.exp! * 1000 }
  }

  /** The JWKS, re-read when stale or when the token names a key it does not hold (a rotation). */
  async #keysFor(token: string): Promise<ReturnType<typeof createLocalJWKSet>> {
    const kid = headerKid(token)
    const now = Date.now()
    const cached = this.#keySet
    if (cached !== undefined && now - cached.at < KEY_CACHE_MS && (kid === undefined || cached.kids.has(kid))) return cached.jwks
    const keys = await this.#deps.keys.published()
    this.#keySet = { at: now, kids: new Set(keys.map((k) => k.kid)), jwks: createLocalJWKSet({ keys } as unknown as JSONWebKeySet) }
    return this.#keySet.jwks
  }

  /** Two-legged: `sub` is the client, no number. Three-legged: `sub` is a user, and the token is for their number. */
  async #subjectPhone(payload: JWTPayload): Promise<string | null> {
    if (payload.sub === payload.client_id) return null
    const row = await this.#deps.db.get<{ phone: string }>('SELECT phone FROM users WHERE user_id = $1', [payload.sub])
    if (row === undefined) throw refused()
    return row.phone
  }
}

/** The token of `Authorization: Bearer <token>` (RFC 6750; the scheme is case-insensitive). */
function bearerToken(authorization: string | undefined): string {
  const match = /^Bearer +([A-Za-z0-9._~+/-]+=*) *$/i.exec(authorization ?? '')
  if (match === null) throw refused()
  return match[1]!
}

function headerKid(token: string): string | undefined {
  try {
    const header = JSON.parse(Buffer.from(token.split('.', 1)[0]!, 'base64url').toString('utf8')) as { kid?: unknown }
    return typeof header.kid === 'string' ? header.kid : undefined
  } catch {
    return undefined
  }
}

function accessClaims(payload: JWTPayload): Omit<CamaraAccess, 'phoneNumber'> {
  const { client_id: clientId, scope, jti } = payload as { client_id?: unknown; scope?: unknown; jti?: unknown }
  if (typeof clientId !== 'string' || typeof jti !== 'string' || (scope !== undefined && typeof scope !== 'string')) throw refused()
  return { clientId, tokenId: jti, scopes: new Set((scope ?? '').split(' ').filter(Boolean)) }
}
