import { join } from 'node:path'
import type { Config } from '../config.ts'
import type { Database } from './engine.ts'
import { refuseTransactionPooler } from './pooler-check.ts'
import { PostgresDatabase, postgresTimeouts } from './postgres.ts'
import { SqliteDatabase } from './sqlite.ts'

type DatabaseConfig = Pick<Config, 'databaseUrl' | 'databaseDirectUrl' | 'dataDir' | 'databaseConnectTimeoutMs' | 'databaseQueryTimeoutMs'>

/** PostgreSQL when DATABASE_URL is set, otherwise the embedded SQLite file `$DATA_DIR/kns.db`. */
export function openDatabase(config: DatabaseConfig, role: 'server' | 'tool' = 'server'): Database {
  if (config.databaseUrl !== undefined) {
    return new PostgresDatabase(config.databaseUrl, {
      timeouts: postgresTimeouts(config, role),
      ...(config.databaseDirectUrl === undefined ? {} : { directUrl: config.databaseDirectUrl }),
    })
  }
  return new SqliteDatabase(join(config.dataDir, 'kns.db'))
}

/**
 * openDatabase, for what writes or serves (the server, `kns migrate`, every command through
 * openService): on PostgreSQL, first refuses a transaction pooler the settings do not account
 * for (pooler-check.ts), which would otherwise fail later and only some of the time.
 */
export async function openCheckedDatabase(config: DatabaseConfig, role: 'server' | 'tool' = 'server'): Promise<Database> {
  const db = openDatabase(config, role)
  try {
    if (db instanceof PostgresDatabase) await refuseTransactionPooler(db)
    return db
  } catch (err) {
    await db.close().catch(() => {})
    throw err
  }
}
