import { deriveUserSalt } from '../identity/zk-address.ts'
import { verifyIdToken } from './id-token.ts'
import type { Clients } from './clients.ts'
import type { SigningKeys } from './signing-keys.ts'

/**
 * The salt service (Mysten's request and answer shapes: `{ token }` -> `{ salt }`): the user's
 * zkLogin salt for a valid, unexpired id_token of this provider, the same salt that made the
 * zkAddress registration returned (HMAC of KNS_SECRET over issuer, audience and subject), as a
 * decimal string. Only the token's holder learns it; neither is ever logged.
 */
export async function saltFor(deps: { issuer: string; keys: SigningKeys; clients: Clients; secret: () => Buffer }, token: string): Promise<{ salt: string }> {
  const verified = await verifyIdToken(deps, token)
  return { salt: deriveUserSalt(deps.secret(), verified.iss, verified.aud, verified.sub).toString() }
}
