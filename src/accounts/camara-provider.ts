import { errors, type Configuration, type KoaContextWithOIDC } from 'oidc-provider'
import { camaraAudience, FRAUD_PREVENTION_PURPOSE } from '../camara/access.ts'
import { CAMARA_CLIENT_AUTH, type CamaraClient, type Clients } from './clients.ts'
import { CLIENT_ASSERTION_ALGS } from './camara-clients.ts'
import type { PairwiseSubjects } from './pairwise-subjects.ts'

/**
 * The provider's CAMARA rules (Security and Interoperability Profile), each a small named step
 * plugged into oidc-provider where the library asks: the client assertion's lifetime, the one
 * resource server (the CAMARA APIs of this service, audience `camaraAudience(PUBLIC_BASE_URL)`)
 * and its JWT access tokens (RFC 9068), the scope and purpose rules, pairwise subjects. A login
 * (zkLogin) client is never a CAMARA client (no login client uses private_key_jwt) and meets
 * none of these steps: for it every hook answers as the library's default did.
 */

/**
 * Access tokens for the CAMARA APIs live 5 minutes: a bank asks for one per burst of checks (a
 * client assertion is good for 300 s too), and a token cannot be recalled before it expires.
 */
export const CAMARA_ACCESS_TOKEN_TTL_S = 300
/** CAMARA: an assertion may not expire more than 300 s after its receipt, nor live more than 300 s. */
export const MAX_ASSERTION_LIFETIME_S = 300
/** Clock skew allowed between a client and this server on these rules (the library allows 15 s on exp itself). */
const ASSERTION_SKEW_S = 5
const PURPOSE_PREFIX = 'dpv:'

export function isCamaraClient(client: { tokenEndpointAuthMethod?: string } | undefined): boolean {
  return client?.tokenEndpointAuthMethod === CAMARA_CLIENT_AUTH
}

/** Step: the client assertion is short-lived (checked after its signature, before its jti is recorded). */
export function assertionLifetime(claims: { exp?: unknown; iat?: unknown }, now = Math.floor(Date.now() / 1000)): void {
  const { exp, iat } = claims
  if (typeof exp !== 'number') throw new errors.InvalidClientAuth('the client assertion must have a numeric exp')
  if (exp > now + MAX_ASSERTION_LIFETIME_S + ASSERTION_SKEW_S) {
    throw new errors.InvalidClientAuth(`the client assertion expires more than ${MAX_ASSERTION_LIFETIME_S} s from now (CAMARA: at most ${MAX_ASSERTION_LIFETIME_S} s)`)
  }
  if (iat === undefined) return
  if (typeof iat !== 'number') throw new errors.InvalidClientAuth('the client assertion\'s iat must be a number')
  if (iat > now + ASSERTION_SKEW_S) throw new errors.InvalidClientAuth('the client assertion is issued in the future (iat)')
  if (exp - iat > MAX_ASSERTION_LIFETIME_S) {
    throw new errors.InvalidClientAuth(`the client assertion lives ${exp - iat} s (exp - iat); CAMARA allows at most ${MAX_ASSERTION_LIFETIME_S} s`)
  }
}

/**
 * Step: a signed authentication request (JAR) of a CAMARA client follows the profile: iss, aud,
 * iat, exp and jti present; not issued in the future; at most 300 s between iat and exp; scope,
 * response_type, client_id and redirect_uri also sent as plain parameters, with the same values
 * (the library then uses the signed ones only). Checked before the library verifies the
 * signature with the client's keys. Login clients never sent request objects: they may not.
 */
