/**
 * Which failures are "the database is unavailable" (503 DATABASE_UNAVAILABLE, retry later)
 * rather than a bug (500), from the shapes node-postgres and node:sqlite really produce; and
 * the validation of the timeouts that bound every wait for PostgreSQL and Redis.
 */
import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { DatabaseSync } from 'node:sqlite'
import { test } from 'node:test'
import pg from 'pg'
import { postgresTimeouts } from '../../src/db/postgres.ts'
import { isDatabaseUnavailable } from '../../src/db/unavailable.ts'
import { ConfigError } from '../../src/errors.ts'
import { DEFAULT_REDIS_COMMAND_TIMEOUT_MS } from '../../src/lib/rate-limiter.ts'
import { loadConfig } from '../../src/config.ts'
import { freePort } from '../support/process.ts'

const withCode = (message: string, code: string) => Object.assign(new Error(message), { code })

test('unavailable: refused, reset and timed-out connections, shutdown and overload SQLSTATEs, wrapped or aggregated', () => {
  const unavailable = [
    withCode('connect ECONNREFUSED 127.0.0.1:5432', 'ECONNREFUSED'),
    withCode('read ECONNRESET', 'ECONNRESET'),
    withCode('terminating connection due to administrator command', '57P01'),
    withCode('the database system is shutting down', '57P03'),
    withCode('terminating connection because of crash of another server process', '57P02'),
    withCode('sorry, too many clients already', '53300'),
    withCode('could not receive data from client', '08006'),
    withCode('cannot execute INSERT in a read-only transaction', '25006'),
    new Error('Connection terminated unexpectedly'),
    new Error('timeout exceeded when trying to connect'),
    new Error('Query read timeout'),
    new Error('Connection terminated due to connection timeout', { cause: new Error('timeout expired') }),
    new Error('something failed', { cause: withCode('connect ECONNREFUSED', 'ECONNREFUSED') }),
    new AggregateError([withCode('connect ECONNREFUSED ::1:5432', 'ECONNREFUSED'), withCode('connect ECONNREFUSED 127.0.0.1:5432', 'ECONNREFUSED')]),
  ]
  for (const err of unavailable) assert.equal(isDatabaseUnavailable(err), true, err.message)

  const bugs = [
    withCode('duplicate key value violates unique constraint', '23505'),
    withCode('syntax error at or near "SELEC"', '42601'),
    withCode('canceling statement due to statement timeout', '57014'),
    new Error('boom'),
    new TypeError("Cannot read properties of undefined (reading 'x')"),
    'ECONNREFUSED', null, undefined, 42,
  ]
  for (const err of bugs) assert.equal(isDatabaseUnavailable(err), false, String((err as Error)?.message ?? err))
})

test('unavailable: what node-postgres really throws for a port nobody listens on', async () => {
  const pool = new pg.Pool({ connectionString: `postgres://postgres@127.0.0.1:${await freePort()}/x`, connectionTimeoutMillis: 1000 })
  pool.on('error', () => {})
  try {
    const err = await pool.query('SELECT 1').then(() => undefined, (e: unknown) => e)
    assert.ok(err !== undefined)
    assert.equal(isDatabaseUnavailable(err), true, String(err))
  } finally {
    await pool.end()
  }
})

test('unavailable: SQLite busy (another process held the write lock past busy_timeout), not other SQLite errors', () => {
  const dir = mkdtempSync(join(tmpdir(), 'kns-busy-'))
  const holder = new DatabaseSync(join(dir, 'kns.db'))
  const other = new DatabaseSync(join(dir, 'kns.db'))
  try {
    holder.exec('PRAGMA journal_mode = WAL; CREATE TABLE t (x INTEGER)')
    holder.exec('BEGIN IMMEDIATE; INSERT INTO t VALUES (1)')
    other.exec('PRAGMA busy_timeout = 0')
    const busy = (() => { try { other.exec('INSERT INTO t VALUES (2)') } catch (err) { return err } })()
    assert.equal(isDatabaseUnavailable(busy), true, String(busy))
    const missing = (() => { try { other.exec('SELECT * FROM nowhere') } catch (err) { return err } })()
    assert.equal(isDatabaseUnavailable(missing), false, String(missing))
    holder.exec('ROLLBACK')
  } finally {
    holder.close()
    other.close()
    rmSync(dir, { recursive: true, force: true })
  }
})

test('timeouts: defaults, explicit values, 0 = no statement limit, CLI commands unbounded unless set, and a bad value stops the start naming the variable', () => {
  const config = (env: Record<string, string>) => loadConfig(env)
  assert.deepEqual(postgresTimeouts(config({}), 'server'), { connectMs: 5000, queryMs: 30_000 })
  assert.deepEqual(postgresTimeouts(config({}), 'tool'), { connectMs: 5000, queryMs: 0 })
  assert.deepEqual(postgresTimeouts(config({ DATABASE_CONNECT_TIMEOUT_MS: '800', DATABASE_QUERY_TIMEOUT_MS: '0' }), 'server'), { connectMs: 800, queryMs: 0 })
  assert.deepEqual(postgresTimeouts(config({ DATABASE_QUERY_TIMEOUT_MS: '1000' }), 'tool'), { connectMs: 5000, queryMs: 1000 })
  for (const [name, value] of [['DATABASE_CONNECT_TIMEOUT_MS', '0'], ['DATABASE_CONNECT_TIMEOUT_MS', '5s'], ['DATABASE_QUERY_TIMEOUT_MS', '-1'],
    ['DATABASE_QUERY_TIMEOUT_MS', '9999999'], ['REDIS_COMMAND_TIMEOUT_MS', '0']] as const) {
    assert.throws(() => config({ [name]: value }), (err: unknown) => err instanceof ConfigError && err.message.includes(name), `${name}=${value}`)
  }
  assert.equal(config({}).redisCommandTimeoutMs, DEFAULT_REDIS_COMMAND_TIMEOUT_MS)
  assert.equal(config({ REDIS_COMMAND_TIMEOUT_MS: '100' }).redisCommandTimeoutMs, 100)
})
