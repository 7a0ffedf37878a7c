import type { Migration } from '../db/migrations.ts'
import { BUCKET_BYTES_TRIGGER } from './rollups/bucket-bytes.ts'

/**
 * Schema of the public statistics (migration 3). Raw sessions are kept for idempotency and
 * for recomputation; every public answer comes from the rollup tables below them, which
 * ingestion maintains in the same transaction as the raw rows (see rollups/apply-sessions.ts).
 *
 * Widths are bucket lengths in milliseconds (3600000 hour, 86400000 day, 604800000 week);
 * buckets are aligned to UTC (weeks start on Monday 00:00 UTC).
 */
export const STATS_MIGRATION: string[] = [
  `CREATE TABLE stats_gateways (
    uid TEXT PRIMARY KEY,
    location TEXT NOT NULL,
    lat DOUBLE PRECISION NOT NULL,
    lon DOUBLE PRECISION NOT NULL,
    status TEXT NOT NULL,
    spectrum TEXT NOT NULL,
    updated_at BIGINT NOT NULL
  )`,
  `CREATE TABLE stats_wifi_nodes (
    uid TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    status TEXT NOT NULL,
    model TEXT NOT NULL,
    wifi_level TEXT NOT NULL,
    lat DOUBLE PRECISION NOT NULL,
    lon DOUBLE PRECISION NOT NULL,
    updated_at BIGINT NOT NULL
  )`,
  // Keyed by time first so that inserts append to the index (a random-keyed index on
  // session_id alone made bulk ingestion 3x slower; see docs/design/rollups.md). A session never changes
  // its start, so (start, sessionId) still identifies a re-sent session.
  `CREATE TABLE stats_sessions (
    start_ms BIGINT NOT NULL,
    session_id TEXT NOT NULL,
    network TEXT NOT NULL,
    node_uid TEXT NOT NULL,
    client_hash TEXT NOT NULL,
    end_ms BIGINT NOT NULL,
    bytes_up BIGINT NOT NULL,
    bytes_down BIGINT NOT NULL,
    PRIMARY KEY (start_ms, session_id)
  )`,
  // Per network, width and bucket: sessions that started in it, their bytes, the distinct
  // clients active in it and how many of those were seen for the first time.
  `CREATE TABLE stats_buckets (
    network TEXT NOT NULL,
    width BIGINT NOT NULL,
    bucket_ms BIGINT NOT NULL,
    sessions BIGINT NOT NULL,
    bytes BIGINT NOT NULL,
    clients BIGINT NOT NULL,
    new_clients BIGINT NOT NULL,
    PRIMARY KEY (network, width, bucket_ms)
  )`,
  // Clients active in a bucket, by the bucket of their previous activity (prev_ms; -1 = never
  // before, -2 = longer ago than any period of this width can reach). Distinct clients over
  // buckets [A, B) = the rows in [A, B) whose prev_ms < A: each client is counted once, at
  // its first active bucket in the period.
  `CREATE TABLE stats_bucket_clients (
    network TEXT NOT NULL,
    width BIGINT NOT NULL,
    bucket_ms BIGINT NOT NULL,
    prev_ms BIGINT NOT NULL,
    clients BIGINT NOT NULL,
    PRIMARY KEY (network, width, bucket_ms, prev_ms)
  )`,
  // Each client's activity per network and UTC week: d0..d6 are 24-bit masks of the hours
  // (Monday first) in which it started a session. Late or out-of-order sessions are
  // folded in exactly by recomputing the affected client's buckets from these masks.
  `CREATE TABLE stats_client_weeks (
    network TEXT NOT NULL,
    client_hash TEXT NOT NULL,
    week_ms BIGINT NOT NULL,
    d0 INTEGER NOT NULL, d1 INTEGER NOT NULL, d2 INTEGER NOT NULL, d3 INTEGER NOT NULL,
    d4 INTEGER NOT NULL, d5 INTEGER NOT NULL, d6 INTEGER NOT NULL,
    PRIMARY KEY (network, client_hash, week_ms)
  )`,
  // Every client ever seen on either network: the global distinct count.
  `CREATE TABLE stats_clients (
    client_hash TEXT PRIMARY KEY
  )`,
  // One row: a version bumped by every change to the statistics (ETags, result cache), the
  // number of rows of stats_clients, and the first week whose rollups a bulk import still has
  // to recompute from the raw sessions (null when none).
  `CREATE TABLE stats_meta (
    id INTEGER PRIMARY KEY,
    version BIGINT NOT NULL,
    all_clients BIGINT NOT NULL,
    rebuild_from BIGINT
  )`,
  `INSERT INTO stats_meta (id, version, all_clients, rebuild_from) VALUES (1, 0, 0, NULL)`,
  // Sign-up statistics read numbers by time and country: index-only.
  `CREATE INDEX numbers_created_country ON numbers (created_at, country)`,
]

