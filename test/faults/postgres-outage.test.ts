/**
 * PostgreSQL going away under load, on a throw-away cluster of the test's own (the shared one
 * serves the other tests): a fast stop and start, then a freeze (SIGSTOP, a server that
 * accepts connections and answers nothing). The real server process must answer 503
 * DATABASE_UNAVAILABLE meanwhile, within its timeouts, report itself unready, come back by
 * itself, and keep every approval it acknowledged. Runs in the suite's PostgreSQL pass.
 */
import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, test, type TestContext } from 'node:test'
import pg from 'pg'
import { ENGINE } from '../helpers.ts'
import { killAll, postJson, sleep, startServer, type RunningServer } from '../support/process.ts'
import { ApprovalLoad, LOAD_SERVER_ENV, missingApprovals, summarize } from './approval-load.ts'
import { assertOnlyUnavailable, eventually, firstSuccessAfter, pollReadiness, prepareApprovals } from './fault-checks.ts'
import { createThrowawayCluster, unavailableReason, type ThrowawayCluster } from './throwaway-postgres.ts'

const skip = ENGINE !== 'postgres' ? 'runs in the PostgreSQL pass (DATABASE_URL set); it makes a cluster of its own' : unavailableReason() ?? false

let cluster: ThrowawayCluster | undefined
let dataDir: string | undefined
let env: Record<string, string>
/** With the default timeouts; the first test's server. */
let server: RunningServer
let key: string
const phoneNumber = '+14155550142'

before(async () => {
  if (skip) return
  cluster = await createThrowawayCluster()
  dataDir = mkdtempSync(join(tmpdir(), 'kns-fault-'))
  env = { DATA_DIR: dataDir, DATABASE_URL: cluster.url, LOG_LEVEL: 'warn', PUBLIC_RATE_LIMIT: '0', PUBLIC_BASE_URL: 'https://kns.example.com', ...LOAD_SERVER_ENV }
  server = await startServer(env) // migrates the new database
  key = await prepareApprovals(server.url, cluster.url, phoneNumber, 'Outage Test')
})

after(async () => {
  await killAll()
  await cluster?.drop()
  if (dataDir !== undefined) rmSync(dataDir, { recursive: true, force: true })
})

async function assertNothingLost(t: TestContext, url: string, load: ApprovalLoad): Promise<void> {
  const missing = await missingApprovals(url, load.acknowledged)
  t.diagnostic(`approvals acknowledged ${load.acknowledged.length}, found afterwards ${load.acknowledged.length - missing.length}`)
  assert.deepEqual(missing, [], `${missing.length} acknowledged approvals lost`)
  // A vendor retries what got no 200 with the same referenceNumber: created now, or returned
  // as committed before the failure reached the client.
  for (const body of load.unacknowledged.slice(0, 30)) {
    const retried = await postJson(`${url}/numsys/approval-phone`, body, { 'x-api-key': key })
    assert.equal(retried.status, 200, JSON.stringify(retried.body))
  }
}

/** Connections of `applicationName` to the throw-away cluster. */
async function connectionsOf(applicationName: string): Promise<number> {
  const client = new pg.Client({ connectionString: cluster!.url })
  await client.connect()
  try {
    const { rows } = await client.query<{ n: number }>('SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = $1', [applicationName])
    return rows[0]!.n
  } finally {
    await client.end()
  }
}


