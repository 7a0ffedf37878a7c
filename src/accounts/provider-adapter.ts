import { errors, type Adapter, type AdapterPayload } from 'oidc-provider'
import type { Database } from '../db/engine.ts'
import type { Clients } from './clients.ts'

/**
 * oidc-provider's storage interface over our database, both engines: every model (sessions,
 * interactions, authorization codes, grants, tokens) is a JSON payload in `oidc_payloads`,
 * keyed by (model, id) with the secondary keys the interface looks up by. Nothing is held only
 * in memory, so any process serves any step of a login. Clients come from `oidc_clients`
 * (registered by the operator), never from dynamic registration.
 */
interface PayloadRow { payload: string; expires_at: number | null; consumed_at: number | null }

/** How long past expiry rows stay before the sweep deletes them (reads ignore them at once). */
const SWEEP_GRACE_MS = 3600_000

export function adapterFactory(db: Database, clients: Clients, now: () => number = Date.now): (model: string) => Adapter {
  return (model: string) => {
    if (model === 'Client') return new ClientAdapter(clients)
    if (model === 'ReplayDetection') return new ReplayDetectionAdapter(db, model, now)
    return new PayloadAdapter(db, model, now)
  }
}

export class PayloadAdapter implements Adapter {
  readonly #db: Database
  readonly #model: string
  readonly #now: () => number

  constructor(db: Database, model: string, now: () => number) {
    this.#db = db
    this.#model = model
    this.#now = now
  }

