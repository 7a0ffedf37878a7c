/**
 * Migration 5 moves the client history to week-first keys and derives each network client's
 * first week; migration 6 makes PostgreSQL compare the text keys byte by byte. A database
 * with statistics from before them keeps every row.
 */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { migrate } from '../../src/db/migrations.ts'
import { MIGRATIONS } from '../../src/migrations.ts'
import { openDatabase } from '../../src/db/open.ts'
import { freshDatabaseEnv } from '../helpers.ts'

const W = 604_800_000
const WEEK0 = 1_704_672_000_000 // a Monday

test('migration 5 keeps the client history and records first weeks per network', async () => {
  const fresh = await freshDatabaseEnv()
  const db = openDatabase(fresh.config)
  try {
    await migrate(db, MIGRATIONS.filter((m) => m.version <= 4))
    const old = [
      ['gateway', 'c1', WEEK0 + 3 * W, 1, 0, 0, 0, 0, 0, 2],
      ['gateway', 'c1', WEEK0, 4, 0, 0, 0, 0, 0, 0],
      ['wifi', 'c1', WEEK0 + 5 * W, 0, 8, 0, 0, 0, 0, 0],
      ['gateway', 'c2', WEEK0 + W, 0, 0, 16, 0, 0, 0, 0],
    ]
    for (const row of old) {
      await db.run('INSERT INTO stats_client_weeks (network, client_hash, week_ms, d0, d1, d2, d3, d4, d5, d6) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)', row)
    }
    assert.deepEqual(await migrate(db, MIGRATIONS.filter((m) => m.version <= 5)), [5])
    const rows = await db.all<Record<string, unknown>>('SELECT network, client_hash, week_ms, d0, d1, d2, d6 FROM stats_client_weeks ORDER BY network, week_ms, client_hash')
    assert.deepEqual(rows.map((r) => [r.network, r.client_hash, Number(r.week_ms), Number(r.d0), Number(r.d1), Number(r.d2), Number(r.d6)]), [
      ['gateway', 'c1', WEEK0, 4, 0, 0, 0],
      ['gateway', 'c2', WEEK0 + W, 0, 0, 16, 0],
      ['gateway', 'c1', WEEK0 + 3 * W, 1, 0, 0, 2],
      ['wifi', 'c1', WEEK0 + 5 * W, 0, 8, 0, 0],
    ])
    const first = await db.all<Record<string, unknown>>('SELECT network, client_hash, first_week FROM stats_network_clients ORDER BY network, client_hash')
    assert.deepEqual(first.map((r) => [r.network, r.client_hash, Number(r.first_week)]), [
      ['gateway', 'c1', WEEK0], ['gateway', 'c2', WEEK0 + W], ['wifi', 'c1', WEEK0 + 5 * W],
    ])
  } finally {
    await db.close()
    await fresh.cleanup()
  }
})

test('migration 6: text keys byte by byte on PostgreSQL (nothing to do on SQLite), every row kept', async () => {
  const fresh = await freshDatabaseEnv()
  const db = openDatabase(fresh.config)
  try {
    await migrate(db, MIGRATIONS.filter((m) => m.version <= 5))
    await db.run('INSERT INTO stats_client_weeks (network, week_ms, client_hash, d0, d1, d2, d3, d4, d5, d6) VALUES ($1, $2, $3, 1, 0, 0, 0, 0, 0, 0)', ['wifi', WEEK0, 'Zb'])
    await db.run('INSERT INTO stats_client_weeks (network, week_ms, client_hash, d0, d1, d2, d3, d4, d5, d6) VALUES ($1, $2, $3, 2, 0, 0, 0, 0, 0, 0)', ['wifi', WEEK0, 'a_'])
    assert.deepEqual(await migrate(db, MIGRATIONS.filter((m) => m.version <= 6)), [6])
    const rows = await db.all<{ client_hash: string; d0: number }>('SELECT client_hash, d0 FROM stats_client_weeks ORDER BY client_hash')
    assert.deepEqual(rows.map((r) => [r.client_hash, Number(r.d0)]), [['Zb', 1], ['a_', 2]])
    if (db.engine === 'postgres') {
      const columns = await db.all<{ table_name: string; column_name: string; collation_name: string | null }>(
        `SELECT table_name, column_name, collation_name FROM information_schema.columns
         WHERE table_name IN ('stats_sessions', 'stats_buckets', 'stats_bucket_clients', 'stats_client_weeks', 'stats_network_clients', 'stats_clients')
           AND column_name IN ('session_id', 'network', 'client_hash')
           AND NOT (table_name = 'stats_sessions' AND column_name <> 'session_id')`)
      assert.equal(columns.length, 8)
      assert.deepEqual(columns.filter((c) => c.collation_name !== 'C'), [])
    }
  } finally {
    await db.close()
    await fresh.cleanup()
  }
})
