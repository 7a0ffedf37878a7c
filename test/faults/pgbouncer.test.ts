/**
 * PgBouncer in transaction mode in front of PostgreSQL (a cluster and a PgBouncer of the test's
 * own): without DATABASE_DIRECT_URL the service refuses to start, naming what breaks and what to
 * set; with it, the pooled connections go through PgBouncer (no named prepared statements, the
 * async pool's setting as SET LOCAL) and LISTEN and the leader locks go direct: migrations run
 * together, approvals are created, a wait on one server is released by a decision through the
 * other, and the ledger watcher runs on one server at a time and moves when it dies. And the
 * detection of a pooler (src/db/pooler-check.ts) against the real thing in every pool mode.
 * Runs in the suite's PostgreSQL pass, as root (pg_createcluster; PgBouncer runs as postgres).
 */
import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import pg from 'pg'
import { poolerEvidence } from '../../src/db/pooler-check.ts'
import { PostgresDatabase } from '../../src/db/postgres.ts'
import { MIGRATIONS } from '../../src/migrations.ts'
import { ENGINE } from '../helpers.ts'
import { approvalPhoneBody, killAll, oneJson, postJson, runKns, sleep, startServer, type RunningServer } from '../support/process.ts'
import { eventually, prepareApprovals } from './fault-checks.ts'
import { pgbouncerClients, pgbouncerUnavailableReason, startPgbouncer, type PgbouncerOptions, type ThrowawayPgbouncer } from './throwaway-pgbouncer.ts'
import { createThrowawayCluster, unavailableReason, type ThrowawayCluster } from './throwaway-postgres.ts'

const skip = ENGINE !== 'postgres' ? 'runs in the PostgreSQL pass (DATABASE_URL set); it makes a cluster of its own'
  : unavailableReason() ?? pgbouncerUnavailableReason() ?? false

let cluster: ThrowawayCluster | undefined
let bouncer: ThrowawayPgbouncer | undefined
let dataDir: string | undefined
/** Through PgBouncer (transaction mode) to the database `kns`; direct to the same. */
let pooledUrl: string
let directUrl: string

before(async () => {
  if (skip) return
  cluster = await createThrowawayCluster()
  const admin = new pg.Client({ connectionString: cluster.url })
  await admin.connect()
  await admin.query('CREATE DATABASE kns')
  await admin.end()
  bouncer = await startPgbouncer(cluster, { poolMode: 'transaction' })
  pooledUrl = bouncer.url('kns')
  directUrl = cluster.url.replace(/\/postgres$/, '/kns')
  dataDir = mkdtempSync(join(tmpdir(), 'kns-pgbouncer-test-'))
})

after(async () => {
  await killAll()
  await bouncer?.stop()
  await cluster?.drop()
  if (dataDir !== undefined) rmSync(dataDir, { recursive: true, force: true })
})

const env = (extra: Record<string, string> = {}) => ({
  DATA_DIR: dataDir!, DATABASE_URL: pooledUrl, LOG_LEVEL: 'warn', PUBLIC_RATE_LIMIT: '0', PUBLIC_BASE_URL: 'https://kns.example.com', ...extra,
})

describe('detecting a transaction pooler', { skip }, () => {
  const cases: Array<[string, PgbouncerOptions, RegExp | null]> = [
    ['transaction mode (refusing `options`)', { poolMode: 'transaction' }, /refused the `options` startup parameter/],
    ['transaction mode, `options` ignored', { poolMode: 'transaction', ignoreStartupParameters: ['options'] }, /server session|two server sessions|waited/],
    ['statement mode, `options` ignored', { poolMode: 'statement', ignoreStartupParameters: ['options'] }, /refused a transaction/],
    ['session mode, `options` ignored: a session is a server connection, nothing breaks', { poolMode: 'session', ignoreStartupParameters: ['options'] }, null],
  ]
  for (const [name, options, expected] of cases) {
    test(name, async () => {
      const other = await startPgbouncer(cluster!, options)
      try {
        const evidence = await poolerEvidence(other.url('kns'), 5000)
        if (expected === null) assert.equal(evidence, null)
        else assert.match(String(evidence), expected)
      } finally {
        await other.stop()
      }
    })
  }

  test('PostgreSQL itself: no evidence', async () => {
    assert.equal(await poolerEvidence(directUrl, 5000), null)
  })
})