export function requestObjectRules(outer: Record<string, unknown>, claims: Record<string, unknown>, camara: boolean, now = Math.floor(Date.now() / 1000)): void {
  if (!camara) throw new errors.InvalidRequestObject('request objects are taken from CAMARA clients only')
  for (const claim of ['iss', 'aud', 'iat', 'exp', 'jti']) {
    if (claims[claim] === undefined) throw new errors.InvalidRequestObject(`the request object must have ${claim} (CAMARA)`)
  }
  const { iat, exp } = claims as { iat: unknown; exp: unknown }
  if (typeof iat !== 'number' || typeof exp !== 'number') throw new errors.InvalidRequestObject('the request object\'s iat and exp must be numbers')
  if (iat > now + ASSERTION_SKEW_S) throw new errors.InvalidRequestObject('the request object is issued in the future (iat)')
  if (exp - iat > MAX_ASSERTION_LIFETIME_S) {
    throw new errors.InvalidRequestObject(`the request object lives ${exp - iat} s (exp - iat); CAMARA allows at most ${MAX_ASSERTION_LIFETIME_S} s`)
  }
  for (const param of ['scope', 'response_type', 'client_id', 'redirect_uri']) {
    if (outer[param] === undefined || outer[param] !== claims[param]) {
      throw new errors.InvalidRequestObject(`${param} must be sent both as a parameter and in the request object, with the same value (CAMARA)`)
    }
  }
}

/**
 * Step: what the client asks for is allowed. The scope is required; exactly one purpose
 * (`dpv:`), the one this service serves; at least one CAMARA API scope; nothing the client was
 * not registered for (invalid_scope, naming the first offender).
 */
export function requestedScopeAllowed(scope: string | undefined, client: CamaraClient): void {
  const scopes = [...new Set((scope ?? '').split(' ').filter(Boolean))]
  if (scopes.length === 0) throw new errors.InvalidRequest(`scope is required: the CAMARA scopes and the purpose ${FRAUD_PREVENTION_PURPOSE}`)
  const purposes = scopes.filter((s) => s.startsWith(PURPOSE_PREFIX))
  if (purposes.length !== 1) {
    throw new errors.InvalidScope(`exactly one purpose (a ${PURPOSE_PREFIX} scope) is required, found ${purposes.length}; this service serves ${FRAUD_PREVENTION_PURPOSE}`, purposes.join(' '))
  }
  if (purposes[0] !== FRAUD_PREVENTION_PURPOSE) throw new errors.InvalidScope(`the purpose ${purposes[0]} is not served here; this service serves ${FRAUD_PREVENTION_PURPOSE}`, purposes[0]!)
  const outside = scopes.find((s) => !client.scopes.has(s))
  if (outside !== undefined) throw new errors.InvalidScope(`scope ${outside.slice(0, 100)} is not registered for this client`, outside)
  if (!scopes.some((s) => s !== 'openid' && !s.startsWith(PURPOSE_PREFIX))) throw new errors.InvalidScope('at least one CAMARA API scope is required besides the purpose', scopes.join(' '))
}

/** Where the scope is the request's own: the authorization request (and its resumption), and a client credentials token request. */
function scopeIsRequested(ctx: KoaContextWithOIDC): boolean {
  const route = ctx.oidc.route
  return route === 'authorization' || route === 'resume' || (route === 'token' && ctx.oidc.params?.grant_type === 'client_credentials')
}

export interface CamaraProviderDeps { publicBaseUrl: string; clients: Clients; subjects: PairwiseSubjects }

