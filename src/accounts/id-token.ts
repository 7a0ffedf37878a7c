import { createLocalJWKSet, errors as joseErrors, jwtVerify, type JWTPayload } from 'jose'
import { InvalidIdTokenError } from '../errors.ts'
import type { Clients } from './clients.ts'
import type { SigningKeys } from './signing-keys.ts'

/** A token of this provider as the salt service and the prover step accept it. */
export interface VerifiedIdToken {
  jwt: string
  iss: string
  sub: string
  aud: string
  nonce: string | undefined
  exp: number
  kid: string
}

const MAX_TOKEN = 4096
const COMPACT_JWS = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/

/**
 * A valid, unexpired id_token of this provider: RS256 by a key it publishes (the next and the
 * retired ones in their overlap included), its issuer, one audience that is one of its
 * clients. Anything else is INVALID_ID_TOKEN, saying which rule failed and never echoing the token.
 */
export async function verifyIdToken(deps: { issuer: string; keys: SigningKeys; clients: Clients }, token: string, now = Date.now()): Promise<VerifiedIdToken> {
  if (typeof token !== 'string' || token.length > MAX_TOKEN || !COMPACT_JWS.test(token)) {
    throw new InvalidIdTokenError('token is not a compact JWT', { field: 'token' })
  }
  const keys = createLocalJWKSet({ keys: await deps.keys.published(now) })
  let payload: JWTPayload
  let kid: string | undefined
  try {
    const verified = await jwtVerify(token, keys, { issuer: deps.issuer, algorithms: ['RS256'], currentDate: new Date(now), clockTolerance: 5, requiredClaims: ['sub', 'aud', 'exp', 'iat'] })
    payload = verified.payload
    kid = verified.protectedHeader.kid
  } catch (err) {
    throw new InvalidIdTokenError(`not a valid id_token of this provider: ${describe(err)}`, { field: 'token' })
  }
  const { sub, aud, nonce, exp } = payload
  if (typeof aud !== 'string') throw new InvalidIdTokenError('the token must have one audience (a string)', { field: 'token' })
  const client = await deps.clients.get(aud)
  if (client === null) throw new InvalidIdTokenError('the token\'s audience is not a client of this provider', { field: 'token' })
  // A CAMARA client's ID token (its user's pairwise subject) is for its own login, not a zkLogin credential.
  if (client.scope !== null) throw new InvalidIdTokenError('the token\'s audience is a CAMARA client, not a login client', { field: 'token' })
  return { jwt: token, iss: deps.issuer, sub: sub!, aud, nonce: typeof nonce === 'string' ? nonce : undefined, exp: exp!, kid: kid! }
}

function describe(err: unknown): string {
  if (err instanceof joseErrors.JWTExpired) return 'expired'
  if (err instanceof joseErrors.JWTClaimValidationFailed) return `claim ${err.claim} ${err.reason === 'check_failed' ? 'does not match' : 'is missing or invalid'}`
  if (err instanceof joseErrors.JWKSNoMatchingKey) return 'signed by no key this provider publishes'
  if (err instanceof joseErrors.JWSSignatureVerificationFailed) return 'signature does not verify'
  if (err instanceof joseErrors.JOSEAlgNotAllowed) return 'not RS256'
  return 'malformed'
}
