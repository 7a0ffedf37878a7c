import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto'
import { ConfigError } from '../errors.ts'
import type { Executor } from './engine.ts'

export async function getSetting(db: Executor, name: string): Promise<string | undefined> {
  const row = await db.get<{ value: string }>('SELECT value FROM settings WHERE name = $1', [name])
  return row?.value
}

/**
 * Stores `value` under `name` unless a value is there already, and returns the value that
 * won. Safe when several processes race: the first insert wins and everyone reads it.
 */
export async function getOrInitSetting(db: Executor, name: string, value: () => string): Promise<string> {
  const existing = await getSetting(db, name)
  if (existing !== undefined) return existing
  await db.run('INSERT INTO settings (name, value) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING', [name, value()])
  return (await getSetting(db, name))!
}

/** What the server secret derives: changing it silently would break both. */
const SECRET_USES = 'it derives every user\'s zkLogin salt (so every zkAddress: users would get new, empty wallets) ' +
  'and the keyed hashes of statistics clients (every client\'s history would split in two)'

/**
 * A key check value of the secret (HMAC of a fixed label under it): equal secrets give equal
 * values, and it says nothing of a secret of 32 random bytes.
 */
function fingerprintOf(secret: Buffer): string {
  return createHmac('sha256', secret).update('kns/server-secret-fingerprint/v1').digest('hex')
}

/**
 * The server secret: KNS_SECRET when set, otherwise 32 random bytes generated on first
 * start and kept in the database, so derived salts (and so zkLogin addresses) never change.
 * Pinned like the zkLogin issuer: the database keeps a fingerprint of the first secret it was
 * served with, and a start with another one (KNS_SECRET changed, set where it was generated,
 * or left unset where it was set) is refused.
 */
export async function resolveServerSecret(db: Executor, configured: string | undefined): Promise<Buffer> {
  const pinned = await getSetting(db, 'server_secret_fingerprint')
  let secret: Buffer
  if (configured !== undefined) {
    secret = Buffer.from(configured, 'utf8')
  } else {
    const kept = await getSetting(db, 'server_secret')
    if (kept === undefined && pinned !== undefined) {
      throw new ConfigError(`KNS_SECRET is not set, but this database was created with it: set it again (${SECRET_USES})`)
    }
    secret = Buffer.from(kept ?? await getOrInitSetting(db, 'server_secret', () => randomBytes(32).toString('hex')), 'hex')
  }
  const fingerprint = fingerprintOf(secret)
  const first = pinned ?? await getOrInitSetting(db, 'server_secret_fingerprint', () => fingerprint)
  if (!timingSafeEqual(Buffer.from(first, 'hex'), Buffer.from(fingerprint, 'hex'))) {
    throw new ConfigError(configured !== undefined
      ? `KNS_SECRET is not the secret this database was created with; a start with another secret is refused: ${SECRET_USES}. ` +
        'Use the original secret (or, if the database generated its own, leave KNS_SECRET unset)'
      : `the generated server secret kept in this database does not match its fingerprint (the settings table was edited?): ${SECRET_USES}`)
  }
  return secret
}
