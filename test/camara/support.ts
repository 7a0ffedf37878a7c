/**
 * What the CAMARA tests need of the world, in one place: access tokens as the login provider
 * issues them (RFC 9068, signed with its current key, for a CAMARA client registered here with
 * every CAMARA scope; a three-legged one's `sub` is the user's pairwise subject for the client:
 * the provider's issuing side is tested in test/accounts/camara-*.test.ts, and the bank's whole
 * path gets its tokens from the token endpoint in test/camara/bank-path.test.ts), the change
 * records (written straight into sim_changes) and users for three-legged tokens.
 */
import { randomUUID } from 'node:crypto'
import { exportJWK, generateKeyPair, importJWK, SignJWT, type JWK } from 'jose'
import { ALL_CAMARA_SCOPES, camaraAudience, FRAUD_PREVENTION_PURPOSE } from '../../src/camara/access.ts'
import type { ChangeKind } from '../../src/swaps/latest-change.ts'
import type { Service } from '../../src/service.ts'

export const HOUR_MS = 3_600_000
export const DAY_MS = 24 * HOUR_MS

export interface TokenOptions {
  clientId?: string
  /** Space-separated in the token; default every CAMARA scope and the purpose. */
  scopes?: readonly string[]
  /** A three-legged token for this user (users.user_id); default two-legged (`sub` is the client). */
  userId?: string
  /** Seconds from now; negative for an expired token. Default 300. */
  expiresInS?: number
  audience?: string
  issuer?: string
  typ?: string
  /** Sign with a key the provider never published (a forged token). */
  foreignKey?: boolean
}

export const EVERY_SCOPE = [...ALL_CAMARA_SCOPES, FRAUD_PREVENTION_PURPOSE]

/** The CAMARA client a token is for, registered on first use (two- or three-legged, every CAMARA scope). */
async function ensureClient(service: Service, clientId: string, grantType: 'client_credentials' | 'authorization_code'): Promise<void> {
  const known = await service.accounts.clients.camara(clientId)
  if (known !== null) {
    if (known.grantType !== grantType) throw new Error(`test client ${clientId} is ${known.grantType}, not ${grantType}: use another clientId`)
    return
  }
  const { publicKey } = await generateKeyPair('ES256', { extractable: true })
  await service.accounts.clients.add({
    name: 'Acme Bank fraud engine', clientId, grantType, jwks: { keys: [{ ...(await exportJWK(publicKey)), kid: 'bank-1', alg: 'ES256', use: 'sig' }] },
    scope: [...(grantType === 'authorization_code' ? ['openid'] : []), ...EVERY_SCOPE].join(' '),
    ...(grantType === 'authorization_code' ? { redirectUris: ['https://bank.example/camara/callback'] } : {}),
  })
}

/** A JWT access token (RFC 9068) as the provider issues for the CAMARA APIs. */
export async function camaraToken(service: Service, options: TokenOptions = {}): Promise<string> {
  const clientId = options.clientId ?? (options.userId === undefined ? 'bank-fraud-engine' : 'bank-app')
  await ensureClient(service, clientId, options.userId === undefined ? 'client_credentials' : 'authorization_code')
  const now = Math.floor(Date.now() / 1000)
  const jwk = options.foreignKey === true ? await foreignJwk() : (await service.accounts.keys.forProvider())[0] as JWK
  return new SignJWT({ client_id: clientId, scope: (options.scopes ?? EVERY_SCOPE).join(' ') })
    .setProtectedHeader({ alg: 'RS256', typ: options.typ ?? 'at+jwt', kid: jwk.kid! })
    .setIssuer(options.issuer ?? service.accounts.provider.issuer)
    .setAudience(options.audience ?? camaraAudience(service.config.publicBaseUrl))
    .setSubject(options.userId === undefined ? clientId : service.accounts.subjects.subjectFor(options.userId, clientId))
    .setIssuedAt(now)
    .setExpirationTime(now + (options.expiresInS ?? 300))
    .setJti(randomUUID())
    .sign(await importJWK(jwk, 'RS256'))
}

let foreign: JWK | undefined
async function foreignJwk(): Promise<JWK> {
  if (foreign === undefined) {
    const { generateKeyPair, exportJWK } = await import('jose')
    const { privateKey } = await generateKeyPair('RS256', { extractable: true })
    foreign = { ...(await exportJWK(privateKey)), kid: 'not-published' }
  }
  return foreign
}

/** `Authorization` for a token. */
export const bearer = (token: string) => ({ authorization: `Bearer ${token}` })

/** A change record, as the operator reports it. */
export async function recordChange(service: Service, phone: string, kind: ChangeKind, changedAt: number): Promise<void> {
  await service.db.run(
    'INSERT INTO sim_changes (event_id, phone, kind, changed_at, approval_number, recorded_by, recorded_at) VALUES ($1, $2, $3, $4, NULL, $5, $6)',
    [randomUUID(), phone, kind, changedAt, 'test', Date.now()])
}

/** A user who logged in with `phone` (what a three-legged token's `sub` names). */
export async function addUser(service: Service, phone: string): Promise<string> {
  const userId = randomUUID()
  await service.db.run(
    'INSERT INTO users (user_id, phone, email, email_normalized, zk_address, created_at) VALUES ($1, $2, $3, $3, $4, $5)',
    [userId, phone, `${userId}@example.com`, `0x${'0'.repeat(64)}`, Date.now()])
  return userId
}

/** The monitored period the answers use (SIM_SWAP_MONITORED_DAYS), changed on the running service. */
export function setMonitoredDays(service: Service, days: number): void {
  service.config.simSwapMonitoredDays = days
}

/** The per-client CAMARA rate (DEFAULT_KEY_RATE, requests per second), changed on the running service. */
export function setCamaraRateLimit(service: Service, perSecond: number): void {
  service.config.defaultKeyRate = perSecond
}