/** Recreates a SQLite table under the same name with `definition` (same columns), keeping its rows. */
function recreate(table: string, definition: string, columns: string): string[] {
  return [
    `CREATE TABLE ${table}_v4 ${definition}`,
    `INSERT INTO ${table}_v4 (${columns}) SELECT ${columns} FROM ${table}`,
    `DROP TABLE ${table}`,
    `ALTER TABLE ${table}_v4 RENAME TO ${table}`,
  ]
}

/**
 * Migration 4, physical layout only. SQLite stores a table with a composite primary key as a
 * rowid b-tree plus a separate index on the key; WITHOUT ROWID keeps one b-tree ordered by the
 * key, so an insert touches half the pages (and stats_sessions, keyed by time first, appends).
 * Measured on `kns stats import`: see docs/design/import.md. PostgreSQL has no such choice.
 */
export const STATS_LAYOUT_MIGRATION: { sqlite: string[]; postgres: string[] } = {
  sqlite: [
    ...recreate('stats_sessions', `(
      start_ms BIGINT NOT NULL, session_id TEXT NOT NULL, network TEXT NOT NULL, node_uid TEXT NOT NULL, client_hash TEXT NOT NULL,
      end_ms BIGINT NOT NULL, bytes_up BIGINT NOT NULL, bytes_down BIGINT NOT NULL,
      PRIMARY KEY (start_ms, session_id)
    ) WITHOUT ROWID`, 'start_ms, session_id, network, node_uid, client_hash, end_ms, bytes_up, bytes_down'),
    ...recreate('stats_buckets', `(
      network TEXT NOT NULL, width BIGINT NOT NULL, bucket_ms BIGINT NOT NULL,
      sessions BIGINT NOT NULL, bytes BIGINT NOT NULL, clients BIGINT NOT NULL, new_clients BIGINT NOT NULL,
      PRIMARY KEY (network, width, bucket_ms)
    ) WITHOUT ROWID`, 'network, width, bucket_ms, sessions, bytes, clients, new_clients'),
    ...recreate('stats_bucket_clients', `(
      network TEXT NOT NULL, width BIGINT NOT NULL, bucket_ms BIGINT NOT NULL, prev_ms BIGINT NOT NULL, clients BIGINT NOT NULL,
      PRIMARY KEY (network, width, bucket_ms, prev_ms)
    ) WITHOUT ROWID`, 'network, width, bucket_ms, prev_ms, clients'),
    ...recreate('stats_client_weeks', `(
      network TEXT NOT NULL, client_hash TEXT NOT NULL, week_ms BIGINT NOT NULL,
      d0 INTEGER NOT NULL, d1 INTEGER NOT NULL, d2 INTEGER NOT NULL, d3 INTEGER NOT NULL,
      d4 INTEGER NOT NULL, d5 INTEGER NOT NULL, d6 INTEGER NOT NULL,
      PRIMARY KEY (network, client_hash, week_ms)
    ) WITHOUT ROWID`, 'network, client_hash, week_ms, d0, d1, d2, d3, d4, d5, d6'),
    ...recreate('stats_clients', '(client_hash TEXT PRIMARY KEY) WITHOUT ROWID', 'client_hash'),
  ],
  postgres: [],
}

/**
 * Migration 5: client history keyed by week first. A bulk import writes each week's client
 * rows together, so keyed by client first they landed all over the table and every commit
 * rewrote most of it; keyed by week they append. A client's own rows are then found by point
 * lookups, bounded by its first week per network, kept in stats_network_clients (client-history.ts).
 */