  async upsert(id: string, payload: AdapterPayload, expiresIn: number): Promise<void> {
    const expiresAt = expiresIn ? this.#now() + expiresIn * 1000 : null
    await this.#db.run(`INSERT INTO oidc_payloads (model, id, payload, grant_id, uid, user_code, expires_at, consumed_at)
      VALUES ($1, $2, $3, $4, $5, $6, $7, NULL)
      ON CONFLICT (model, id) DO UPDATE SET payload = excluded.payload, grant_id = excluded.grant_id, uid = excluded.uid,
        user_code = excluded.user_code, expires_at = excluded.expires_at`,
    [this.#model, id, JSON.stringify(payload), payload.grantId ?? null, payload.uid ?? null, payload.userCode ?? null, expiresAt])
  }

  async find(id: string): Promise<AdapterPayload | undefined> {
    return this.#one('id = $2', id)
  }

  async findByUid(uid: string): Promise<AdapterPayload | undefined> {
    return this.#one('uid = $2', uid)
  }

  async findByUserCode(userCode: string): Promise<AdapterPayload | undefined> {
    return this.#one('user_code = $2', userCode)
  }

  /**
   * Marks a code (or another single-use payload) used, once. oidc-provider reads `consumed` on
   * find and only then calls this, so requests that found it together all get here: the one
   * whose update changed the row wins, the others are refused as the provider refuses a replay
   * (invalid_grant, and the grant and its tokens revoked, RFC 6749 4.1.2).
   */
  async consume(id: string): Promise<void> {
    const changed = await this.#db.run('UPDATE oidc_payloads SET consumed_at = $3 WHERE model = $1 AND id = $2 AND consumed_at IS NULL', [this.#model, id, this.#now()])
    if (changed === 1) return
    const row = await this.#db.get<{ grant_id: string | null }>('SELECT grant_id FROM oidc_payloads WHERE model = $1 AND id = $2', [this.#model, id])
    if (row?.grant_id) await revokeGrant(this.#db, row.grant_id)
    throw new errors.InvalidGrant(`${words(this.#model)} already consumed`)
  }

  async destroy(id: string): Promise<void> {
    await this.#db.run('DELETE FROM oidc_payloads WHERE model = $1 AND id = $2', [this.#model, id])
  }

  async revokeByGrantId(grantId: string): Promise<void> {
    await this.#db.run('DELETE FROM oidc_payloads WHERE grant_id = $1', [grantId])
  }

  async #one(where: string, value: string): Promise<AdapterPayload | undefined> {
    if (typeof value !== 'string' || value.length === 0 || value.length > 512) return undefined
    const row = await this.#db.get<PayloadRow>(`SELECT payload, expires_at, consumed_at FROM oidc_payloads WHERE model = $1 AND ${where}`, [this.#model, value])
    if (row === undefined) return undefined
    // Expired rows wait for the sweep, but are never found.
    if (row.expires_at !== null && Number(row.expires_at) <= this.#now()) return undefined
    const payload = JSON.parse(row.payload) as AdapterPayload
    return row.consumed_at === null ? payload : { ...payload, consumed: Math.floor(Number(row.consumed_at) / 1000) }
  }
}

/**
 * The client assertions' `jti`s seen (private_key_jwt: each assertion is used once). The library
 * looks the jti up and then saves it: two requests carrying the same assertion together would
 * both find nothing and both pass. Here the save is the check: an insert that changes no row
 * when the jti is recorded and unexpired, refused as the library refuses a replay
 * (invalid_client), so exactly one of them gets a token, on either engine.
 */
export class ReplayDetectionAdapter extends PayloadAdapter {
  readonly #db: Database
  readonly #now: () => number

  constructor(db: Database, model: string, now: () => number) {
    super(db, model, now)
    this.#db = db
    this.#now = now
  }

  override async upsert(id: string, payload: AdapterPayload, expiresIn: number): Promise<void> {
    const now = this.#now()
    const expiresAt = now + Math.max(1, expiresIn) * 1000
    const recorded = await this.#db.run(`INSERT INTO oidc_payloads (model, id, payload, grant_id, uid, user_code, expires_at, consumed_at)
      VALUES ('ReplayDetection', $1, $2, NULL, NULL, NULL, $3, NULL)
      ON CONFLICT (model, id) DO UPDATE SET payload = excluded.payload, expires_at = excluded.expires_at
      WHERE oidc_payloads.expires_at <= $4`,
    [id, JSON.stringify(payload), expiresAt, now])
    if (recorded !== 1) throw new errors.InvalidClientAuth('client assertion tokens must only be used once')
  }
}

/**
 * What oidc-provider does on a replayed code: every payload of the grant (codes, tokens) and
 * the grant itself. An access token the winner of a concurrent redemption saves after this is
 * stored but dead (its grant is gone, so userinfo refuses it); its id_token, a signed JWT,
 * cannot be recalled and stays valid until it expires.
 */
async function revokeGrant(db: Database, grantId: string): Promise<void> {
  await db.run('DELETE FROM oidc_payloads WHERE grant_id = $1 OR (model = $2 AND id = $1)', [grantId, 'Grant'])
}

/** `AuthorizationCode` -> `authorization code`, as oidc-provider names it in its errors. */
function words(model: string): string {
  return model.replace(/(?<!^)([A-Z])/g, ' $1').toLowerCase()
}

/** Deletes rows an hour past their expiry; returns how many. */
export async function sweepExpired(db: Database, now = Date.now()): Promise<number> {
  return db.run('DELETE FROM oidc_payloads WHERE expires_at IS NOT NULL AND expires_at < $1', [now - SWEEP_GRACE_MS])
}

class ClientAdapter implements Adapter {
  readonly #clients: Clients

  constructor(clients: Clients) {
    this.#clients = clients
  }

  async find(id: string): Promise<AdapterPayload | undefined> {
    return (await this.#clients.metadata(id)) as AdapterPayload | undefined
  }

  async upsert(): Promise<void> { throw new Error('clients are registered by the operator (kns oidc client add)') }
  async findByUid(): Promise<undefined> { return undefined }
  async findByUserCode(): Promise<undefined> { return undefined }
  async consume(): Promise<void> {}
  async destroy(): Promise<void> { throw new Error('clients are removed by the operator (kns oidc client remove)') }
  async revokeByGrantId(): Promise<void> {}
}
