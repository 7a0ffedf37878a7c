import { Type } from 'typebox'
import { E164 } from './api-schemas.ts'

/** The login provider's interaction (logging in with a code sent to the number), the salt service and the prover step. */

export const InteractionParams = Type.Object({ uid: Type.String({ pattern: '^[A-Za-z0-9_-]{10,64}$', description: 'the login\'s interaction ID' }) })

export const InteractionDetails = Type.Object({
  uid: Type.String(),
  prompt: Type.String({ description: 'what the provider asks: `login`' }),
  client: Type.Object({ clientId: Type.String(), name: Type.String() }),
  expiresAt: Type.String({ format: 'date-time' }),
})

export const SendCodeRequest = Type.Object({ phoneNumber: E164 })
export const SendCodeResponse = Type.Object({
  sentTo: Type.String({ description: 'the number, masked (+44 *** *** 1234)' }),
  expiresInS: Type.Integer({ description: 'seconds the code is valid' }),
  resendAfterS: Type.Integer({ description: 'seconds before another code may be asked for' }),
})

export const LoginRequest = Type.Object({ code: Type.String({ pattern: '^[0-9]{6}$', description: 'the 6-digit code from the text message' }) })
export const RedirectResponse = Type.Object({ redirectTo: Type.String({ description: 'where the browser goes on (the provider, then the client)' }) })

export const SaltRequest = Type.Object({ token: Type.String({ minLength: 1, maxLength: 4096, description: 'an id_token of this provider' }) })
export const SaltResponse = Type.Object({ salt: Type.String({ pattern: '^[0-9]+$', description: 'the user\'s zkLogin salt, decimal' }) })

const Decimal = Type.String({ pattern: '^[0-9]{1,78}$' })
export const ProveRequest = Type.Object({
  jwt: Type.String({ minLength: 1, maxLength: 4096, description: 'the id_token whose nonce commits to the ephemeral key' }),
  extendedEphemeralPublicKey: Type.String({ minLength: 1, maxLength: 200, pattern: '^[A-Za-z0-9+/]+={0,2}$', description: 'the ephemeral Sui public key: flag byte and key, base64' }),
  maxEpoch: Type.Integer({ minimum: 0, maximum: 2 ** 53 - 1 }),
  jwtRandomness: Decimal,
  salt: Decimal,
  keyClaimName: Type.String({ maxLength: 32, description: 'must be `sub`' }),
})
export const ProveResponse = Type.Object({
  proofPoints: Type.Object({ a: Type.Array(Type.String()), b: Type.Array(Type.Array(Type.String())), c: Type.Array(Type.String()) }),
  issBase64Details: Type.Object({ value: Type.String(), indexMod4: Type.Integer() }),
  headerBase64: Type.String(),
})

export const EpochResponse = Type.Object({
  epoch: Type.Integer({ description: 'the ledger\'s current epoch' }),
  maxEpochAhead: Type.Integer({ description: 'how many epochs past the current one a zkLogin max epoch may be' }),
})

export const OidcClient = Type.Object({
  clientId: Type.String(),
  name: Type.String(),
  redirectUris: Type.Array(Type.String()),
  confidential: Type.Boolean(),
  builtIn: Type.Boolean({ description: 'the ZKLOGIN_CLIENT_ID client: its redirect URIs include $PUBLIC_BASE_URL/approve' }),
  createdAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
})
export const NewOidcClient = Type.Object({
  name: Type.String({ minLength: 1, maxLength: 64 }),
  redirectUris: Type.Array(Type.String({ minLength: 1, maxLength: 512 }), { minItems: 1, maxItems: 10, description: 'exact URIs as a browser writes them back: https, or http on localhost for development; no wildcard, fragment, credentials, backslash or whitespace' }),
  clientId: Type.Optional(Type.String({ pattern: '^[A-Za-z0-9][A-Za-z0-9._:-]{0,63}$', description: 'default: generated; starts with a letter or digit' })),
  confidential: Type.Optional(Type.Boolean({ description: 'a server-side client with a secret (shown once)' })),
})
export const CreatedOidcClient = Type.Object({ ...OidcClient.properties, clientSecret: Type.Union([Type.String(), Type.Null()]) })
export const OidcClientList = Type.Object({ clients: Type.Array(OidcClient) })
export const OidcClientParams = Type.Object({ clientId: Type.String({ pattern: '^[A-Za-z0-9][A-Za-z0-9._:-]{0,63}$' }) })