function weekFirstLayout(withoutRowid: string): string[] {
  const columns = 'network, week_ms, client_hash, d0, d1, d2, d3, d4, d5, d6'
  return [
    `CREATE TABLE stats_client_weeks_v5 (
      network TEXT NOT NULL, week_ms BIGINT NOT NULL, client_hash TEXT NOT NULL,
      d0 INTEGER NOT NULL, d1 INTEGER NOT NULL, d2 INTEGER NOT NULL, d3 INTEGER NOT NULL,
      d4 INTEGER NOT NULL, d5 INTEGER NOT NULL, d6 INTEGER NOT NULL,
      PRIMARY KEY (network, week_ms, client_hash)
    )${withoutRowid}`,
    `INSERT INTO stats_client_weeks_v5 (${columns}) SELECT ${columns} FROM stats_client_weeks`,
    `CREATE TABLE stats_network_clients (
      network TEXT NOT NULL, client_hash TEXT NOT NULL, first_week BIGINT NOT NULL,
      PRIMARY KEY (network, client_hash)
    )${withoutRowid}`,
    `INSERT INTO stats_network_clients (network, client_hash, first_week)
      SELECT network, client_hash, MIN(week_ms) FROM stats_client_weeks GROUP BY network, client_hash`,
    'DROP TABLE stats_client_weeks',
    'ALTER TABLE stats_client_weeks_v5 RENAME TO stats_client_weeks',
  ]
}

export const STATS_WEEK_FIRST_MIGRATION: { sqlite: string[]; postgres: string[] } = {
  sqlite: weekFirstLayout(' WITHOUT ROWID'),
  postgres: weekFirstLayout(''),
}

/**
 * Migration 6 (PostgreSQL): the statistics' text keys compare byte by byte (COLLATE "C"), as
 * SQLite's BINARY does. Under a libc locale such as C.UTF-8 every comparison in their indexes
 * went through strcoll; a 10-million-session import makes about a billion of them.
 * Only the indexes are rebuilt; the values and their (ASCII) order are unchanged.
 */
export const STATS_BYTEWISE_KEYS_MIGRATION: { postgres: string[] } = {
  postgres: [
    'ALTER TABLE stats_sessions ALTER COLUMN session_id TYPE TEXT COLLATE "C"',
    'ALTER TABLE stats_buckets ALTER COLUMN network TYPE TEXT COLLATE "C"',
    'ALTER TABLE stats_bucket_clients ALTER COLUMN network TYPE TEXT COLLATE "C"',
    'ALTER TABLE stats_client_weeks ALTER COLUMN network TYPE TEXT COLLATE "C", ALTER COLUMN client_hash TYPE TEXT COLLATE "C"',
    'ALTER TABLE stats_network_clients ALTER COLUMN network TYPE TEXT COLLATE "C", ALTER COLUMN client_hash TYPE TEXT COLLATE "C"',
    'ALTER TABLE stats_clients ALTER COLUMN client_hash TYPE TEXT COLLATE "C"',
  ],
}

/** The statistics' migrations (versions 3-7), in order; src/migrations.ts puts every area's together. */
export const STATS_MIGRATIONS: Migration[] = [
  {
    version: 3,
    name: 'public statistics: nodes, usage sessions and their rollups',
    up: STATS_MIGRATION,
  },
  {
    version: 4,
    name: 'public statistics: clustered tables for bulk import (SQLite WITHOUT ROWID)',
    up: [],
    only: STATS_LAYOUT_MIGRATION,
  },
  {
    version: 5,
    name: 'public statistics: client history keyed by week first, first week per network client',
    up: [],
    only: STATS_WEEK_FIRST_MIGRATION,
  },
  {
    version: 6,
    name: 'public statistics: text keys compared byte by byte on PostgreSQL',
    up: [],
    only: STATS_BYTEWISE_KEYS_MIGRATION,
  },
  {
    version: 7,
    name: 'public statistics: a bucket byte total that leaves the 64-bit integers is refused on SQLite too',
    up: [],
    only: { sqlite: [BUCKET_BYTES_TRIGGER] },
  },
]
