/**
 * A PostgreSQL switchover under load, as a server behind a moving address sees it: a primary
 * and a real streaming standby (pg_basebackup) of the test's own, and between them and the
 * server a TCP proxy standing for HAProxy (or a VIP, a DNS name) whose target moves while the
 * connections made before stay where they were, the worst case: nothing tells the server.
 * 1. the primary turns read-only (default_transaction_read_only, as it would be demoted; its
 *    sessions survive): writes answer 503 DATABASE_UNAVAILABLE with Retry-After, /readyz 503
 *    "database read-only" (a balancer takes the node out), nothing else fails;
 * 2. the address moves to the standby, not yet promoted: still read-only (pg_is_in_recovery);
 *    a leader lock asked for there is refused (a standby hands out advisory locks too);
 * 3. the standby is promoted: the server is ready and writes again by itself, nothing it
 *    acknowledged is lost, no session of it is left on the old primary (pool, async pool,
 *    LISTEN, leader lock), the ledger watcher's lock is on the new primary, and a decision
 *    taken there wakes a `transaction_details?wait=` at once (LISTEN made again there).
 * Runs in the suite's PostgreSQL pass, as root (pg_createcluster); see throwaway-postgres.ts.
 */
import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, test } from 'node:test'
import pg from 'pg'
import { cancelApproval } from '../../src/approvals/cancel-approval.ts'
import { LeaderLock } from '../../src/db/leader-lock.ts'
import { PostgresDatabase } from '../../src/db/postgres.ts'
import { ENGINE } from '../helpers.ts'
import { approvalPhoneBody, killAll, postJson, sleep, startServer, type RunningServer } from '../support/process.ts'
import { TcpProxy } from '../support/tcp-proxy.ts'
import { ApprovalLoad, LOAD_SERVER_ENV, missingApprovals, summarize } from './approval-load.ts'
import { assertOnlyUnavailable, eventually, firstSuccessAfter, pollReadiness, prepareApprovals } from './fault-checks.ts'
import { createThrowawayCluster, unavailableReason, type ThrowawayCluster } from './throwaway-postgres.ts'

const skip = ENGINE !== 'postgres' ? 'runs in the PostgreSQL pass (DATABASE_URL set); it makes clusters of its own' : unavailableReason() ?? false

let primary: ThrowawayCluster | undefined
let standby: ThrowawayCluster | undefined
let proxy: TcpProxy | undefined
let dataDir: string | undefined
let server: RunningServer
let key: string
const phoneNumber = '+14155550143'

before(async () => {
  if (skip) return
  primary = await createThrowawayCluster()
  standby = await createThrowawayCluster({ standbyOf: primary })
  proxy = await TcpProxy.start({ host: '127.0.0.1', port: primary.port })
  dataDir = mkdtempSync(join(tmpdir(), 'kns-failover-'))
  server = await startServer({
    DATA_DIR: dataDir, DATABASE_URL: proxy.url(primary.url), LOG_LEVEL: 'warn', PUBLIC_RATE_LIMIT: '0', PUBLIC_BASE_URL: 'https://kns.example.com',
    ...LOAD_SERVER_ENV,
  })
  key = await prepareApprovals(server.url, primary.url, phoneNumber, 'Failover Test')
})

after(async () => {
  await killAll()
  await proxy?.close()
  await standby?.drop()
  await primary?.drop()
  if (dataDir !== undefined) rmSync(dataDir, { recursive: true, force: true })
})

async function sql<T extends pg.QueryResultRow>(cluster: ThrowawayCluster, text: string, values: unknown[] = []): Promise<T[]> {
  const client = new pg.Client({ connectionString: cluster.url })
  await client.connect()
  try {
    return (await client.query<T>(text, values)).rows
  } finally {
    await client.end()
  }
}

/** The server's sessions on `cluster`, by application_name (kns, kns-async, kns-listen, kns-ledger-watcher). */
async function sessionsOn(cluster: ThrowawayCluster): Promise<string[]> {
  const rows = await sql<{ name: string }>(cluster, `SELECT application_name AS name FROM pg_stat_activity WHERE application_name LIKE 'kns%' ORDER BY 1`)
  return rows.map((r) => r.name)
}

async function readiness(): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`${server.url}/readyz`, { signal: AbortSignal.timeout(5000) })
  return { status: res.status, body: await res.json() as Record<string, unknown> }
}

