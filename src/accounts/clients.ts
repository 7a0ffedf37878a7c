import { randomBytes } from 'node:crypto'
import { signalChange, type ChangeWatcher } from '../db/change-signal.ts'
import { ACCOUNTS_TOPIC } from '../db/change-topics.ts'
import type { Database } from '../db/engine.ts'
import { isUniqueViolation } from '../db/engine.ts'
import { ConflictError, NotFoundError, ValidationError } from '../errors.ts'
import { InvalidatingCache } from '../lib/invalidating-cache.ts'
import type { SealedBox } from '../lib/sealed-box.ts'
import { claimProblem, ZKLOGIN_LIMITS } from '../lib/zklogin-limits.ts'
import { endClientSubscriptions } from '../camara/subscriptions/end-subscription.ts'
import { checkJwks, checkRegisteredScope, type CamaraGrantType, type PublicJwks } from './camara-clients.ts'
import { checkRedirectUri, redirectUriProblem } from './redirect-uris.ts'

/**
 * The relying parties of the login provider, registered by the operator (`kns oidc client`,
 * the admin routes): exact redirect URIs, no wildcard, no dynamic registration. A public
 * client (a page, an app) uses PKCE or the implicit id_token flow; a confidential one (a
 * server) also has a secret, printed once and stored sealed with KNS_SECRET.
 *
 * ZKLOGIN_CLIENT_ID is the built-in client: the audience of every registered user's
 * zkAddress, used by the approval page at `$PUBLIC_BASE_URL/approve`. Other redirect URIs can
 * be added to it (a wallet that must reach the same addresses) by adding a client with its ID.
 *
 * A CAMARA client (a bank calling SIM Swap, Device Swap) is registered with a grant type, its
 * public keys and its scopes (src/accounts/camara-clients.ts) and authenticates with
 * private_key_jwt only; the login clients above are untouched by it.
 */
export interface OidcClient {
  clientId: string
  name: string
  redirectUris: string[]
  confidential: boolean
  builtIn: boolean
  createdAt: number | null
  /** A login client's ['authorization_code', 'implicit']; a CAMARA client's one grant. */
  grantTypes: string[]
  /** A CAMARA client's registered scopes, space-separated; null for a login client (the provider's OIDC scopes). */
  scope: string | null
  /** The kids of a CAMARA client's registered public keys (none for a login client). */
  keyIds: string[]
}

/** What the provider's CAMARA steps need to know of a client, or null for a login client. */
export interface CamaraClient {
  clientId: string
  grantType: CamaraGrantType
  scopes: ReadonlySet<string>
  /** When this registration was made (epoch ms): a token issued before it was for an earlier client of the same ID. */
  registeredAt: number
}

export interface NewClient {
  name: string
  redirectUris?: string[]
  clientId?: string
  confidential?: boolean
  /** Set for a CAMARA client; then `jwks` and `scope` are required and `confidential` is not taken. */
  grantType?: CamaraGrantType
  jwks?: unknown
  scope?: string | readonly string[]
}

/** The metadata oidc-provider takes for a client. */
export interface ClientMetadata {
  client_id: string
  client_name: string
  redirect_uris: string[]
  response_types: string[]
  grant_types: string[]
  token_endpoint_auth_method: string
  id_token_signed_response_alg: 'RS256'
  client_secret?: string
  jwks?: PublicJwks
  subject_type?: 'pairwise'
  scope?: string
}

interface ClientRow {
  client_id: string; name: string; redirect_uris: string; sealed_secret: string | null; created_at: number
  grant_type: CamaraGrantType | null; jwks: string | null; scope: string | null
}

