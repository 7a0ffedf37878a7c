import { createHash, generateKeyPairSync, type JsonWebKey } from 'node:crypto'
import { signalChange } from '../db/change-signal.ts'
import { ACCOUNTS_TOPIC } from '../db/change-topics.ts'
import type { Database, Executor } from '../db/engine.ts'
import { ValidationError } from '../errors.ts'
import type { SealedBox } from '../lib/sealed-box.ts'

/**
 * The provider's RS256 signing keys (2048-bit RSA), private halves sealed with a key derived
 * from KNS_SECRET. Three states, as zkLogin needs: Sui validators (and relying parties) fetch
 * the JWKS now and then, so a key is published before it signs (the next key) and stays
 * published after it stops (the retired key, for KEY_OVERLAP_MS), and a proof made with a
 * token of either is accepted throughout.
 */
export const KEY_OVERLAP_MS = 7 * 24 * 3600_000
/** The next key must have been published this long before a rotation makes it sign (unless forced). */
export const MIN_PUBLISHED_BEFORE_SIGNING_MS = 3600_000

/** The change signal's subject when the key set changes: every process rebuilds its provider's keys. */
export const KEYS_CHANGED = 'oidc-keys'

export type KeyState = 'signing' | 'next' | 'retired'

export interface SigningKeyInfo {
  kid: string
  state: KeyState
  createdAt: number
  signingFrom: number | null
  retiredAt: number | null
  /** Until when it stays in the JWKS (null: as long as it signs or waits to). */
  publishedUntil: number | null
}

/** A public JWK as published (RS256, use sig, kid). */
export interface PublicJwk { kty: 'RSA'; n: string; e: string; kid: string; alg: 'RS256'; use: 'sig' }

interface KeyRow { kid: string; public_jwk: string; sealed_private_jwk: string; created_at: number; signing_from: number | null; retired_at: number | null }

function stateOf(row: KeyRow): KeyState {
  if (row.retired_at !== null) return 'retired'
  return row.signing_from === null ? 'next' : 'signing'
}

function info(row: KeyRow): SigningKeyInfo {
  const retiredAt = row.retired_at === null ? null : Number(row.retired_at)
  return {
    kid: row.kid, state: stateOf(row), createdAt: Number(row.created_at),
    signingFrom: row.signing_from === null ? null : Number(row.signing_from), retiredAt,
    publishedUntil: retiredAt === null ? null : retiredAt + KEY_OVERLAP_MS,
  }
}

/** RFC 7638 thumbprint: the same key always gets the same kid. */
function thumbprint(jwk: JsonWebKey): string {
  return createHash('sha256').update(JSON.stringify({ e: jwk.e, kty: 'RSA', n: jwk.n })).digest('base64url')
}

function newKeyPair(): { publicJwk: PublicJwk; privateJwk: JsonWebKey } {
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 })
  const jwk = privateKey.export({ format: 'jwk' })
  const kid = thumbprint(jwk)
  return { publicJwk: { kty: 'RSA', n: jwk.n!, e: jwk.e!, kid, alg: 'RS256', use: 'sig' }, privateJwk: { ...jwk, kid, alg: 'RS256', use: 'sig' } }
}

async function insertKey(tx: Executor, box: SealedBox, now: number, signingFrom: number | null): Promise<string> {
  const { publicJwk, privateJwk } = newKeyPair()
  await tx.run('INSERT INTO oidc_keys (kid, public_jwk, sealed_private_jwk, created_at, signing_from, retired_at) VALUES ($1, $2, $3, $4, $5, NULL)',
    [publicJwk.kid, JSON.stringify(publicJwk), box.seal(JSON.stringify(privateJwk)), now, signingFrom])
  return publicJwk.kid
}

export class SigningKeys {
  readonly #db: Database
  readonly #box: () => SealedBox

  constructor(db: Database, box: () => SealedBox) {
    this.#db = db
    this.#box = box
  }

  /**
   * The first start makes a signing key and a next key. Several processes may start at once:
   * the one whose marker insert wins makes them, in the same transaction, and the others
   * (their insert waits for that commit on PostgreSQL) find them.
   */
  async ensure(now = Date.now()): Promise<void> {
    const existing = await this.#db.get<{ n: number }>('SELECT COUNT(*) AS n FROM oidc_keys WHERE retired_at IS NULL')
    if (Number(existing?.n ?? 0) > 0) return
    await this.#db.transaction(async (tx) => {
      const won = await tx.run(`INSERT INTO settings (name, value) VALUES ('oidc_keys_created', $1) ON CONFLICT (name) DO NOTHING`, [String(now)])
      if (won === 0) return
      await insertKey(tx, this.#box(), now, now)
      await insertKey(tx, this.#box(), now, null)
    })
  }