test('switchover behind an address that keeps the old sessions: 503 with Retry-After and unready while read-only, then back by itself on the new primary', { skip }, async (t) => {
  const load = new ApprovalLoad({ url: server.url, key, phoneNumber, workers: 6 })
  const probes = pollReadiness(server.url)
  t.after(async () => { await load.stop(); await probes.stop() })
  load.start()
  await load.untilAcknowledged(60)
  assert.equal((await readiness()).status, 200)
  assert.ok((await sessionsOn(primary!)).includes('kns-ledger-watcher'), 'the ledger watcher holds its lock on the primary')

  // 1. The primary is demoted in place: its sessions stay, every write now fails there.
  const demoted = performance.now()
  await sql(primary!, 'ALTER SYSTEM SET default_transaction_read_only = on')
  await sql(primary!, 'SELECT pg_reload_conf()')
  assert.ok(await eventually(async () => load.attempts.some((a) => a.at > demoted && a.status === 503), 10_000),
    `no write refused on the read-only primary: ${summarize(load.attempts.filter((a) => a.at > demoted))}`)
  assert.ok(await eventually(async () => (await readiness()).body.status === 'database read-only', 5000), '/readyz did not say the database is read-only')
  await sleep(1000) // a while read-only, under load

  // 2. The standby has everything the primary wrote; the address moves to it, not yet promoted.
  const lsn = (await sql<{ lsn: string }>(primary!, 'SELECT pg_current_wal_lsn()::text AS lsn'))[0]!.lsn
  assert.ok(await eventually(async () => (await sql<{ ok: boolean }>(standby!, 'SELECT pg_last_wal_replay_lsn() >= $1::pg_lsn AS ok', [lsn]))[0]!.ok, 10_000),
    'the standby did not catch up')
  proxy!.target = { host: '127.0.0.1', port: standby!.port }
  assert.ok(await eventually(async () => (await sessionsOn(standby!)).includes('kns'), 5000), 'the server did not reconnect through the moved address')
  const ready = await readiness()
  assert.deepEqual([ready.status, ready.body.status], [503, 'database read-only'], 'a standby (pg_is_in_recovery) is not ready')
  const onStandby = new PostgresDatabase(standby!.url)
  const lock = new LeaderLock(onStandby, 'failover-test')
  try {
    // A leader lock on a standby would guard nothing on the primary.
    await assert.rejects(lock.acquire(), /read-only/)
    assert.equal(lock.held, false)
  } finally {
    await lock.close()
    await onStandby.close()
  }
  await sleep(1000)

  // 3. Promoted: the new primary.
  const promoting = performance.now()
  await standby!.promote()
  const recoveredMs = await firstSuccessAfter(load, promoting)
  assert.ok(await eventually(async () => (await readiness()).status === 200, 10_000), '/readyz did not come back')
  assert.ok(await eventually(async () => (await sessionsOn(primary!)).length === 0, 10_000),
    `sessions left on the demoted primary: ${(await sessionsOn(primary!)).join(', ')}`)
  assert.ok(await eventually(async () => (await sessionsOn(standby!)).includes('kns-ledger-watcher'), 10_000), 'the ledger watcher did not take its lock on the new primary')
  await load.stop()
  await probes.stop()

  // A decision taken on the new primary by another process wakes a wait there: through LISTEN.
  const created = await postJson(`${server.url}/numsys/approval-phone`, approvalPhoneBody(phoneNumber), { 'x-api-key': key })
  assert.equal(created.status, 200, JSON.stringify(created.body))
  const ref = String(created.body.approvalNumber)
  const started = performance.now()
  const waiting = fetch(`${server.url}/numsys/transaction_details?ref=${ref}&wait=20`, { signal: AbortSignal.timeout(30_000) })
  await sleep(300)
  const decider = new PostgresDatabase(standby!.url)
  try {
    await cancelApproval(decider, ref)
  } finally {
    await decider.close()
  }
  const answer = await (await waiting).json() as Record<string, unknown>
  const waitedMs = performance.now() - started
  assert.equal(answer.status, 'cancelled')
  assert.ok(waitedMs < 10_000, `the wait ended after ${Math.round(waitedMs)} ms: the decision did not wake it`)

  const window = load.attempts.filter((a) => a.at >= demoted && a.at < promoting)
  t.diagnostic(`read-only window: ${summarize(window)}; overall: ${summarize(load.attempts)}`)
  t.diagnostic(`first approval answered 200 ${recoveredMs.toFixed(0)} ms after the promote command; a decision woke a wait ${Math.round(waitedMs)} ms after it began`)
  // From the first probe that saw the read-only primary to the promotion: never ready.
  const firstUnready = probes.probes.find((p) => p.at > demoted && p.status === 503)?.at ?? promoting
  const unready = probes.probes.filter((p) => p.at >= firstUnready && p.at + p.ms < promoting)
  t.diagnostic(`/readyz while read-only: ${unready.filter((p) => p.status === 503).length} of ${unready.length} probes 503`)
  assert.equal(server.child.exitCode, null, `the server exited: ${server.stderr()}`)
  assertOnlyUnavailable(load.attempts)
  assert.ok(unready.length > 0 && unready.every((p) => p.status === 503 && JSON.parse(p.body).status === 'database read-only'),
    `/readyz while read-only: ${JSON.stringify(unready.filter((p) => p.status !== 503).slice(0, 3))}`)
  const missing = await missingApprovals(server.url, load.acknowledged)
  t.diagnostic(`approvals acknowledged ${load.acknowledged.length}, found afterwards ${load.acknowledged.length - missing.length}`)
  assert.deepEqual(missing, [], `${missing.length} acknowledged approvals lost`)
})