describe('the service through PgBouncer in transaction mode', { skip }, () => {
  test('without DATABASE_DIRECT_URL: `kns migrate` and `kns serve` refuse at start, naming what breaks and what to set', async () => {
    for (const args of [['migrate'], ['serve']]) {
      const result = await runKns(args, env(), { timeoutMs: 60_000 })
      assert.equal(result.code, 1, `${args[0]}: ${result.stdout} ${result.stderr}`)
      for (const needle of ['connection pooler', 'LISTEN', 'advisory locks', 'prepared statements', 'DATABASE_DIRECT_URL']) {
        assert.ok(result.stderr.includes(needle), `${args[0]}: no "${needle}" in: ${result.stderr}`)
      }
    }
  })

  test('DATABASE_DIRECT_URL through the pooler too: refused', async () => {
    const result = await runKns(['migrate'], env({ DATABASE_DIRECT_URL: pooledUrl }), { timeoutMs: 60_000 })
    assert.equal(result.code, 1, result.stdout)
    assert.match(result.stderr, /DATABASE_DIRECT_URL reaches a connection pooler/)
  })

  test('pooled statements: no named prepared statements (two clients, one statement, many times), the async pool\'s setting per transaction and only there', async () => {
    const [a, b] = [new PostgresDatabase(pooledUrl, { directUrl }), new PostgresDatabase(pooledUrl, { directUrl })]
    try {
      const setting = 'SELECT current_setting(\'synchronous_commit\') AS s, pg_backend_pid() AS pid'
      const rounds = await Promise.all(Array.from({ length: 200 }, (_, i) => (i % 2 === 0 ? a : b).get<{ s: string; pid: number }>(setting)))
      assert.ok(rounds.every((r) => r?.s === 'on'))
      assert.ok(new Set(rounds.map((r) => r!.pid)).size > 1, 'the statements ran on several server connections')
      const async = await Promise.all(Array.from({ length: 20 }, () => a.asyncCommit.get<{ s: string }>(setting)))
      assert.ok(async.every((r) => r?.s === 'off'), 'the async pool commits without waiting for the disk')
      const inTransaction = await a.asyncCommit.transaction((tx) => tx.get<{ s: string }>(setting))
      assert.equal(inTransaction?.s, 'off')
      // The server connections the async pool used went back to PgBouncer: the setting did not go with them.
      const after = await Promise.all(Array.from({ length: 40 }, () => b.get<{ s: string }>(setting)))
      assert.ok(after.every((r) => r?.s === 'on'), 'a session setting leaked to another client\'s statements')
    } finally {
      await Promise.all([a.close(), b.close()])
    }
  })

  test('with DATABASE_DIRECT_URL: migrations run together, approvals, a wait released across servers, one ledger watcher that moves when it dies', async (t) => {
    const direct = env({ DATABASE_DIRECT_URL: directUrl })
    // Three migrators at once on the empty database: each migration applied once.
    const migrations = await Promise.all([0, 1, 2].map(() => runKns(['migrate', '--json'], direct, { timeoutMs: 120_000 })))
    for (const m of migrations) assert.equal(m.code, 0, m.stderr)
    const applied = migrations.flatMap((m) => oneJson(m).applied as number[]).sort((x, y) => x - y)
    assert.deepEqual(applied, MIGRATIONS.map((m) => m.version))

    const servers: RunningServer[] = await Promise.all([startServer(direct), startServer(direct)])
    const [a, b] = servers
    const phoneNumber = '+14155550144'
    const key = await prepareApprovals(a!.url, directUrl, phoneNumber, 'PgBouncer Test')

    // Approvals on both servers, concurrently (APPROVAL_COMMIT=async: the async pool's transactions).
    const created = await Promise.all(Array.from({ length: 60 }, (_, i) =>
      postJson(`${servers[i % 2]!.url}/numsys/approval-phone`, approvalPhoneBody(phoneNumber), { 'x-api-key': key })))
    assert.deepEqual(created.filter((c) => c.status !== 200).map((c) => JSON.stringify(c.body)).slice(0, 3), [])

    // A wait on B, released by a decision through A: B heard it through LISTEN on the direct connection.
    const ref = String(created[0]!.body.approvalNumber)
    const started = performance.now()
    const waiting = fetch(`${b!.url}/numsys/transaction_details?ref=${ref}&wait=20`, { signal: AbortSignal.timeout(30_000) })
    await sleep(300)
    const cancelled = await postJson(`${a!.url}/numsys/approval-cancel`, { approvalNumber: ref })
    assert.equal(cancelled.status, 200, JSON.stringify(cancelled.body))
    const answer = await (await waiting).json() as Record<string, unknown>
    const waitedMs = performance.now() - started
    assert.equal(answer.status, 'cancelled')
    assert.ok(waitedMs < 10_000, `the wait ended after ${Math.round(waitedMs)} ms: the decision did not wake it`)

    // Pooled through PgBouncer: the main and async pools; never the LISTEN or the leader lock.
    const clients = await pgbouncerClients(bouncer!.url('pgbouncer'))
    assert.ok(clients.includes('kns') && clients.includes('kns-async'), `PgBouncer's clients: ${clients.join(', ')}`)
    assert.ok(!clients.some((name) => name === 'kns-listen' || name.startsWith('kns-ledger')), `sessions through PgBouncer: ${clients.join(', ')}`)

    // One watcher: the other stands by, and takes over when the watching one is killed.
    const watcher = async (server: RunningServer) => String((await (await fetch(`${server.url}/readyz`)).json() as { watcher?: string }).watcher)
    assert.ok(await eventually(async () => {
      const states = await Promise.all(servers.map(watcher))
      return states.filter((s) => s.startsWith('watching')).length === 1 && states.filter((s) => s.startsWith('standby')).length === 1
    }, 10_000), `watcher states: ${(await Promise.all(servers.map(watcher))).join(' / ')}`)
    const [watching, standing] = (await watcher(a!)).startsWith('watching') ? [a!, b!] : [b!, a!]
    const killed = performance.now()
    watching.child.kill('SIGKILL')
    await watching.exited
    assert.ok(await eventually(async () => (await watcher(standing)).startsWith('watching'), 15_000), `after the kill: ${await watcher(standing)}`)
    t.diagnostic(`a decision woke a wait on the other server ${Math.round(waitedMs)} ms after it began; the ledger watcher moved ${Math.round(performance.now() - killed)} ms after a kill -9`)
    const still = await postJson(`${standing.url}/numsys/approval-phone`, approvalPhoneBody(phoneNumber), { 'x-api-key': key })
    assert.equal(still.status, 200, JSON.stringify(still.body))
    await standing.stop()
    assert.equal(bouncer!.log().includes('prepared statement'), false, 'PgBouncer saw prepared-statement errors')
  })
})
