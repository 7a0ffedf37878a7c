/**
 * Migration 5 moves the client history to week-first keys and derives each network client's
 * first week: a database with statistics from before it keeps every row.
 */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { migrate, MIGRATIONS } from '../../src/db/migrations.ts'
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
    assert.deepEqual(await migrate(db), [5])
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