test('stopped (fast) and started under load: 503 while down, no hang, back by itself, nothing acknowledged lost', { skip }, async (t) => {
  const load = new ApprovalLoad({ url: server.url, key, phoneNumber, workers: 12, registrationEvery: 5 })
  const readiness = pollReadiness(server.url)
  t.after(async () => { await load.stop(); await readiness.stop() }) // also when an assertion fails midway
  load.start()
  await load.untilAcknowledged(100)

  const stopping = performance.now()
  await cluster!.stop()
  const down = performance.now()
  await sleep(1500)
  const starting = performance.now()
  await cluster!.start()
  const up = performance.now()
  const recoveredMs = await firstSuccessAfter(load, up)
  const sinceStartCommandMs = await firstSuccessAfter(load, starting)
  const afterRecovery = performance.now()
  await sleep(500)
  await load.stop()
  await readiness.stop()

  const outage = load.attempts.filter((a) => a.at >= down && a.at + a.ms <= starting)
  const slowest = Math.max(...load.attempts.map((a) => a.ms))
  t.diagnostic(`stop took ${Math.round(down - stopping)} ms, down ${Math.round(starting - down)} ms, start took ${Math.round(up - starting)} ms`)
  t.diagnostic(`during the outage: ${summarize(outage)}; overall: ${summarize(load.attempts)}; slowest request ${Math.round(slowest)} ms`)
  // pg_ctlcluster start polls for the socket every 0.5 s: the server may accept before it returns.
  t.diagnostic(`first approval answered 200: ${sinceStartCommandMs.toFixed(0)} ms after the start command was issued, ` +
    `${recoveredMs.toFixed(0)} ms after it returned`)

  assert.equal(server.child.exitCode, null, `the server exited: ${server.stderr()}`)
  assertOnlyUnavailable(load.attempts)
  assert.ok(outage.length > 0 && outage.every((a) => a.status === 503), `requests while down: ${summarize(outage)}`)
  assert.ok(slowest < 5000, `a request took ${Math.round(slowest)} ms`)
  assert.ok(recoveredMs < 5000, `recovered ${recoveredMs} ms after PostgreSQL was up`)

  const unready = readiness.probes.filter((p) => p.at >= down && p.at + p.ms <= starting)
  assert.ok(unready.length > 0 && unready.every((p) => p.status === 503 && JSON.parse(p.body).status === 'database unreachable'),
    `/readyz while down: ${JSON.stringify(unready.slice(0, 3))}`)
  const readyAgain = readiness.probes.filter((p) => p.at >= afterRecovery)
  assert.ok(readyAgain.length > 0 && readyAgain.every((p) => p.status === 200), `/readyz after: ${JSON.stringify(readyAgain.slice(0, 3))}`)

  await assertNothingLost(t, server.url, load)
  // Cache invalidations come through LISTEN; the connection must come back too.
  assert.ok(await eventually(async () => (await connectionsOf('kns-listen')) === 1, 5000), 'the LISTEN connection did not come back')
  await server.stop()
})

test('frozen (SIGSTOP) under load: 503 within the configured timeouts, then back by itself', { skip }, async (t) => {
  const timeouts = { DATABASE_CONNECT_TIMEOUT_MS: '1000', DATABASE_QUERY_TIMEOUT_MS: '1000' }
  const impatient = await startServer({ ...env, ...timeouts })
  const load = new ApprovalLoad({ url: impatient.url, key, phoneNumber, workers: 12, registrationEvery: 5 })
  const readiness = pollReadiness(impatient.url)
  t.after(async () => { await load.stop(); await readiness.stop() })
  load.start()
  await load.untilAcknowledged(100)

  const frozen = performance.now()
  cluster!.freeze()
  await sleep(3000)
  cluster!.thaw()
  const thawed = performance.now()
  const recoveredMs = await firstSuccessAfter(load, thawed)
  await sleep(500)
  await load.stop()
  await readiness.stop()

  const during = load.attempts.filter((a) => a.at >= frozen && a.at < thawed)
  const slowest = Math.max(...load.attempts.map((a) => a.ms))
  t.diagnostic(`sent while frozen: ${summarize(during)}; overall: ${summarize(load.attempts)}; slowest request ${Math.round(slowest)} ms`)
  t.diagnostic(`first approval answered 200 ${recoveredMs.toFixed(0)} ms after SIGCONT`)

  assert.equal(impatient.child.exitCode, null, `the server exited: ${impatient.stderr()}`)
  assertOnlyUnavailable(load.attempts)
  assert.ok(during.some((a) => a.status === 503), `no 503 while frozen: ${summarize(during)}`)
  // Bounded by the timeouts, never the client's 15 s: at worst a request waits behind a stuck
  // statement (approval batches go one at a time: a query timeout), for a pooled connection
  // (a connect timeout), for a new one to start (another), and for its own statement (a query
  // timeout); plus 1 s for a loaded machine.
  assert.ok(slowest < 2 * 1000 + 2 * 1000 + 1000, `a request took ${Math.round(slowest)} ms`)
  assert.ok(recoveredMs < 5000, `recovered ${recoveredMs} ms after SIGCONT`)
  const unready = readiness.probes.filter((p) => p.at >= frozen + 500 && p.at + p.ms <= thawed)
  assert.ok(unready.some((p) => p.status === 503), `/readyz while frozen: ${JSON.stringify(unready.slice(0, 3))}`)
  assert.ok(readiness.probes.every((p) => p.ms < 3000), 'a /readyz probe took 3 s or more')

  await assertNothingLost(t, impatient.url, load)
  await impatient.stop()
})
