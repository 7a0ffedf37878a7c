import { join } from 'node:path'
import type { Config } from '../config.ts'
import type { Database } from './engine.ts'
import { PostgresDatabase, postgresTimeouts } from './postgres.ts'
import { SqliteDatabase } from './sqlite.ts'

/** PostgreSQL when DATABASE_URL is set, otherwise the embedded SQLite file `$DATA_DIR/kns.db`. */
export function openDatabase(config: Pick<Config, 'databaseUrl' | 'dataDir' | 'databaseConnectTimeoutMs' | 'databaseQueryTimeoutMs'>,
  role: 'server' | 'tool' = 'server'): Database {
  if (config.databaseUrl !== undefined) return new PostgresDatabase(config.databaseUrl, { timeouts: postgresTimeouts(config, role) })
  return new SqliteDatabase(join(config.dataDir, 'kns.db'))
}
