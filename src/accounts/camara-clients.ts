import { createPublicKey } from 'node:crypto'
import { ALL_CAMARA_SCOPES, FRAUD_PREVENTION_PURPOSE } from '../camara/access.ts'
import { ValidationError } from '../errors.ts'

/**
 * What a CAMARA client registers beyond a name (CAMARA Security and Interoperability Profile):
 * its grant, two-legged (`client_credentials`) or three-legged (`authorization_code`, the user
 * logs in with their number and consents); the public keys its `private_key_jwt` assertions
 * are signed with (the only client authentication CAMARA allows); the scopes it may ask for.
 * Everything is checked here, strictly, before anything is stored.
 */
export const CAMARA_GRANT_TYPES = ['client_credentials', 'authorization_code'] as const
export type CamaraGrantType = (typeof CAMARA_GRANT_TYPES)[number]

/**
 * Client assertion algorithms: RS256, the baseline every OAuth/OIDC stack has (and what our own
 * tokens use), and PS256 and ES256, the two FAPI 2.0 names. HS256 (client_secret_jwt) needs a
 * shared secret, which CAMARA's private_key_jwt rules out; EdDSA is left out as many bank
 * stacks' HSMs cannot sign with it yet (a later list can add it without breaking anyone).
 */
export const CLIENT_ASSERTION_ALGS = ['RS256', 'PS256', 'ES256'] as const
const ALGS_FOR_KTY: Record<string, readonly string[]> = { RSA: ['RS256', 'PS256'], EC: ['ES256'] }

/** A JWKS file is small: a few keys (one now, one next while it rotates). */
export const MAX_JWKS_BYTES = 16 * 1024
const MAX_KEYS = 5
const MIN_RSA_BITS = 2048
const MAX_RSA_BITS = 8192
const KID = /^[A-Za-z0-9._:-]{1,128}$/
/** Members of a public RSA or EC signing key; anything else (x5c, private parts, ...) is refused. */
const PUBLIC_MEMBERS = new Set(['kty', 'kid', 'use', 'alg', 'key_ops', 'n', 'e', 'crv', 'x', 'y'])
/** Private (or symmetric) key material: a JWKS that carries any is refused, naming the member. */
const PRIVATE_MEMBERS = ['d', 'p', 'q', 'dp', 'dq', 'qi', 'oth', 'k']

export interface PublicJwks { keys: Array<Record<string, unknown>> }

const jwksError = (message: string) => new ValidationError(`jwks: ${message}`, { field: 'jwks' })

/** A JSON Web Key Set of public signing keys, as stored and served (only the members listed above). */
export function checkJwks(input: unknown): PublicJwks {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) throw jwksError('a JSON Web Key Set is an object { "keys": [ ... ] }')
  const size = JSON.stringify(input).length
  if (size > MAX_JWKS_BYTES) throw jwksError(`at most ${MAX_JWKS_BYTES} bytes (this one is ${size})`)
  const extra = Object.keys(input).filter((k) => k !== 'keys')
  if (extra.length > 0) throw jwksError(`only "keys" is expected at the top level, not ${extra.map((k) => JSON.stringify(k)).join(', ')}`)
  const { keys } = input as { keys?: unknown }
  if (!Array.isArray(keys) || keys.length === 0 || keys.length > MAX_KEYS) throw jwksError(`"keys" must be an array of 1 to ${MAX_KEYS} keys`)
  const kids = new Set<string>()
  const checked = keys.map((key, i) => {
    const jwk = checkJwk(key, `keys[${i}]`)
    if (kids.has(jwk.kid as string)) throw jwksError(`keys[${i}]: kid ${JSON.stringify(jwk.kid)} is used twice (each key needs its own)`)
    kids.add(jwk.kid as string)
    return jwk
  })
  return { keys: checked }
}

