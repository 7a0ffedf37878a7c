/**
 * A bank as a CAMARA client of the service's provider in tests: a key pair of its own, its
 * public JWKS registered, private_key_jwt assertions, and token requests at the token endpoint.
 */
import { randomUUID } from 'node:crypto'
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWTPayload } from 'jose'
import type { CamaraGrantType } from '../../src/accounts/camara-clients.ts'
import { FRAUD_PREVENTION_PURPOSE } from '../../src/camara/access.ts'
import type { LoginServer } from './login.ts'

export const SIM_SWAP_SCOPE = `sim-swap:check sim-swap:retrieve-date ${FRAUD_PREVENTION_PURPOSE}`

export interface CamaraTestClient {
  clientId: string
  privateKey: CryptoKey
  kid: string
  alg: string
}

/** A key pair and its public JWK (kid set), for the JWKS a client registers. */
export async function clientKeyPair(alg: 'RS256' | 'PS256' | 'ES256' = 'ES256', kid = `k-${randomUUID().slice(0, 8)}`) {
  const { publicKey, privateKey } = await generateKeyPair(alg, { extractable: true })
  const publicJwk = { ...(await exportJWK(publicKey)), kid, alg, use: 'sig' }
  return { privateKey, publicJwk, kid, alg }
}

/** Registers a CAMARA client with a fresh key pair; returns what it signs with. */
export async function registerCamaraClient(server: LoginServer, options: {
  grantType?: CamaraGrantType; scope?: string; redirectUris?: string[]; alg?: 'RS256' | 'PS256' | 'ES256'; name?: string
} = {}): Promise<CamaraTestClient> {
  const { privateKey, publicJwk, kid, alg } = await clientKeyPair(options.alg)
  const grantType = options.grantType ?? 'client_credentials'
  const { client } = await server.h.service.accounts.clients.add({
    name: options.name ?? 'Acme Bank fraud checks', grantType, jwks: { keys: [publicJwk] },
    scope: options.scope ?? (grantType === 'authorization_code' ? `openid ${SIM_SWAP_SCOPE}` : SIM_SWAP_SCOPE),
    ...(options.redirectUris === undefined ? {} : { redirectUris: options.redirectUris }),
  })
  return { clientId: client.clientId, privateKey, kid, alg }
}

/** A private_key_jwt client assertion for the token endpoint; `claims` override the defaults (null removes one). */
export async function clientAssertion(server: LoginServer, client: CamaraTestClient, claims: Record<string, unknown> = {}): Promise<string> {
  const now = Math.floor(Date.now() / 1000)
  const payload: Record<string, unknown> = { iss: client.clientId, sub: client.clientId, aud: `${server.issuer}/token`, jti: randomUUID(), iat: now, exp: now + 120, ...claims }
  for (const [k, v] of Object.entries(payload)) if (v === null) delete payload[k]
  return new SignJWT(payload as JWTPayload).setProtectedHeader({ alg: client.alg, kid: client.kid, typ: 'JWT' }).sign(client.privateKey)
}

export interface TokenAnswer { status: number; body: Record<string, unknown> }

/** POSTs a form to the token endpoint. */
export async function tokenRequest(server: LoginServer, form: Record<string, string>, headers: Record<string, string> = {}): Promise<TokenAnswer> {
  const res = await fetch(`${server.issuer}/token`, {
    method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers }, body: new URLSearchParams(form).toString(),
  })
  return { status: res.status, body: await res.json() as Record<string, unknown> }
}

/** A two-legged token request authenticated with a fresh assertion. */
export async function clientCredentials(server: LoginServer, client: CamaraTestClient, extra: Record<string, string> = { scope: SIM_SWAP_SCOPE }, assertion?: string): Promise<TokenAnswer> {
  return tokenRequest(server, {
    grant_type: 'client_credentials',
    client_assertion_type: 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer',
    client_assertion: assertion ?? await clientAssertion(server, client),
    ...extra,
  })
}
