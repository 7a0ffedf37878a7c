import { randomBytes } from 'node:crypto'
import { signalChange } from '../db/change-signal.ts'
import type { Database, Executor } from '../db/engine.ts'
import { ConflictError, NotFoundError, ValidationError } from '../errors.ts'
import { defaultKeyId, KEY_ID_PATTERN, parseP256PublicKey } from '../lib/public-keys.ts'
import { CALLER_TOPIC, tag } from '../db/change-topics.ts'
import type { Keystore, KeystoreKey } from './ledger.ts'

interface KeystoreRow { object_id: string; name: string; creator: string; image_url: string | null }
interface KeyRow { key_id: string; public_key: string; revoked: number }

/**
 * Keystores (certificate registries) and the token -> keystores map of the embedded ledger.
 * Every write signals the caller-verification caches of all processes.
 */
export class LocalKeystores {
  readonly #db: Database

  constructor(db: Database) {
    this.#db = db
  }

  async get(objectId: string, ex: Executor = this.#db): Promise<Keystore | null> {
    const id = objectId.toLowerCase()
    const row = await ex.get<KeystoreRow>('SELECT * FROM ledger_keystores WHERE object_id = $1', [id])
    if (row === undefined) return null
    const keys = await ex.all<KeyRow>('SELECT key_id, public_key, revoked FROM ledger_keystore_keys WHERE keystore_id = $1 ORDER BY created_at, key_id', [id])
    return {
      objectId: id, name: row.name, creator: row.creator, imageUrl: row.image_url,
      keys: keys.map((k): KeystoreKey => ({ keyId: k.key_id, publicKey: k.public_key, revoked: Number(k.revoked) === 1 })),
    }
  }

  async linked(tokenId: string): Promise<string[]> {
    const rows = await this.#db.all<{ keystore_id: string }>(
      'SELECT keystore_id FROM ledger_keystore_links WHERE token_id = $1 ORDER BY created_at, keystore_id', [tokenId.toLowerCase()])
    return rows.map((r) => r.keystore_id)
  }

  async create(input: { name: string; creator: string; imageUrl?: string; publicKey: string; keyId?: string }): Promise<{ objectId: string; keyId: string }> {
    for (const [field, value] of [['name', input.name], ['creator', input.creator]] as const) {
      if (value.trim() === '' || value.length > 255) throw new ValidationError(`${field} must be 1-255 characters`, { field })
    }
    if (input.imageUrl !== undefined && !/^https?:\/\/\S{1,2040}$/.test(input.imageUrl)) {
      throw new ValidationError('image URL must be an http(s) URL', { field: 'imageUrl' })
    }
    const objectId = `0x${randomBytes(32).toString('hex')}`
    return this.#db.transaction(async (tx) => {
      await tx.run('INSERT INTO ledger_keystores (object_id, name, creator, image_url, created_at) VALUES ($1, $2, $3, $4, $5)',
        [objectId, input.name.trim(), input.creator.trim(), input.imageUrl ?? null, Date.now()])
      const { keyId } = await this.#insertKey(tx, objectId, input.publicKey, input.keyId)
      return { objectId, keyId }
    })
  }

  async addKey(keystoreId: string, publicKey: string, keyId?: string): Promise<{ keyId: string }> {
    return this.#db.transaction(async (tx) => {
      await this.#require(tx, keystoreId)
      return this.#insertKey(tx, keystoreId.toLowerCase(), publicKey, keyId)
    })
  }

  async revokeKey(keystoreId: string, keyId: string): Promise<void> {
    await this.#db.transaction(async (tx) => {
      await this.#require(tx, keystoreId)
      const id = keystoreId.toLowerCase()
      const changed = await tx.run('UPDATE ledger_keystore_keys SET revoked = 1, revoked_at = $1 WHERE keystore_id = $2 AND key_id = $3 AND revoked = 0',
        [Date.now(), id, keyId])
      if (changed === 0) {
        const exists = await tx.get('SELECT 1 AS ok FROM ledger_keystore_keys WHERE keystore_id = $1 AND key_id = $2', [id, keyId])
        if (exists === undefined) throw new NotFoundError(`keystore ${id} has no key ${keyId}`, { field: 'keyId' })
        return
      }
      await signalChange(tx, CALLER_TOPIC, tag.keystore(id))
    })
  }

  /** Authorises the keystore to sign calls for the token's number. Idempotent. */
  async link(tokenId: string, keystoreId: string): Promise<void> {
    await this.#db.transaction(async (tx) => {
      await this.#require(tx, keystoreId)
      await tx.run(`INSERT INTO ledger_keystore_links (token_id, keystore_id, created_at) VALUES ($1, $2, $3)
        ON CONFLICT (token_id, keystore_id) DO NOTHING`, [tokenId.toLowerCase(), keystoreId.toLowerCase(), Date.now()])
      await signalChange(tx, CALLER_TOPIC, tag.token(tokenId))
    })
  }

  /** Removes the authorisation; true when there was one. */
  async unlink(tokenId: string, keystoreId: string): Promise<boolean> {
    return this.#db.transaction(async (tx) => {
      const changed = await tx.run('DELETE FROM ledger_keystore_links WHERE token_id = $1 AND keystore_id = $2',
        [tokenId.toLowerCase(), keystoreId.toLowerCase()])
      if (changed > 0) await signalChange(tx, CALLER_TOPIC, tag.token(tokenId))
      return changed > 0
    })
  }

  async #require(tx: Executor, keystoreId: string): Promise<void> {
    const row = await tx.get('SELECT 1 AS ok FROM ledger_keystores WHERE object_id = $1', [keystoreId.toLowerCase()])
    if (row === undefined) throw new NotFoundError(`no keystore ${keystoreId} on the embedded ledger`, { field: 'keystoreId' })
  }

  async #insertKey(tx: Executor, keystoreId: string, publicKey: string, keyId?: string): Promise<{ keyId: string }> {
    const { pem } = parseP256PublicKey(publicKey)
    const id = keyId ?? defaultKeyId(pem)
    if (!KEY_ID_PATTERN.test(id)) throw new ValidationError('key ID must be 1-128 of A-Z a-z 0-9 . _ : -', { field: 'keyId' })
    const taken = await tx.get('SELECT 1 AS ok FROM ledger_keystore_keys WHERE keystore_id = $1 AND key_id = $2', [keystoreId, id])
    if (taken !== undefined) throw new ConflictError(`keystore ${keystoreId} already has a key ${id}`, { field: 'keyId' })
    await tx.run('INSERT INTO ledger_keystore_keys (keystore_id, key_id, public_key, revoked, created_at) VALUES ($1, $2, $3, 0, $4)',
      [keystoreId, id, pem, Date.now()])
    await signalChange(tx, CALLER_TOPIC, tag.keystore(keystoreId))
    return { keyId: id }
  }
}