/** The configuration entries the CAMARA rules set; provider.ts merges them into its own. */
export function camaraConfiguration(deps: CamaraProviderDeps): Pick<Configuration, 'assertJwtClientAuthClaimsAndHeader' | 'pairwiseIdentifier' | 'subjectTypes' | 'enabledJWA'> & {
  features: Pick<NonNullable<Configuration['features']>, 'clientCredentials' | 'resourceIndicators' | 'requestObjects'>
} {
  const audience = camaraAudience(deps.publicBaseUrl)
  return {
    // Signed by the client's registered keys: the same algorithms as its assertions (no HS256, which would need a secret).
    enabledJWA: { clientAuthSigningAlgValues: [...CLIENT_ASSERTION_ALGS], requestObjectSigningAlgValues: [...CLIENT_ASSERTION_ALGS] },
    async assertJwtClientAuthClaimsAndHeader(_ctx, claims) {
      assertionLifetime(claims)
    },
    subjectTypes: ['public', 'pairwise'],
    // Only CAMARA three-legged clients are pairwise (their metadata says so).
    async pairwiseIdentifier(_ctx, accountId, client) {
      return deps.subjects.subjectFor(accountId, client.clientId)
    },
    features: {
      clientCredentials: { enabled: true },
      // CAMARA: the authorization server MUST support signed authentication requests (the `request` parameter).
      requestObjects: {
        enabled: true,
        requireSignedRequestObject: false,
        async assertJwtClaimsAndHeader(ctx, claims, _header, client) {
          requestObjectRules(ctx.oidc.params as Record<string, unknown>, claims as Record<string, unknown>, isCamaraClient(client))
        },
      },
      resourceIndicators: {
        enabled: true,
        // A CAMARA client's request without `resource` is for the CAMARA APIs (CAMARA: `scope` alone is enough).
        async defaultResource(_ctx, client, oneOf) {
          if (oneOf) return oneOf
          return isCamaraClient(client) ? audience : (undefined as unknown as string)
        },
        // The code's resource (the CAMARA APIs) makes the token at the token endpoint, though openid was asked too.
        async useGrantedResource(ctx) {
          return isCamaraClient(ctx.oidc.client)
        },
        async getResourceServerInfo(ctx, indicator, client) {
          const camara = isCamaraClient(client) ? await deps.clients.camara(client.clientId) : null
          if (camara === null) throw new errors.InvalidTarget('this client may not ask for a resource')
          if (indicator !== audience) throw new errors.InvalidTarget(`the one resource served here is ${audience}`)
          if (scopeIsRequested(ctx)) requestedScopeAllowed(ctx.oidc.params?.scope as string | undefined, camara)
          return {
            audience,
            scope: [...camara.scopes].filter((s) => s !== 'openid').join(' '),
            accessTokenFormat: 'jwt',
            accessTokenTTL: CAMARA_ACCESS_TOKEN_TTL_S,
            jwt: { sign: { alg: 'RS256' } },
          }
        },
      },
    },
  }
}

/**
 * The grant a login resumes with. A login client's scopes are granted without a consent screen
 * (every one is the operator's own), as always. A CAMARA client's never are: the user consents
 * to the client and the purpose on every authorization (there is no screen to take a remembered
 * consent back), so only the grant that consent step just made is loaded; otherwise a new grant
 * with openid alone, and the interaction asks for consent to the CAMARA scopes.
 */
export async function loadGrant(ctx: KoaContextWithOIDC, loginScopes: string): Promise<InstanceType<KoaContextWithOIDC['oidc']['provider']['Grant']> | undefined> {
  const { client, session, provider } = ctx.oidc
  if (client === undefined || session?.accountId === undefined) return undefined
  const consented = ctx.oidc.result?.consent?.grantId
  if (isCamaraClient(client)) {
    if (consented !== undefined) {
      const grant = await provider.Grant.find(consented)
      if (grant !== undefined && grant.clientId === client.clientId && grant.accountId === session.accountId) return grant
    }
    const grant = new provider.Grant({ clientId: client.clientId, accountId: session.accountId })
    if (ctx.oidc.requestParamOIDCScopes.has('openid')) grant.addOIDCScope('openid')
    await grant.save()
    return grant
  }
  const grantId = consented ?? session.grantIdFor(client.clientId)
  const grant = (grantId === undefined ? undefined : await provider.Grant.find(grantId))
    ?? new provider.Grant({ clientId: client.clientId, accountId: session.accountId })
  grant.addOIDCScope(loginScopes)
  await grant.save()
  return grant
}
