/**
 * Who calls a CAMARA API, as the access token says (src/camara/access-token.ts verifies it):
 * the client registered with the login provider, the scopes granted to it, and, for a
 * three-legged token (authorization code: a user logged in with their number and consented),
 * that number. A two-legged token (client credentials) names no number: the request must.
 */
export interface CamaraAccess {
  clientId: string
  scopes: ReadonlySet<string>
  /** The number the token was issued for (three-legged), or null (two-legged). */
  phoneNumber: string | null
  /** The token's `jti`, for logs and traces (never the token itself). */
  tokenId: string
}

/** The purpose every CAMARA token of this service must carry (CAMARA Security and Interoperability Profile, "Purpose as a scope"). */
export const FRAUD_PREVENTION_PURPOSE = 'dpv:FraudPreventionAndDetection'

/** The CAMARA scopes this service grants, by API (the API definitions' `security` sections). */
export const CAMARA_SCOPES = {
  simSwap: ['sim-swap', 'sim-swap:check', 'sim-swap:retrieve-date'],
  deviceSwap: ['device-swap', 'device-swap:check', 'device-swap:retrieve-date'],
  simSwapSubscriptions: [
    'sim-swap-subscriptions:org.camaraproject.sim-swap-subscriptions.v0.swapped:create',
    'sim-swap-subscriptions:read',
    'sim-swap-subscriptions:delete',
  ],
} as const
export const ALL_CAMARA_SCOPES: readonly string[] = [...CAMARA_SCOPES.simSwap, ...CAMARA_SCOPES.deviceSwap, ...CAMARA_SCOPES.simSwapSubscriptions]

/** Does the token allow the operation: any one of `anyOf` (CAMARA lists alternatives, e.g. `sim-swap:check` or `sim-swap`). */
export function allows(access: CamaraAccess, anyOf: readonly string[]): boolean {
  return anyOf.some((scope) => access.scopes.has(scope))
}

/**
 * The audience (RFC 8707 resource indicator, RFC 9068 `aud`) of every CAMARA access token of
 * this service: the API root, `{apiRoot}` of the CAMARA definitions' servers (the public base
 * URL): one token serves SIM Swap, Device Swap and the subscriptions, as its scopes allow.
 */
export function camaraAudience(publicBaseUrl: string): string {
  return publicBaseUrl.replace(/\/+$/, '')
}
