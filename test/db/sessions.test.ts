/**
 * PostgreSQL connections when a failover reaches them, on the shared server without root: the
 * pool's, when their session is terminated (57P01) or turns read-only (25006, as on a demoted
 * primary: here with a session's own default_transaction_read_only); and the sessions that live
 * outside the pool (the change signal's LISTEN, the leader locks), when their connection ends
 * (pg_terminate_backend, as a failover or a restart ends every session) or goes silent (a
 * network cut: no RST, nothing answers). PostgreSQL only (the suite's second pass); only this
 * file's own backends are terminated, found by an application_name of its own.
 */
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { after, before, describe, test } from 'node:test'
import pg from 'pg'
import { ChangeWatcher, signalHint } from '../../src/db/change-signal.ts'
import { APPROVAL_TOPIC } from '../../src/db/change-topics.ts'
import { LEASE_MS, LeaderLock } from '../../src/db/leader-lock.ts'
import { migrate } from '../../src/db/migrations.ts'
import { PostgresDatabase } from '../../src/db/postgres.ts'
import { READ_ONLY_QUERY } from '../../src/db/postgres-session.ts'
import { isDatabaseUnavailable } from '../../src/db/unavailable.ts'
import { MIGRATIONS } from '../../src/migrations.ts'
import { ENGINE, freshDatabaseEnv, type TestEnv } from '../helpers.ts'
import { sleep } from '../support/process.ts'
import { TcpProxy } from '../support/tcp-proxy.ts'

const skip = ENGINE === 'postgres' ? false : 'PostgreSQL only: set DATABASE_URL'

let fresh: TestEnv
/** This file's connections, with an application_name that is this run's alone. */
let url: string
let appName: string
let admin: pg.Client
let sender: PostgresDatabase

before(async () => {
  if (skip) return
  fresh = await freshDatabaseEnv()
  appName = `kns-sessions-${randomBytes(4).toString('hex')}`
  const withName = new URL(fresh.env.DATABASE_URL!)
  withName.searchParams.set('application_name', appName)
  url = withName.toString()
  sender = new PostgresDatabase(fresh.env.DATABASE_URL!)
  await migrate(sender, MIGRATIONS)
  admin = new pg.Client({ connectionString: process.env.DATABASE_URL })
  await admin.connect()
})

after(async () => {
  await admin?.end()
  await sender?.close()
  await fresh?.cleanup()
})

/** Sends a hint (a NOTIFY only: no version row, so polling cannot deliver it) until `watcher` hears it, or `ms` pass. */
async function hintArrives(watcher: ChangeWatcher, ms: number): Promise<boolean> {
  const subject = `probe:${randomBytes(4).toString('hex')}`
  let heard = false
  const hear = (topic: string, got: string | null) => { if (topic === APPROVAL_TOPIC && got === subject) heard = true }
  watcher.on('change', hear)
  try {
    const deadline = Date.now() + ms
    while (!heard && Date.now() < deadline) {
      await signalHint(sender, APPROVAL_TOPIC, subject)
      await sleep(100)
    }
    return heard
  } finally {
    watcher.off('change', hear)
  }
}

/** This file's LISTEN backend: the session whose last statement was the LISTEN or its check. */
async function listenBackends(): Promise<number[]> {
  const { rows } = await admin.query<{ pid: number }>(
    `SELECT pid FROM pg_stat_activity WHERE application_name = $1 AND (query LIKE 'LISTEN %' OR query = $2)`, [appName, READ_ONLY_QUERY])
  return rows.map((r) => r.pid)
}

/** The backend holding `name`'s leader lock (pg_locks: a bigint advisory key is split in classid, objid). */
async function lockHolder(name: string): Promise<number | undefined> {
  const { rows } = await admin.query<{ pid: number }>(
    `SELECT l.pid FROM pg_locks l WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1 AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
       AND ((l.classid::bigint << 32) | l.objid::bigint) = hashtext($1 || ':' || $2)::bigint`, [await schemaOf(), name])
  return rows[0]?.pid
}

async function schemaOf(): Promise<string> {
  return (await sender.get<{ s: string }>('SELECT current_schema() AS s'))!.s
}

function targetOf(connectionString: string): { host: string; port: number } {
  const parsed = new URL(connectionString)
  return { host: parsed.hostname, port: Number(parsed.port || 5432) }
}

async function until(check: () => boolean | Promise<boolean>, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms
  while (Date.now() < deadline) {
    if (await check()) return true
    await sleep(50)
  }
  return check()
}

describe('the pool', { skip }, () => {
  const pid = 'SELECT pg_backend_pid() AS pid'

  test('a connection terminated inside a transaction (57P01): that transaction fails as unavailable, the connection is not pooled again', async () => {
    const db = new PostgresDatabase(url, { max: 2 })
    try {
      let backend: number | undefined
      const failed = await db.transaction(async (tx) => {
        backend = (await tx.get<{ pid: number }>(pid))!.pid
        await admin.query('SELECT pg_terminate_backend($1)', [backend])
        await tx.get(pid)
      }).then(() => undefined, (err: unknown) => err)
      assert.ok(isDatabaseUnavailable(failed), `not unavailable: ${String(failed)}`)
      const after = await Promise.all([0, 1, 2, 3].map(() => db.get<{ pid: number }>(pid)))
      assert.ok(backend !== undefined && after.every((r) => r !== undefined && r.pid !== backend), 'a statement ran on the terminated connection')
    } finally {
      await db.close()
    }
  })

  test('every connection read-only (a demoted primary): one write fails (25006, unavailable), /readyz\'s probe says read-only once, and the pool is replaced', async () => {
    const table = `t_${randomBytes(4).toString('hex')}`
    await sender.run(`CREATE TABLE ${table} (n INTEGER)`)
    const db = new PostgresDatabase(url, { max: 3 })
    try {
      // Three connections at once, each made read-only for the rest of its session.
      await Promise.all([0, 1, 2].map(() => db.exec('SET default_transaction_read_only = on; SELECT pg_sleep(0.1)')))
      const write = () => db.run(`INSERT INTO ${table} (n) VALUES (1)`)
      const refused = await write().then(() => undefined, (err: unknown) => err)
      assert.equal((refused as { code?: string })?.code, '25006')
      assert.ok(isDatabaseUnavailable(refused), 'answered 503 DATABASE_UNAVAILABLE')
      // Before, the two idle read-only connections beside it failed the next writes in turn.
      for (let i = 0; i < 6; i++) await write()

      await Promise.all([0, 1, 2].map(() => db.exec('SET default_transaction_read_only = on; SELECT pg_sleep(0.1)')))
      assert.equal(await db.ping(), 'read-only')
      assert.equal(await db.ping(), 'writable', 'the probe reached a new connection')
      for (let i = 0; i < 6; i++) await write()
    } finally {
      await db.close()
      await sender.run(`DROP TABLE ${table}`)
    }
  })
})

