import { createHmac } from 'node:crypto'
import type { IncomingMessage, ServerResponse } from 'node:http'
import Provider, { errors, type Configuration, type KoaContextWithOIDC } from 'oidc-provider'
import type { Config } from '../config.ts'
import type { ChangeWatcher } from '../db/change-signal.ts'
import { ACCOUNTS_TOPIC } from '../db/change-topics.ts'
import type { Database } from '../db/engine.ts'
import { isDatabaseUnavailable } from '../db/unavailable.ts'
import { DatabaseUnavailableError } from '../errors.ts'
import { needsJsonEscape } from '../lib/zklogin-limits.ts'
import { findAccountClaims } from './account-claims.ts'
import { camaraConfiguration, loadGrant } from './camara-provider.ts'
import type { Clients } from './clients.ts'
import type { PairwiseSubjects } from './pairwise-subjects.ts'
import { adapterFactory } from './provider-adapter.ts'
import { KEYS_CHANGED, type SigningKeys } from './signing-keys.ts'

/**
 * The service's OpenID provider (oidc-provider by panva, OpenID Certified): the issuer of every
 * user's zkLogin identity, served at the path of ZKLOGIN_ISSUER. Authorization code with PKCE
 * (S256) and the implicit id_token flow with a required nonce (what zkLogin uses); clients
 * registered by the operator; all state in our database; RS256 keys from SigningKeys. Logging
 * in is our interaction (a code sent to the number, src/accounts/login-codes.ts). CAMARA
 * clients (client credentials, or the code flow with a consent step) get JWT access tokens for
 * the CAMARA APIs: src/accounts/camara-provider.ts.
 */
export interface LoginProviderDeps {
  config: Config
  db: Database
  keys: SigningKeys
  clients: Clients
  subjects: PairwiseSubjects
  secret: () => Buffer
}

/** Scopes and the claims each brings (into the id_token too: zkLogin reads only the id_token). */
const CLAIMS = {
  openid: ['sub'],
  profile: ['preferred_username'],
  phone: ['phone_number', 'phone_number_verified'],
  email: ['email', 'email_verified'],
}
const SCOPES = Object.keys(CLAIMS).join(' ')
/** A nonce is a claim the circuit reads raw: printable ASCII without escapes; zkLogin's is 27 characters. */
const MAX_NONCE = 128
/** How often the key set is compared with the database (a retired key's overlap may have ended). */
const KEY_CHECK_MS = 60_000

export class LoginProvider {
  readonly issuer: string
  /** Where the provider is served: the issuer's path (e.g. `/oidc`). */
  readonly mountPath: string
  readonly #deps: LoginProviderDeps
  #provider: Provider | undefined
  #handler: ((req: IncomingMessage, res: ServerResponse) => void) | undefined
  #kids = ''
  #keyCheck: NodeJS.Timeout | undefined
  /** Told why a token or authorization request was refused (the server logs it: Accounts). */
  onRefused: ((refused: ProviderRefusal) => void) | undefined

  constructor(deps: LoginProviderDeps) {
    this.#deps = deps
    this.issuer = deps.config.zkLoginIssuer
    this.mountPath = new URL(this.issuer).pathname.replace(/\/+$/, '')
  }

  /** Builds the provider (creating the first keys if there are none), and keeps its key set current. */
  async start(changes: ChangeWatcher | null): Promise<void> {
    await this.#deps.keys.ensure()
    await this.#build()
    changes?.on('change', (topic, subject) => {
      if (topic === ACCOUNTS_TOPIC && (subject === null || subject === KEYS_CHANGED)) void this.refresh()
    })
    // A retired key leaves the JWKS when its overlap ends, with or without a rotation.
    this.#keyCheck = setInterval(() => void this.refresh(), KEY_CHECK_MS).unref()
  }

