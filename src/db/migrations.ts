import type { Database } from './engine.ts'

export interface Migration {
  version: number
  name: string
  /** Statements in the SQL both engines accept. */
  up: string[]
  /** Statements for one engine only (physical layout), run after `up`. */
  only?: { sqlite?: string[]; postgres?: string[] }
  /**
   * Set only on a migration that removes or changes what a running older release may still
   * use (a DROP, a RENAME, a column's type, a new NOT NULL without a default): why it is safe,
   * naming the release since which no code reads or writes it. Every other migration only adds,
   * so the previous release runs on the new schema during a rolling deploy (docs/operations.md,
   * Upgrades; test/db/migration-promise.test.ts holds migrations to it).
   */
  contract?: string
}

/**
 * The foundation (versions 1-2, 8): settings, keys, users, numbers, approvals, the embedded ledger
 * and the change signals, as first released together. Later migrations live with the area
 * that owns them (e.g. src/stats/migrations.ts) and are put in order by src/migrations.ts.
 * Append-only: a released migration is never edited, a change is a new version.
 * Times are epoch milliseconds; flags are 0/1 integers (see engine.ts).
 */
function ledgerEventsTable(seq: string): string {
  return `CREATE TABLE ledger_events (
    seq ${seq},
    digest TEXT NOT NULL,
    event_index INTEGER NOT NULL,
    type TEXT NOT NULL,
    sender TEXT NOT NULL,
    json TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    UNIQUE (digest, event_index)
  )`
}
const LEDGER_EVENTS_INDEX = 'CREATE INDEX ledger_events_type ON ledger_events (type, seq)'

export const FOUNDATION_MIGRATIONS: Migration[] = [
  {
    version: 1,
    name: 'foundation: settings, api keys, users, numbers, approvals, embedded ledger',
    up: [
      `CREATE TABLE settings (
        name TEXT PRIMARY KEY,
        value TEXT NOT NULL
      )`,
      `CREATE TABLE api_keys (
        id TEXT PRIMARY KEY,
        secret_hash TEXT NOT NULL,
        vendor TEXT NOT NULL,
        scopes TEXT NOT NULL,
        rate INTEGER NOT NULL,
        created_at BIGINT NOT NULL,
        revoked_at BIGINT
      )`,
      `CREATE TABLE users (
        user_id TEXT PRIMARY KEY,
        phone TEXT NOT NULL UNIQUE,
        email TEXT NOT NULL,
        email_normalized TEXT NOT NULL,
        zk_address TEXT NOT NULL,
        created_at BIGINT NOT NULL
      )`,
      `CREATE TABLE numbers (
        phone TEXT PRIMARY KEY,
        object_id TEXT NOT NULL UNIQUE,
        source TEXT NOT NULL,
        country TEXT,
        created_at BIGINT NOT NULL
      )`,
      `CREATE INDEX numbers_created_at ON numbers (created_at)`,
      `CREATE TABLE approvals (
        approval_number TEXT PRIMARY KEY,
        api_key_id TEXT NOT NULL,
        vendor_brand TEXT NOT NULL,
        reference_number TEXT NOT NULL,
        request_hash TEXT NOT NULL,
        title TEXT NOT NULL,
        message TEXT NOT NULL,
        success_redirect_url TEXT NOT NULL,
        cancel_redirect_url TEXT NOT NULL,
        method TEXT NOT NULL,
        object_id TEXT NOT NULL,
        phone_number TEXT,
        status TEXT NOT NULL,
        wallet TEXT,
        proof TEXT,
        created_at BIGINT NOT NULL,
        expires_at BIGINT NOT NULL,
        decided_at BIGINT,
        UNIQUE (api_key_id, reference_number)
      )`,
      `CREATE TABLE ledger_objects (
        object_id TEXT PRIMARY KEY,
        type TEXT NOT NULL,
        owner TEXT NOT NULL,
        version BIGINT NOT NULL,
        created_at BIGINT NOT NULL
      )`,
      `CREATE TABLE ledger_transactions (
        digest TEXT PRIMARY KEY,
        sender TEXT NOT NULL,
        status TEXT NOT NULL,
        events TEXT NOT NULL,
        created_at BIGINT NOT NULL
      )`,
    ],
  },
  {
    version: 2,
    name: 'caller verification: embedded keystores, keystore links, change log',
    up: [
      `CREATE TABLE ledger_keystores (
        object_id TEXT PRIMARY KEY,
        name TEXT NOT NULL,
        creator TEXT NOT NULL,
        image_url TEXT,
        created_at BIGINT NOT NULL
      )`,
      `CREATE TABLE ledger_keystore_keys (
        keystore_id TEXT NOT NULL REFERENCES ledger_keystores (object_id),
        key_id TEXT NOT NULL,
        public_key TEXT NOT NULL,
        revoked INTEGER NOT NULL DEFAULT 0,
        created_at BIGINT NOT NULL,
        revoked_at BIGINT,
        PRIMARY KEY (keystore_id, key_id)
      )`,
      `CREATE TABLE ledger_keystore_links (
        token_id TEXT NOT NULL,
        keystore_id TEXT NOT NULL REFERENCES ledger_keystores (object_id),
        created_at BIGINT NOT NULL,
        PRIMARY KEY (token_id, keystore_id)
      )`,
      `CREATE TABLE change_versions (
        topic TEXT PRIMARY KEY,
        version BIGINT NOT NULL
      )`,
      `CREATE TABLE change_log (
        topic TEXT NOT NULL,
        version BIGINT NOT NULL,
        subject TEXT NOT NULL,
        created_at BIGINT NOT NULL,
        PRIMARY KEY (topic, version)
      )`,
    ],
  },
  {
    version: 8,
    name: 'embedded ledger: its events in ledger order (the ledger watcher\'s feed); pending approvals by expiry',
    up: [
      // The expiry sweeper's scan: only pending rows, in expiry order.
      `CREATE INDEX approvals_pending_expiry ON approvals (expires_at) WHERE status = 'pending'`,
    ],
    // `seq` orders the feed and is the watcher's cursor: an autoincrementing key on each engine.
    only: {
      sqlite: [ledgerEventsTable('INTEGER PRIMARY KEY AUTOINCREMENT'), LEDGER_EVENTS_INDEX],
      postgres: [ledgerEventsTable('BIGSERIAL PRIMARY KEY'), LEDGER_EVENTS_INDEX],
    },
  },
]

