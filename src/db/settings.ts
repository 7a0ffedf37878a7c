import { randomBytes } from 'node:crypto'
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
 * The server secret: KNS_SECRET when set, otherwise 32 random bytes generated on first
 * start and kept in the database, so derived salts (and so zkLogin addresses) never change.
 */
export async function resolveServerSecret(db: Executor, configured: string | undefined): Promise<Buffer> {
  if (configured !== undefined) return Buffer.from(configured, 'utf8')
  const hex = await getOrInitSetting(db, 'server_secret', () => randomBytes(32).toString('hex'))
  return Buffer.from(hex, 'hex')
}
