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

/**
 * A one-off command on a database that has no secret yet (the server never started): fine for
 * what needs none (API keys, tokens); whatever would derive data from it is refused.
 */
export const NO_SECRET_YET = Symbol('no server secret yet')
export type NoSecretYet = typeof NO_SECRET_YET
export const NO_SECRET_MESSAGE = 'this database has no server secret yet: start the server once (it generates and keeps one), or set KNS_SECRET as the server has it'

/** What the server secret derives: changing it silently would break both. */
const SECRET_USES = 'it derives every user\'s zkLogin salt (so every zkAddress: users would get new, empty wallets) ' +
  'and the keyed hashes of statistics clients (every client\'s history would split in two)'

/**
 * A key check value of the secret (HMAC of a fixed label under it): equal secrets give equal
 * values, and it says nothing of a secret of 32 random bytes.
 */
function fingerprintOf(secret: Buffer): Buffer {
  return createHmac('sha256', secret).update('kns/server-secret-fingerprint/v1').digest()
}

/**
 * The server secret: KNS_SECRET when set, otherwise 32 random bytes generated on first
 * start and kept in the database, so derived salts (and so zkLogin addresses) never change.
 * Pinned like the zkLogin issuer: the database keeps a fingerprint of the first secret it was
 * served with, and a start with another one (KNS_SECRET changed, set where it was generated,
 * or left unset where it was set) is refused.
 */
export async function resolveServerSecret(db: Executor, configured: string | undefined, options: { mayPin: boolean } = { mayPin: true }): Promise<Buffer | NoSecretYet> {
  const pinned = await getSetting(db, 'server_secret_fingerprint')
  const kept = await getSetting(db, 'server_secret')
  let secret: Buffer
  if (configured !== undefined) {
    secret = Buffer.from(configured, 'utf8')
    // Not pinned yet (a database from before the pin): the secret it generated and used is the record.
    if (pinned === undefined && kept !== undefined && !timingSafeEqual(fingerprintOf(Buffer.from(kept, 'hex')), fingerprintOf(secret))) {
      throw new ConfigError(`KNS_SECRET is set, but this database generated its own secret and has used it: ${SECRET_USES}. Leave KNS_SECRET unset`)
    }
  } else if (kept !== undefined) {
    secret = Buffer.from(kept, 'hex')
  } else if (pinned !== undefined) {
    throw new ConfigError(`KNS_SECRET is not set, but this database was created with it: set it again (${SECRET_USES})`)
  } else {
    // No secret anywhere yet. Generating one is right only for a database that nothing was
    // derived from, and only for a server (or seed): a one-off command run without the
    // server's KNS_SECRET must not choose the secret for everyone.
    if (await holdsDerivedData(db)) {
      throw new ConfigError(`KNS_SECRET is not set, and this database holds data derived from a secret it has no record of: set KNS_SECRET (${SECRET_USES})`)
    }
    if (!options.mayPin) return NO_SECRET_YET
    secret = Buffer.from(await getOrInitSetting(db, 'server_secret', () => randomBytes(32).toString('hex')), 'hex')
  }
  const fingerprint = fingerprintOf(secret)
  if (pinned === undefined) {
    // Only a server (or seed) pins: a one-off command verifies against a pin, never sets one.
    if (!options.mayPin) return secret
    const first = await getOrInitSetting(db, 'server_secret_fingerprint', () => fingerprint.toString('hex'))
    if (timingSafeEqual(Buffer.from(first, 'hex'), fingerprint)) return secret
  } else if (timingSafeEqual(Buffer.from(pinned, 'hex'), fingerprint)) {
    return secret
  }
  throw new ConfigError(configured !== undefined
    ? `KNS_SECRET is not the secret this database was created with; a start with another secret is refused: ${SECRET_USES}. ` +
      'Use the original secret (or, if the database generated its own, leave KNS_SECRET unset)'
    : `the generated server secret kept in this database does not match its fingerprint (the settings table was edited?): ${SECRET_USES}`)
}

/** Users (zkLogin salts) or statistics clients (keyed hashes): what a secret has derived. */
async function holdsDerivedData(db: Executor): Promise<boolean> {
  const row = await db.get<{ n: number }>('SELECT (SELECT COUNT(*) FROM (SELECT 1 FROM users LIMIT 1) u) + (SELECT COUNT(*) FROM (SELECT 1 FROM stats_sessions LIMIT 1) s) AS n')
  return Number(row?.n ?? 0) > 0
}