  async list(now = Date.now()): Promise<SigningKeyInfo[]> {
    const rows = await this.#db.all<KeyRow>('SELECT * FROM oidc_keys ORDER BY created_at, kid')
    return rows.map(info).filter((k) => k.publishedUntil === null || k.publishedUntil > now)
  }

  /** The JWKS: the signing key first, then the next key and the retired keys still in their overlap. */
  async published(now = Date.now()): Promise<PublicJwk[]> {
    return (await this.#current(now)).map((row) => JSON.parse(row.public_jwk) as PublicJwk)
  }

  /**
   * The provider's key set: private JWKs, the signing key first; every other key marked
   * verify-only (`key_ops`), so oidc-provider never signs with it but still publishes it.
   */
  async forProvider(now = Date.now()): Promise<JsonWebKey[]> {
    const box = this.#box()
    return (await this.#current(now)).map((row) => {
      const jwk = JSON.parse(box.open(row.sealed_private_jwk)) as JsonWebKey
      return stateOf(row) === 'signing' ? jwk : { ...jwk, key_ops: ['verify'] }
    })
  }

  async #current(now: number): Promise<KeyRow[]> {
    const rows = await this.#db.all<KeyRow>('SELECT * FROM oidc_keys WHERE retired_at IS NULL OR retired_at > $1', [now - KEY_OVERLAP_MS])
    const rank = (row: KeyRow) => ({ signing: 0, next: 1, retired: 2 })[stateOf(row)]
    return rows.sort((a, b) => rank(a) - rank(b) || Number(b.created_at) - Number(a.created_at))
  }

  /**
   * The next key starts signing, the signing key retires (published for KEY_OVERLAP_MS more),
   * and a new next key is published. Refused while the next key has been published for less
   * than MIN_PUBLISHED_BEFORE_SIGNING_MS (verifiers may not have fetched it), unless forced.
   * Keys past their overlap are deleted: nothing can verify with them any more.
   */
  async rotate(options: { force?: boolean; now?: number } = {}): Promise<{ signing: string; next: string; retired: string | null }> {
    const now = options.now ?? Date.now()
    await this.ensure(now)
    return this.#db.transaction(async (tx) => {
      const rows = await tx.all<KeyRow>('SELECT * FROM oidc_keys WHERE retired_at IS NULL')
      const signing = rows.find((r) => stateOf(r) === 'signing')
      const next = rows.find((r) => stateOf(r) === 'next')
      if (next === undefined) throw new Error('no next key to promote: the key table is inconsistent')
      const publishedFor = now - Number(next.created_at)
      if (!options.force && publishedFor < MIN_PUBLISHED_BEFORE_SIGNING_MS) {
        throw new ValidationError(`the next key ${next.kid} has been published for ${Math.round(publishedFor / 60_000)} min only; ` +
          `verifiers may not have fetched it yet: rotate after ${new Date(Number(next.created_at) + MIN_PUBLISHED_BEFORE_SIGNING_MS).toISOString()} or with --force`)
      }
      // Compare-and-set on both rows: a concurrent rotation finds them changed and changes nothing.
      if (signing !== undefined) {
        const n = await tx.run('UPDATE oidc_keys SET retired_at = $1 WHERE kid = $2 AND retired_at IS NULL', [now, signing.kid])
        if (n !== 1) throw new Error('another rotation ran at the same time')
      }
      const n = await tx.run('UPDATE oidc_keys SET signing_from = $1 WHERE kid = $2 AND signing_from IS NULL AND retired_at IS NULL', [now, next.kid])
      if (n !== 1) throw new Error('another rotation ran at the same time')
      const fresh = await insertKey(tx, this.#box(), now, null)
      await tx.run('DELETE FROM oidc_keys WHERE retired_at IS NOT NULL AND retired_at <= $1', [now - KEY_OVERLAP_MS])
      await signalChange(tx, ACCOUNTS_TOPIC, KEYS_CHANGED)
      return { signing: next.kid, next: fresh, retired: signing?.kid ?? null }
    })
  }
}
