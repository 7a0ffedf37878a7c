/**
 * What migrations promise a rolling deploy (docs/operations.md, Upgrades): (1) from version 20
 * on, a migration only adds, so the previous release runs on the new schema while nodes are
 * replaced one by one; one that removes or changes says why in `contract`; (2) on PostgreSQL a
 * migration waits at most `lockTimeoutMs` for a table's lock at a time, so a long transaction
 * (a pg_dump) cannot make it stall every query queued behind it; it gives way and tries again.
 */
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { ENGINE, startHarness, type Harness } from '../helpers.ts'
import { migrate, MigrationLockTimeoutError, type Migration } from '../../src/db/migrations.ts'
import { MIGRATIONS } from '../../src/migrations.ts'

/** The first version written under the promise; 1-19 were released before it was made. */
const FIRST_PROMISED = 20

/** Why a statement could break the previous release on the new schema, or undefined. */
export function breakingReason(statement: string): string | undefined {
  const sql = statement.replace(/--[^\n]*/g, ' ').replace(/\s+/g, ' ').trim()
  if (/^CREATE (UNIQUE )?INDEX /i.test(sql)) return undefined
  if (/^CREATE TABLE /i.test(sql)) return undefined
  if (/^DROP INDEX /i.test(sql)) return undefined // slower queries at worst, never a failing one
  if (/^(INSERT INTO|UPDATE) /i.test(sql)) return undefined // backfills
  const add = /^ALTER TABLE \S+ ADD COLUMN (.*)$/i.exec(sql)
  if (add) {
    if (/,\s*(ADD|DROP|ALTER|RENAME)\b/i.test(add[1]!)) return 'one ALTER TABLE per change, so each is checked'
    if (/\bNOT NULL\b/i.test(add[1]!) && !/\bDEFAULT\b/i.test(add[1]!)) return 'a NOT NULL column without a DEFAULT: the previous release inserts rows without it'
    return undefined
  }
  return 'not additive (a DROP, a RENAME, a type or constraint change): the previous release may still use it'
}

describe('migrations promise a rolling deploy', () => {
  test(`from version ${FIRST_PROMISED} on, every statement only adds, unless the migration says why in contract`, () => {
    const broken: string[] = []
    for (const migration of MIGRATIONS.filter((m) => m.version >= FIRST_PROMISED)) {
      if (migration.contract !== undefined) {
        assert.ok(migration.contract.trim().length >= 20, `migration ${migration.version}: contract names the release since which nothing uses what it removes`)
        continue
      }
      for (const statement of [...migration.up, ...(migration.only?.sqlite ?? []), ...(migration.only?.postgres ?? [])]) {
        const reason = breakingReason(statement)
        if (reason !== undefined) broken.push(`migration ${migration.version}: ${reason}: ${statement.slice(0, 120)}`)
      }
    }
    assert.deepEqual(broken, [])
  })

  test('the check tells additive statements from breaking ones', () => {
    for (const additive of [
      'CREATE TABLE t (a TEXT)', 'CREATE INDEX i ON t (a)', 'CREATE UNIQUE INDEX i ON t (a) WHERE b = 1',
      'ALTER TABLE t ADD COLUMN b TEXT', 'ALTER TABLE t ADD COLUMN n INTEGER NOT NULL DEFAULT 0', 'UPDATE t SET n = 1', 'DROP INDEX i',
    ]) assert.equal(breakingReason(additive), undefined, additive)
    for (const breaking of [
      'DROP TABLE t', 'ALTER TABLE t RENAME TO u', 'ALTER TABLE t RENAME COLUMN a TO b', 'ALTER TABLE t DROP COLUMN a',
      'ALTER TABLE t ALTER COLUMN a TYPE INTEGER', 'ALTER TABLE t ALTER COLUMN a SET NOT NULL', 'ALTER TABLE t ADD COLUMN n INTEGER NOT NULL',
      'ALTER TABLE t ADD COLUMN b TEXT, DROP COLUMN a', 'ALTER TABLE t ADD CONSTRAINT c CHECK (a <> \'\')',
    ]) assert.notEqual(breakingReason(breaking), undefined, breaking)
  })
})

describe('a migration gives way to a long transaction (PostgreSQL lock_timeout)', { skip: ENGINE !== 'postgres' && 'PostgreSQL only (SQLite: one writer, no lock queue)' }, () => {
  let h: Harness
  before(async () => {
    h = await startHarness()
    await h.service.db.run('CREATE TABLE promise_probe (id INTEGER PRIMARY KEY)')
    await h.service.db.run('INSERT INTO promise_probe (id) VALUES (1)')
  })
  after(async () => { await h?.close() })

  const addColumn = (version: number): Migration => ({ version, name: `probe ${version}`, up: [`ALTER TABLE promise_probe ADD COLUMN c${version} TEXT`] })
  const columns = async () => (await h.service.db.all<{ column_name: string }>(
    `SELECT column_name FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = 'promise_probe'`)).map((r) => r.column_name).sort()
  const recorded = async (version: number) => (await h.service.db.get('SELECT version FROM schema_migrations WHERE version = $1', [version])) !== undefined

  /** A transaction that has read the table (as pg_dump has) and holds its lock until released. */
  function longReader(): { read: Promise<void>; release: () => void; done: Promise<void> } {
    let release!: () => void
    const released = new Promise<void>((resolve) => { release = resolve })
    let reading!: () => void
    const read = new Promise<void>((resolve) => { reading = resolve })
    const done = h.service.db.transaction(async (tx) => {
      await tx.get('SELECT id FROM promise_probe LIMIT 1')
      reading()
      await released
    })
    return { read, release, done }
  }

  test('held all along: the migration gives up with MIGRATION_LOCK_TIMEOUT, changes nothing, and reads were never stuck behind it', async () => {
    const reader = longReader()
    await reader.read
    const migrating = migrate(h.service.db, [addColumn(1001)], { lockTimeoutMs: 100, attempts: 3, retryDelayMs: 50 })
    // While it retries, another session reads the table: between attempts nothing queues it.
    let reads = 0
    const reading = (async () => {
      for (let i = 0; i < 5; i++) { await h.service.db.get('SELECT id FROM promise_probe WHERE id = 1'); reads++ }
    })()
    await assert.rejects(migrating, (err: unknown) => err instanceof MigrationLockTimeoutError && err.code === 'MIGRATION_LOCK_TIMEOUT' && /migration 1001/.test(err.message))
    await reading
    assert.equal(reads, 5)
    reader.release()
    await reader.done
    assert.deepEqual(await columns(), ['id'])
    assert.equal(await recorded(1001), false)
  })

  test('released while it retries: the migration goes through', async () => {
    const reader = longReader()
    await reader.read
    const migrating = migrate(h.service.db, [addColumn(1002)], { lockTimeoutMs: 100, attempts: 20, retryDelayMs: 50 })
    setTimeout(() => reader.release(), 400)
    assert.deepEqual(await migrating, [1002])
    await reader.done
    assert.deepEqual(await columns(), ['c1002', 'id'])
    assert.equal(await recorded(1002), true)
  })
})
