import { Type } from 'typebox'
import { E164 } from './api-schemas.ts'

/** The login provider's interaction (logging in with a code sent to the number), the salt service and the prover step. */

export const InteractionParams = Type.Object({ uid: Type.String({ pattern: '^[A-Za-z0-9_-]{10,64}$', description: 'the login\'s interaction ID' }) })

const DescribedScope = Type.Object({ scope: Type.String(), description: Type.String({ description: 'the scope in words, for the person asked' }) })
export const ConsentAsked = Type.Object({
  scopes: Type.Array(DescribedScope, { description: 'what the client will be able to learn or do about the number (CAMARA scopes)' }),
  purpose: Type.Object({ ...DescribedScope.properties }, { description: 'why: the purpose the client declared (a `dpv:` scope)' }),
})

export const InteractionDetails = Type.Object({
  uid: Type.String(),
  prompt: Type.String({ description: 'what the provider asks: `login` (the number, then the code), or `consent` (a CAMARA client\'s access to the number)' }),
  client: Type.Object({ clientId: Type.String(), name: Type.String() }),
  expiresAt: Type.String({ format: 'date-time' }),
  consent: Type.Optional(Type.Union([ConsentAsked, Type.Null()], { description: 'with prompt `consent`: what the client asks for and why' })),
})

export const ConsentRequest = Type.Object({
  decision: Type.Union([Type.Literal('approve'), Type.Literal('deny')], { description: '`deny` sends the client access_denied' }),
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
  grantTypes: Type.Array(Type.String(), { description: 'a login client: authorization_code and implicit; a CAMARA client: client_credentials or authorization_code' }),
  scope: Type.Union([Type.String(), Type.Null()], { description: 'a CAMARA client\'s registered scopes, space-separated; null for a login client' }),
  keyIds: Type.Array(Type.String(), { description: 'the kids of a CAMARA client\'s registered public keys' }),
})
export const NewOidcClient = Type.Object({
  name: Type.String({ minLength: 1, maxLength: 64 }),
  redirectUris: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 512 }), { maxItems: 10, description: 'exact URIs as a browser writes them back: https, or http on localhost for development; no wildcard, fragment, credentials, backslash or whitespace. Required (1-10) but for a client_credentials client, which has none' })),
  clientId: Type.Optional(Type.String({ pattern: '^[A-Za-z0-9][A-Za-z0-9._:-]{0,63}$', description: 'default: generated; starts with a letter or digit' })),
  confidential: Type.Optional(Type.Boolean({ description: 'a server-side login client with a secret (shown once); not for CAMARA clients' })),
  grantType: Type.Optional(Type.Union([Type.Literal('client_credentials'), Type.Literal('authorization_code')], {
    description: 'a CAMARA client: two-legged (client_credentials) or three-legged (authorization_code, with the number\'s login and a consent step); it authenticates with private_key_jwt',
  })),
  jwks: Type.Optional(Type.Object({ keys: Type.Array(Type.Record(Type.String(), Type.Unknown()), { minItems: 1, maxItems: 5 }) }, {
    description: 'a CAMARA client\'s JSON Web Key Set: public RSA (RS256, PS256; 2048-8192 bits) or P-256 (ES256) keys, each with its own kid; any private member is refused',
  })),
  scope: Type.Optional(Type.String({ maxLength: 1024, description: 'a CAMARA client\'s scopes, space-separated: CAMARA scopes, the purpose dpv:FraudPreventionAndDetection, and openid (three-legged only)' })),
})
export const CreatedOidcClient = Type.Object({ ...OidcClient.properties, clientSecret: Type.Union([Type.String(), Type.Null()]) })
export const OidcClientList = Type.Object({ clients: Type.Array(OidcClient) })
export const OidcClientParams = Type.Object({ clientId: Type.String({ pattern: '^[A-Za-z0-9][A-Za-z0-9._:-]{0,63}$' }) })