function checkJwk(key: unknown, where: string): Record<string, unknown> {
  if (typeof key !== 'object' || key === null || Array.isArray(key)) throw jwksError(`${where} is not a JSON object`)
  const jwk = key as Record<string, unknown>
  const secret = PRIVATE_MEMBERS.filter((m) => m in jwk)
  if (secret.length > 0) {
    throw jwksError(`${where} carries private key material (${secret.join(', ')}): register the public keys only, and treat this private key as disclosed`)
  }
  const unknown = Object.keys(jwk).filter((m) => !PUBLIC_MEMBERS.has(m))
  if (unknown.length > 0) throw jwksError(`${where}: unexpected member(s) ${unknown.join(', ')} (a public RSA or EC signing key has ${[...PUBLIC_MEMBERS].join(', ')})`)
  const { kty, kid, use, alg, key_ops: keyOps } = jwk
  if (typeof kty !== 'string' || !(kty in ALGS_FOR_KTY)) throw jwksError(`${where}: kty must be RSA or EC`)
  if (typeof kid !== 'string' || !KID.test(kid)) throw jwksError(`${where}: kid is required, 1-128 of A-Z a-z 0-9 . _ : -`)
  if (use !== undefined && use !== 'sig') throw jwksError(`${where}: use must be "sig" (or absent)`)
  if (keyOps !== undefined && !(Array.isArray(keyOps) && keyOps.length === 1 && keyOps[0] === 'verify')) throw jwksError(`${where}: key_ops must be ["verify"] (or absent)`)
  if (alg !== undefined && !(typeof alg === 'string' && ALGS_FOR_KTY[kty]!.includes(alg))) {
    throw jwksError(`${where}: alg must be one of ${ALGS_FOR_KTY[kty]!.join(', ')} for a ${kty} key (or absent)`)
  }
  if (kty === 'EC' && jwk.crv !== 'P-256') throw jwksError(`${where}: an EC key must be on P-256 (ES256)`)
  let parsed
  try {
    parsed = createPublicKey({ key: jwk as never, format: 'jwk' })
  } catch {
    throw jwksError(`${where}: not a valid ${kty} public key`)
  }
  if (parsed.type !== 'public') throw jwksError(`${where}: not a public key`)
  if (kty === 'RSA') {
    const bits = parsed.asymmetricKeyDetails?.modulusLength ?? 0
    if (bits < MIN_RSA_BITS || bits > MAX_RSA_BITS) throw jwksError(`${where}: an RSA key must have ${MIN_RSA_BITS} to ${MAX_RSA_BITS} bits (this one has ${bits})`)
  }
  return Object.fromEntries(Object.entries(jwk).filter(([m]) => PUBLIC_MEMBERS.has(m)))
}

/** What a CAMARA client may be registered for: the API scopes, the purpose, and openid (three-legged only). */
export function registrableScopes(grantType: CamaraGrantType): Set<string> {
  return new Set([...ALL_CAMARA_SCOPES, FRAUD_PREVENTION_PURPOSE, ...(grantType === 'authorization_code' ? ['openid'] : [])])
}

/** The registered scopes, space-separated as OAuth writes them: known, at least one API scope, and the purpose. */
export function checkRegisteredScope(grantType: CamaraGrantType, input: string | readonly string[] | undefined): string[] {
  const field = { field: 'scope' }
  const list = typeof input === 'string' ? input.split(/\s+/) : [...(input ?? [])]
  const scopes = [...new Set(list.filter((s) => s !== ''))]
  if (scopes.length === 0) throw new ValidationError(`scope is required for a ${grantType} client: its CAMARA scopes and ${FRAUD_PREVENTION_PURPOSE}`, field)
  const allowed = registrableScopes(grantType)
  const unknown = scopes.filter((s) => !allowed.has(s))
  if (unknown.length > 0) {
    throw new ValidationError(`scope: ${unknown.map((s) => JSON.stringify(s.slice(0, 100))).join(', ')} cannot be registered; a ${grantType} client takes ${[...allowed].join(', ')}`, field)
  }
  if (!scopes.includes(FRAUD_PREVENTION_PURPOSE)) throw new ValidationError(`scope must include the purpose ${FRAUD_PREVENTION_PURPOSE}`, field)
  if (!scopes.some((s) => ALL_CAMARA_SCOPES.includes(s))) throw new ValidationError('scope must include at least one CAMARA API scope (sim-swap, device-swap, ...)', field)
  return scopes
}
