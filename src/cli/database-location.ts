/**
 * Which database a CLI command works on, said before it does: the CLI reads the same
 * environment and ./.env as the server, and run from another directory (or without the
 * server's DATA_DIR / DATABASE_URL) it would otherwise create and fill an empty database of
 * its own without a word.
 */
import { existsSync } from 'node:fs'
import { join, resolve } from 'node:path'
import type { Config } from '../config.ts'
import { NotFoundError } from '../errors.ts'

export function describeDatabase(config: Pick<Config, 'databaseUrl' | 'dataDir'>): string {
  if (config.databaseUrl !== undefined) {
    const url = new URL(config.databaseUrl)
    return `PostgreSQL ${url.host}${url.pathname}` // never the password
  }
  return `SQLite ${resolve(join(config.dataDir, 'kns.db'))}`
}

/** PostgreSQL is taken to exist (its database is created by the operator); the embedded one may not. */
export function databaseExists(config: Pick<Config, 'databaseUrl' | 'dataDir'>): boolean {
  return config.databaseUrl !== undefined || existsSync(join(config.dataDir, 'kns.db'))
}

/** Refuses to go on when the embedded database does not exist (only the server, `kns migrate` and `kns seed` create one). */
export function requireExistingDatabase(config: Pick<Config, 'databaseUrl' | 'dataDir'>): void {
  if (databaseExists(config)) return
  const path = resolve(join(config.dataDir, 'kns.db'))
  throw new NotFoundError(`no database at ${path}: run the command where the server runs (its ./.env), or with its ` +
    'DATA_DIR or DATABASE_URL; `kns migrate` creates a new one there')
}