  get provider(): Provider {
    if (this.#provider === undefined) throw new Error('the login provider has not started')
    return this.#provider
  }

  /** Serves one request under the mount path (the URL as the client sent it). */
  handle(req: IncomingMessage, res: ServerResponse): void {
    const original = req.url ?? '/'
    ;(req as IncomingMessage & { originalUrl?: string }).originalUrl = original
    req.url = original.slice(this.mountPath.length) || '/'
    if (!req.url.startsWith('/')) req.url = `/${req.url}`
    this.#handler!(req, res)
  }

  close(): void {
    clearInterval(this.#keyCheck)
  }

  /** Rebuilds the provider when the published key set changed (a rotation, an overlap ended). */
  async refresh(): Promise<void> {
    try {
      const kids = (await this.#deps.keys.published()).map((k) => k.kid).join(',')
      if (kids !== this.#kids) await this.#build()
    } catch {
      // The database is away: the current key set keeps serving; the next check tries again.
    }
  }

  async #build(): Promise<void> {
    const keys = await this.#deps.keys.forProvider()
    const provider = new Provider(this.issuer, this.#configuration(keys))
    // Whether and how far to believe X-Forwarded-For is decided once, by the HTTP layer
    // (TRUST_PROXY): the route that hands requests over rewrites it to what it derived, so
    // Koa takes the one nearest value (src/http/routes/accounts.ts). Host and scheme are
    // never taken from a request: they are the issuer's.
    provider.proxy = this.#deps.config.trustProxy !== false
    provider.maxIpsCount = 1
    pinOrigin(provider, this.issuer)
    allowDevelopmentRedirects(provider)
    provider.use(databaseUnavailableAs503)
    provider.use(securityHeaders)
    provider.use(cachePublicDocuments)
    provider.on('server_error', markDatabaseUnavailable)
    // A refused token or authorization request answers only `invalid_client` and the like (the
    // client learns nothing it could probe with); why is the operator's to read, in the log.
    provider.on('grant.error', (ctx: KoaContextWithOIDC, err: RefusalDetail) => this.onRefused?.(refusal('token', ctx, err)))
    provider.on('authorization.error', (ctx: KoaContextWithOIDC, err: RefusalDetail) => this.onRefused?.(refusal('authorization', ctx, err)))
    this.#provider = provider
    this.#handler = provider.callback()
    this.#kids = keys.map((k) => (k as { kid?: string }).kid).join(',')
  }

  #configuration(keys: object[]): Configuration {
    const { db, clients, secret, config, subjects } = this.#deps
    const camara = camaraConfiguration({ publicBaseUrl: config.publicBaseUrl, clients, subjects })
    const interactionBase = `${new URL(this.issuer).origin}${this.mountPath}/interaction`
    return {
      adapter: adapterFactory(db, clients),
      jwks: { keys: keys as NonNullable<Configuration['jwks']>['keys'] },
      async findAccount(_ctx, sub) {
        const claims = await findAccountClaims(db, sub)
        return claims === null ? undefined : { accountId: sub, claims: () => ({ ...claims }) }
      },
      claims: CLAIMS,
      // zkLogin reads the id_token only: the scopes' claims go into it whatever else is issued.
      conformIdTokenClaims: false,
      responseTypes: ['code', 'id_token'],
      pkce: { required: () => true },
      scopes: SCOPES.split(' '),
      cookies: {
        keys: [createHmac('sha256', secret()).update('kns/oidc-cookies/v1').digest('base64url')],
        long: { signed: true, httpOnly: true, sameSite: 'lax' },
        short: { signed: true, httpOnly: true, sameSite: 'lax' },
      },
      ttl: {
        AuthorizationCode: 60,
        IdToken: 600,
        // A CAMARA token's lifetime is its resource server's (camara-provider.ts); a login client's is 600 s as before.
        AccessToken: (_ctx, token) => token.resourceServer?.accessTokenTTL ?? 600,
        ClientCredentials: (_ctx, token) => token.resourceServer?.accessTokenTTL ?? 600,
        Interaction: 900,
        Session: 24 * 3600,
        Grant: 14 * 24 * 3600,
      },
      features: {
        devInteractions: { enabled: false },
        revocation: { enabled: true },
        userinfo: { enabled: true },
        rpInitiatedLogout: { enabled: true },
        introspection: { enabled: false },
        registration: { enabled: false },
        claimsParameter: { enabled: false },
        ...camara.features,
      },
      enabledJWA: camara.enabledJWA,
      assertJwtClientAuthClaimsAndHeader: camara.assertJwtClientAuthClaimsAndHeader,
      subjectTypes: camara.subjectTypes,
      pairwiseIdentifier: camara.pairwiseIdentifier,
      interactions: { url: (_ctx, interaction) => `${interactionBase}/${interaction.uid}` },
      // Every login client is the operator's own: the scopes it asks for are granted without a
      // consent screen. A CAMARA client's are not: its user consents (camara-provider.ts).
      loadExistingGrant: (ctx: KoaContextWithOIDC) => loadGrant(ctx, SCOPES),
      extraParams: {
        // The nonce becomes a claim the zkLogin circuit reads raw: refuse what it could not prove.
        nonce(_ctx: KoaContextWithOIDC, value: string | undefined) {
          if (value !== undefined && (value.length > MAX_NONCE || needsJsonEscape(value))) {
            throw new errors.InvalidRequest(`nonce must be at most ${MAX_NONCE} printable ASCII characters without " or \\`)
          }
        },
      } as unknown as Configuration['extraParams'],
      clientBasedCORS(_ctx, origin, client) {
        return client.redirectUris?.some((uri) => new URL(uri).origin === origin) ?? false
      },
      async renderError(ctx, out) {
        ctx.type = 'application/json; charset=utf-8'
        ctx.body = JSON.stringify(out)
      },
    }
  }
}

/** Why the provider refused a request, as the server logs it: never a token, an assertion or a code. */
export interface ProviderRefusal { endpoint: 'token' | 'authorization'; clientId: string | null; error: string; detail: string | null }
interface RefusalDetail { error?: string; error_detail?: string; error_description?: string }

function refusal(endpoint: ProviderRefusal['endpoint'], ctx: KoaContextWithOIDC, err: RefusalDetail): ProviderRefusal {
  const named = ctx.oidc?.client?.clientId ?? (ctx.oidc?.params?.client_id as string | undefined)
  const clientId = typeof named === 'string' ? named.slice(0, 64) : null
  return { endpoint, clientId, error: err.error ?? 'server_error', detail: err.error_detail ?? err.error_description ?? null }
}

/**
 * Every URL oidc-provider writes (the discovery document with jwks_uri, the resume and logout
 * URLs, redirects) and its cookies' Secure flag come from Koa's view of the request's scheme
 * and host, which would follow Host or X-Forwarded-Host/-Proto: any client could then name the
 * endpoints, and a cache in front keep a poisoned discovery document or key location for
 * everyone. Pinned to the issuer's, whatever the request says, with or without TRUST_PROXY.
 */
function pinOrigin(provider: Provider, issuer: string): void {
  const { protocol, host } = new URL(issuer)
  const scheme = protocol.slice(0, -1)
  Object.defineProperties(provider.request, {
    protocol: { get: () => scheme },
    host: { get: () => host },
    // Koa would take an absolute-form request target (`GET http://evil.example/...`) as it is.
    href: { get(this: { originalUrl: string }) { return `${scheme}://${host}${this.originalUrl.startsWith('/') ? this.originalUrl : '/'}` } },
  })
}

/**
 * The discovery document and the JWKS are the same for everyone: caches may keep them a few
 * minutes (a next key is published an hour before it signs, MIN_PUBLISHED_BEFORE_SIGNING_MS).
 * They no longer depend on Host, so only Origin varies (the library's CORS sets that Vary).
 */
const PUBLIC_DOCUMENT_MAX_AGE_S = 300
const PUBLIC_DOCUMENTS = new Set(['discovery', 'jwks'])

async function cachePublicDocuments(ctx: KoaContextWithOIDC, next: () => Promise<void>): Promise<void> {
  await next()
  if (ctx.status === 200 && PUBLIC_DOCUMENTS.has(ctx.oidc?.route ?? '')) ctx.set('cache-control', `public, max-age=${PUBLIC_DOCUMENT_MAX_AGE_S}`)
}

/**
 * oidc-provider refuses http and localhost redirect URIs for implicit clients (right for
 * production). Our own rule (clients.ts: https, or http on a loopback host) is the gate, so a
 * development server on http://localhost can use the implicit flow for its approval page.
 */
function allowDevelopmentRedirects(provider: Provider): void {
  const schema = (provider.Client as unknown as { Schema: { prototype: { invalidate(message: string, code?: string): void } } }).Schema
  const original = schema.prototype.invalidate
  schema.prototype.invalidate = function invalidate(message: string, code?: string) {
    if (code === 'implicit-force-https' || code === 'implicit-forbid-localhost') return
    original.call(this, message, code)
  }
}

/**
 * oidc-provider answers any error of its own storage as its `server_error`, a 500: during a
 * database outage (a failover) a login step said "server error" where every other route says
 * 503 DATABASE_UNAVAILABLE with Retry-After (found by the cluster's crash of the primary).
 * The library reports such an error through its `server_error` event, before the answer is
 * sent; the outermost middleware then answers as the rest of the service does.
 */
function markDatabaseUnavailable(ctx: KoaContextWithOIDC, err: unknown): void {
  if (isDatabaseUnavailable(err)) ctx.state.databaseUnavailable = true
}

async function databaseUnavailableAs503(ctx: KoaContextWithOIDC, next: () => Promise<void>): Promise<void> {
  await next()
  if (ctx.state.databaseUnavailable !== true) return
  const error = new DatabaseUnavailableError('the database is unavailable; retry shortly')
  // The service's error shape (src/http/error-body.ts), its request ID set by the route that handed the request over.
  const requestId = String(ctx.res.getHeader('x-request-id') ?? '')
  ctx.status = error.status
  ctx.set('retry-after', '1')
  ctx.set('cache-control', 'no-store')
  ctx.type = 'application/json; charset=utf-8'
  ctx.body = JSON.stringify({ success: false, code: error.code, error: error.message, message: error.message, requestId })
}

async function securityHeaders(ctx: KoaContextWithOIDC, next: () => Promise<void>): Promise<void> {
  ctx.set('x-content-type-options', 'nosniff')
  ctx.set('referrer-policy', 'no-referrer')
  ctx.set('x-frame-options', 'DENY')
  await next()
}