const LOCK_ID = 0x6b6e73 // "kns": one migrator at a time across processes on PostgreSQL

/**
 * How long a migration's statement may wait for a table lock on PostgreSQL, and how often it is
 * tried again. An ALTER TABLE waits for every transaction using the table (a pg_dump, a long
 * report), and while it waits every new query on that table queues behind it: the serving
 * nodes of a rolling deploy would stall for as long as the backup runs. Bounded, the
 * migration gives way (its transaction rolls back, the service goes on) and tries again.
 */
export interface MigrationLockPolicy {
  lockTimeoutMs: number
  attempts: number
  /** Pause before the second attempt; doubled after each, at most 10 s. */
  retryDelayMs: number
}

export const DEFAULT_MIGRATION_LOCK_POLICY: MigrationLockPolicy = { lockTimeoutMs: 2000, attempts: 8, retryDelayMs: 1000 }

/** A migration that could not take its table locks in `attempts` tries: something holds them. */
export class MigrationLockTimeoutError extends Error {
  readonly code = 'MIGRATION_LOCK_TIMEOUT'
  constructor(migration: Migration, policy: MigrationLockPolicy) {
    super(`migration ${migration.version} (${migration.name}) could not lock its tables within ${policy.lockTimeoutMs} ms, ` +
      `${policy.attempts} times: a long transaction holds them (a pg_dump, a report: see pg_stat_activity). ` +
      'Nothing was changed; run kns migrate again once it has ended')
  }
}

const LOCK_NOT_AVAILABLE = '55P03'

/** Applies every pending migration of `migrations` (in order), each in its own transaction. Returns the versions applied. */
export async function migrate(db: Database, migrations: readonly Migration[], policy: MigrationLockPolicy = DEFAULT_MIGRATION_LOCK_POLICY): Promise<number[]> {
  // Under the lock too: concurrent CREATE TABLE IF NOT EXISTS on PostgreSQL can fail with a
  // unique violation in pg_type when two processes start on an empty database at once.
  await db.transaction(async (tx) => {
    if (db.engine === 'postgres') await tx.run('SELECT pg_advisory_xact_lock($1)', [LOCK_ID])
    await tx.run(`CREATE TABLE IF NOT EXISTS schema_migrations (
      version INTEGER PRIMARY KEY,
      name TEXT NOT NULL,
      applied_at BIGINT NOT NULL
    )`)
  })
  const applied: number[] = []
  for (const migration of migrations) {
    if (await applyWithRetries(db, migration, policy)) applied.push(migration.version)
  }
  return applied
}

async function applyWithRetries(db: Database, migration: Migration, policy: MigrationLockPolicy): Promise<boolean> {
  let delay = policy.retryDelayMs
  for (let attempt = 1; ; attempt++) {
    try {
      return await apply(db, migration, policy)
    } catch (err) {
      if ((err as { code?: unknown }).code !== LOCK_NOT_AVAILABLE) throw err
      if (attempt >= policy.attempts) throw new MigrationLockTimeoutError(migration, policy)
      await new Promise((resolve) => setTimeout(resolve, delay))
      delay = Math.min(delay * 2, 10_000)
    }
  }
}

async function apply(db: Database, migration: Migration, policy: MigrationLockPolicy): Promise<boolean> {
  return db.transaction(async (tx) => {
    if (db.engine === 'postgres') {
      await tx.run('SELECT pg_advisory_xact_lock($1)', [LOCK_ID])
      // After the advisory lock: waiting for another migrator is not waiting on the service.
      await tx.run(`SET LOCAL lock_timeout = ${Math.max(1, Math.floor(policy.lockTimeoutMs))}`)
    }
    const row = await tx.get('SELECT version FROM schema_migrations WHERE version = $1', [migration.version])
    if (row !== undefined) return false
    for (const statement of [...migration.up, ...(migration.only?.[db.engine] ?? [])]) await tx.run(statement)
    await tx.run('INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)',
      [migration.version, migration.name, Date.now()])
    return true
  })
}

export async function schemaVersion(db: Database): Promise<number> {
  const row = await db.get<{ v: number | null }>('SELECT MAX(version) AS v FROM schema_migrations')
  return row?.v ?? 0
}