const CLIENT_ID = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,63}$/
const NAME = /^[\p{L}\p{N}][\p{L}\p{N} .,&'()_-]{0,63}$/u
const MAX_REDIRECT_URIS = 10
export const CLIENT_CHANGED = (clientId: string) => `client:${clientId}`
const CLIENT_CHANGED_PREFIX = CLIENT_CHANGED('')
/** CAMARA registrations kept in process at most (a bound on memory; banks are few). */
const MAX_CACHED_CAMARA_CLIENTS = 10_000
/** The one client authentication of a CAMARA client, and of no login client: what tells the two apart in the provider. */
export const CAMARA_CLIENT_AUTH = 'private_key_jwt'
const LOGIN_GRANT_TYPES = ['authorization_code', 'implicit']

export function metadataOf(client: { clientId: string; name: string; redirectUris: string[] }, secret: string | null): ClientMetadata {
  return {
    client_id: client.clientId,
    client_name: client.name,
    redirect_uris: client.redirectUris,
    response_types: ['code', 'id_token'],
    grant_types: ['authorization_code', 'implicit'],
    token_endpoint_auth_method: secret === null ? 'none' : 'client_secret_basic',
    id_token_signed_response_alg: 'RS256',
    ...(secret === null ? {} : { client_secret: secret }),
  }
}

/**
 * A CAMARA client's metadata: private_key_jwt with its keys; two-legged, no redirect and no
 * authorization endpoint; three-legged, the code flow only (PKCE is required of every client)
 * and pairwise subjects (CAMARA: an ID token's sub must not be a global identifier; the
 * provider's pairwiseIdentifier). Its CAMARA scopes are not OIDC scopes: the provider serves
 * them as the API's resource server scopes, checked against `scope` by its own steps; only
 * openid is client metadata (so profile, phone and email are refused at the authorization endpoint).
 */
export function camaraMetadataOf(client: { clientId: string; name: string; redirectUris: string[] }, grantType: CamaraGrantType, jwks: PublicJwks, scopes: readonly string[]): ClientMetadata {
  const threeLegged = grantType === 'authorization_code'
  return {
    client_id: client.clientId,
    client_name: client.name,
    redirect_uris: threeLegged ? client.redirectUris : [],
    response_types: threeLegged ? ['code'] : [],
    grant_types: [grantType],
    token_endpoint_auth_method: CAMARA_CLIENT_AUTH,
    id_token_signed_response_alg: 'RS256',
    jwks,
    ...(threeLegged ? { subject_type: 'pairwise' as const } : {}),
    ...(threeLegged && scopes.includes('openid') ? { scope: 'openid' } : {}),
  }
}

export class Clients {
  readonly #db: Database
  readonly #box: () => SealedBox
  readonly #builtIn: { clientId: string; redirectUri: string }
  /**
   * CAMARA registrations by client ID, for the resource server, which looks the client up on
   * every call (src/camara/access-token.ts): only while subscribed to the change signal, so a
   * client removed here is forgotten as its removal commits, and one removed by another
   * process within the signal's latency (a NOTIFY on PostgreSQL, a poll on SQLite). A client
   * not found is not cached: one registered a moment ago elsewhere is found at once.
   */
  #camaraCache: InvalidatingCache<string, CamaraClient> | undefined

  constructor(db: Database, box: () => SealedBox, builtIn: { clientId: string; redirectUri: string }) {
    this.#db = db
    this.#box = box
    this.#builtIn = builtIn
  }

  /** Caches CAMARA registrations from now on, each dropped when a change to its client is signalled (or all, when changes may have been missed). */
  subscribe(changes: ChangeWatcher): void {
    const cache = this.#camaraCache = new InvalidatingCache(MAX_CACHED_CAMARA_CLIENTS)
    changes.on('change', (topic, subject) => {
      if (topic !== ACCOUNTS_TOPIC) return
      if (subject === null) cache.invalidate(null)
      else if (subject.startsWith(CLIENT_CHANGED_PREFIX)) cache.delete(subject.slice(CLIENT_CHANGED_PREFIX.length))
    })
  }

  get builtInId(): string {
    return this.#builtIn.clientId
  }

  async add(input: NewClient): Promise<{ client: OidcClient; secret: string | null }> {
    if (!NAME.test(input.name)) throw new ValidationError('name: 1-64 letters, digits, spaces and .,&\'()_-', { field: 'name' })
    const clientId = input.clientId ?? `cl_${randomBytes(12).toString('hex')}`
    if (!CLIENT_ID.test(clientId)) throw new ValidationError('clientId: 1-64 of A-Z a-z 0-9 . _ : -', { field: 'clientId' })
    const audience = claimProblem('clientId', clientId, ZKLOGIN_LIMITS.aud)
    if (audience !== null) throw new ValidationError(audience, { field: 'clientId' })
    const camara = input.grantType === undefined ? null : this.#camaraFields(clientId, input)
    if (camara === null && (input.jwks !== undefined || input.scope !== undefined)) {
      throw new ValidationError('jwks and scope are for CAMARA clients: give the grant type (client_credentials or authorization_code)', { field: 'grantType' })
    }
    const uris = [...new Set((input.redirectUris ?? []).map(checkRedirectUri))]
    const noUris = camara?.grantType === 'client_credentials'
    if (noUris ? uris.length > 0 : uris.length === 0 || uris.length > MAX_REDIRECT_URIS) {
      throw new ValidationError(noUris ? 'a client_credentials client has no redirect URI' : `1 to ${MAX_REDIRECT_URIS} redirect URIs`, { field: 'redirectUris' })
    }
    // Pairwise subjects are computed per client, but the library also wants one host for them (else a sector_identifier_uri).
    if (camara !== null && new Set(uris.map((uri) => new URL(uri).host)).size > 1) {
      throw new ValidationError('the redirect URIs of a CAMARA client must all be on one host', { field: 'redirectUris' })
    }
    if (clientId === this.#builtIn.clientId && input.confidential) {
      throw new ValidationError(`${clientId} is the built-in public client (ZKLOGIN_CLIENT_ID): it takes redirect URIs, not a secret`, { field: 'confidential' })
    }
    const secret = input.confidential ? randomBytes(32).toString('base64url') : null
    const now = Date.now()
    try {
      await this.#db.transaction(async (tx) => {
        await tx.run('INSERT INTO oidc_clients (client_id, name, redirect_uris, sealed_secret, created_at, grant_type, jwks, scope) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)',
          [clientId, input.name, JSON.stringify(uris), secret === null ? null : this.#box().seal(secret), now,
            camara?.grantType ?? null, camara === null ? null : JSON.stringify(camara.jwks), camara?.scopes.join(' ') ?? null])
        await signalChange(tx, ACCOUNTS_TOPIC, CLIENT_CHANGED(clientId))
      })
    } catch (err) {
      if (isUniqueViolation(err)) throw new ConflictError(`a client ${clientId} exists already`, { field: 'clientId' })
      throw err
    }
    const client = (await this.get(clientId))!
    return { client, secret }
  }

  /** A CAMARA client's grant, keys and scopes, checked; refused for the built-in client and with a secret. */
  #camaraFields(clientId: string, input: NewClient): { grantType: CamaraGrantType; jwks: PublicJwks; scopes: string[] } {
    const grantType = input.grantType!
    if (grantType !== 'client_credentials' && grantType !== 'authorization_code') {
      throw new ValidationError('grantType: client_credentials or authorization_code', { field: 'grantType' })
    }
    if (clientId === this.#builtIn.clientId) throw new ValidationError(`${clientId} is the built-in login client: a CAMARA client needs its own ID`, { field: 'clientId' })
    if (input.confidential) throw new ValidationError('a CAMARA client authenticates with its keys (private_key_jwt), not a secret', { field: 'confidential' })
    if (input.jwks === undefined) throw new ValidationError('jwks is required for a CAMARA client: the public keys of its private_key_jwt assertions', { field: 'jwks' })
    return { grantType, jwks: checkJwks(input.jwks), scopes: checkRegisteredScope(grantType, input.scope) }
  }

  async list(): Promise<OidcClient[]> {
    const rows = await this.#db.all<ClientRow>('SELECT * FROM oidc_clients ORDER BY created_at, client_id')
    const clients = rows.filter((r) => r.client_id !== this.#builtIn.clientId).map((r) => this.#fromRow(r))
    return [(await this.get(this.#builtIn.clientId))!, ...clients]
  }

  async get(clientId: string): Promise<OidcClient | null> {
    return (await this.#find(clientId))?.client ?? null
  }

  /** The client and its stored row (one read: the row holds the sealed secret too). */
  async #find(clientId: string): Promise<{ client: OidcClient; row: ClientRow | undefined } | null> {
    if (!CLIENT_ID.test(clientId)) return null
    const row = await this.#db.get<ClientRow>('SELECT * FROM oidc_clients WHERE client_id = $1', [clientId])
    if (clientId === this.#builtIn.clientId) {
      const extra = row === undefined ? [] : (JSON.parse(row.redirect_uris) as string[])
      const client = {
        clientId, name: row?.name ?? 'KNS approvals', redirectUris: [...new Set([this.#builtIn.redirectUri, ...extra])],
        confidential: false, builtIn: true, createdAt: row === undefined ? null : Number(row.created_at),
        grantTypes: LOGIN_GRANT_TYPES, scope: null, keyIds: [],
      }
      return { client, row }
    }
    return row === undefined ? null : { client: this.#fromRow(row), row }
  }

  /** What oidc-provider needs to serve the client (its secret opened), or undefined for none. */
  async metadata(clientId: string): Promise<ClientMetadata | undefined> {
    const found = await this.#find(clientId)
    if (found === null) return undefined
    const row = found.row
    // A URI stored before today's rules (redirect-uris.ts) is not served; the built-in one comes from PUBLIC_BASE_URL.
    const redirectUris = found.client.redirectUris.filter((uri) => uri === this.#builtIn.redirectUri || redirectUriProblem(uri) === null)
    if (row?.grant_type != null && !found.client.builtIn) {
      return camaraMetadataOf({ ...found.client, redirectUris }, row.grant_type, JSON.parse(row.jwks!) as PublicJwks, (row.scope ?? '').split(' '))
    }
    const sealed = found.client.confidential ? found.row?.sealed_secret : null
    return metadataOf({ ...found.client, redirectUris }, sealed ? this.#box().open(sealed) : null)
  }

  /** Removes a client (for the built-in one: the redirect URIs added to it). */
  async remove(clientId: string): Promise<void> {
    const removed = await this.#db.transaction(async (tx) => {
      const n = await tx.run('DELETE FROM oidc_clients WHERE client_id = $1', [clientId])
      if (n > 0) await signalChange(tx, ACCOUNTS_TOPIC, CLIENT_CHANGED(clientId))
      // A CAMARA client's subscriptions end with it (its sinks hear nothing more of the numbers).
      if (n > 0) await endClientSubscriptions(tx, clientId, Date.now())
      return n
    })
    // Committed: this process refuses the client's tokens from the next call, without waiting for its own signal.
    this.#camaraCache?.delete(clientId)
    if (removed === 0) {
      const why = clientId === this.#builtIn.clientId ? ' (the built-in client itself cannot be removed; it has no added redirect URIs)' : ''
      throw new NotFoundError(`no client ${clientId}${why}`, { field: 'clientId' })
    }
  }

  /** The client's CAMARA registration, or null for a login client or none. */
  async camara(clientId: string): Promise<CamaraClient | null> {
    if (typeof clientId !== 'string' || !CLIENT_ID.test(clientId) || clientId === this.#builtIn.clientId) return null
    const cached = this.#camaraCache?.get(clientId)
    if (cached !== undefined) return cached
    // Taken before the read: a removal committed meanwhile keeps what was read out of the cache.
    const stamp = this.#camaraCache?.begin()
    const row = await this.#db.get<Pick<ClientRow, 'grant_type' | 'scope' | 'created_at'>>('SELECT grant_type, scope, created_at FROM oidc_clients WHERE client_id = $1', [clientId])
    if (row?.grant_type == null) return null
    const client: CamaraClient = { clientId, grantType: row.grant_type, scopes: new Set((row.scope ?? '').split(' ').filter(Boolean)), registeredAt: Number(row.created_at) }
    if (stamp !== undefined) this.#camaraCache?.set(clientId, client, stamp)
    return client
  }

  #fromRow(row: ClientRow): OidcClient {
    const jwks = row.jwks === null ? null : (JSON.parse(row.jwks) as PublicJwks)
    return {
      clientId: row.client_id, name: row.name, redirectUris: JSON.parse(row.redirect_uris) as string[],
      confidential: row.sealed_secret !== null, builtIn: false, createdAt: Number(row.created_at),
      grantTypes: row.grant_type === null ? LOGIN_GRANT_TYPES : [row.grant_type], scope: row.scope,
      keyIds: jwks === null ? [] : jwks.keys.map((k) => String(k.kid)),
    }
  }
}