describe('the change signal\'s LISTEN session', { skip }, () => {
  test('terminated (pg_terminate_backend): LISTEN is made again, and a NOTIFY sent afterwards arrives', async () => {
    const db = new PostgresDatabase(url)
    const watcher = new ChangeWatcher(db, [APPROVAL_TOPIC])
    try {
      await watcher.start()
      assert.ok(await hintArrives(watcher, 5000), 'a NOTIFY before')
      const [pid, ...others] = await listenBackends()
      assert.ok(pid !== undefined && others.length === 0, `one LISTEN backend: ${[pid, ...others]}`)
      await admin.query('SELECT pg_terminate_backend($1)', [pid])
      assert.ok(await hintArrives(watcher, 10_000), 'no NOTIFY heard after the LISTEN backend was terminated')
      const again = await listenBackends()
      assert.equal(again.length, 1)
      assert.notEqual(again[0], pid, 'a new session listens')
    } finally {
      await watcher.close()
      await db.close()
    }
  })

  test('gone silent (a cut: no RST, nothing answers): given up within seconds and made again where the address leads now', async () => {
    const proxy = await TcpProxy.start(targetOf(url))
    const db = new PostgresDatabase(proxy.url(url))
    const watcher = new ChangeWatcher(db, [APPROVAL_TOPIC])
    try {
      await watcher.start()
      assert.ok(await hintArrives(watcher, 5000), 'a NOTIFY before')
      // The LISTEN's connection goes silent; new connections get through (the address leads
      // somewhere that answers). Before: the session waited for NOTIFYs that never came, forever.
      proxy.silence()
      assert.ok(await hintArrives(watcher, 15_000), 'no NOTIFY heard after the LISTEN connection went silent')
    } finally {
      // First: ending a connection that went silent waits for an answer that never comes.
      await proxy.close()
      await watcher.close()
      await db.close()
    }
  })
})

describe('LeaderLock', { skip }, () => {
  test('the holder\'s backend terminated: it says not held at once, and another takes the lock', async () => {
    const name = `job-${randomBytes(3).toString('hex')}`
    const [dbA, dbB] = [new PostgresDatabase(url), new PostgresDatabase(url)]
    const [a, b] = [new LeaderLock(dbA, name), new LeaderLock(dbB, name)]
    try {
      assert.equal(await a.acquire(), true)
      assert.equal(await b.acquire(), false, 'one holder at a time')
      const holder = await lockHolder(name)
      assert.ok(holder !== undefined, 'the lock is in pg_locks')
      await admin.query('SELECT pg_terminate_backend($1)', [holder])
      // The connection's end, not the lease: well before LEASE_MS.
      assert.ok(await until(() => !a.held, LEASE_MS / 2), 'the first still says it holds the lock')
      assert.equal(await b.acquire(), true, 'the second takes over')
      assert.equal(a.held, false)
      assert.equal(await a.acquire(), false, 'and the first, asking again, does not get it')
      assert.notEqual(await lockHolder(name), holder)
    } finally {
      await Promise.all([a.close(), b.close()])
      await Promise.all([dbA.close(), dbB.close()])
    }
  })

  test('the holder\'s connection gone silent: held turns false once the lease runs out; the lock moves when the connection closes', async () => {
    const name = `job-${randomBytes(3).toString('hex')}`
    const proxy = await TcpProxy.start(targetOf(url))
    const [dbA, dbB] = [new PostgresDatabase(proxy.url(url)), new PostgresDatabase(url)]
    const [a, b] = [new LeaderLock(dbA, name), new LeaderLock(dbB, name)]
    try {
      assert.equal(await a.acquire(), true)
      proxy.silence()
      const silencedAt = Date.now()
      // Before: held stayed true for up to 15 s (a check every 10 s, 5 s to time out). Now a
      // lease: LEASE_MS after the last answer, whatever the timers did meanwhile.
      await sleep(LEASE_MS + 200)
      assert.equal(a.held, false, `still held ${Date.now() - silencedAt} ms after the cut`)
      // The server's peer is the proxy, which keeps its side open: the lock is still taken there.
      assert.equal(await b.acquire(), false)
      // The proxy closes it (HAProxy's client-side keepalive, docs/operations.md): released.
      proxy.cut()
      assert.ok(await until(async () => await b.acquire(), 5000), 'the lock did not move once the holder\'s connection closed')
    } finally {
      await proxy.close()
      await Promise.all([a.close(), b.close()])
      await Promise.all([dbA.close(), dbB.close()])
    }
  })
})
