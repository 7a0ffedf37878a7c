/**
 * The events subsystem's figures (issue "Approval events"), on each engine:
 *
 * 1. decision -> webhook: approvals decided at BENCH_EVENTS_RATE (500/s) for
 *    BENCH_EVENTS_SECONDS; each webhook's arrival at a receiver in this process, minus the
 *    decision's own time (the event's `timestamp`, same clock). Target: p99 <= 100 ms. The
 *    baselines, measured in the same run at the same rate: the decision requests themselves
 *    (the service's and the database's own tail) and a plain HTTP POST from this process to the
 *    same receiver (what loopback and this process's event loop cost by themselves).
 * 2. 1 000 concurrent `transaction_details?wait=` requests, each released by one decision:
 *    the time from the decision's answer to the wait's answer. Target: all within 1 s. The
 *    server's RSS growth while they wait is reported.
 *
 * Exit code 0 when the measurements ran, met or not (the table says); 1 when one could not.
 */
import { randomBytes } from 'node:crypto'
import { createServer } from 'node:http'
import { Agent, request } from 'node:http'
import type { AddressInfo } from 'node:net'
import { loadConfig } from '../src/config.ts'
import { addSubscription } from '../src/events/webhooks/subscriptions.ts'
import { openService } from '../src/service.ts'
import { envInt, startServer, type Target } from './bench-server.ts'
import { rssBytes } from './proc-stats.ts'
import { inPool, postgresDatabase, seed, sqliteDatabase, type BenchDatabase } from './seed.ts'

const log = (line: string) => process.stderr.write(`${line}\n`)
const RATE = envInt('BENCH_EVENTS_RATE', 500)
const SECONDS = envInt('BENCH_EVENTS_SECONDS', 6)
const WAITERS = envInt('BENCH_WAITERS', 1000)
const ENGINES = (process.env.BENCH_ENGINES || 'sqlite,postgres').split(',').map((e) => e.trim())
const PG_URL = process.env.BENCH_DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/test'

function percentile(sorted: number[], p: number): number {
  return sorted.length === 0 ? Number.NaN : sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!
}

interface Receiver { url: string; arrivals: Map<string, number>; close(): Promise<void> }

/** A webhook endpoint: the arrival time of each delivery by its approval number (decided at the event's timestamp). */
async function startReceiver(): Promise<Receiver & { latencies: number[] }> {
  const arrivals = new Map<string, number>()
  const latencies: number[] = []
  const server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      const now = Date.now()
      const event = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { timestamp: string; data?: { approvalNumber?: string } }
      const ref = event.data?.approvalNumber
      if (ref !== undefined && !arrivals.has(ref)) {
        arrivals.set(ref, now)
        latencies.push(now - Date.parse(event.timestamp))
      }
      res.writeHead(204).end()
    })
  })
  server.keepAliveTimeout = 60_000
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`, arrivals, latencies,
    close: () => new Promise((resolve) => { server.closeAllConnections(); server.close(() => resolve()) }),
  }
}

const agent = new Agent({ keepAlive: true, maxSockets: 256 })

function post(port: number, path: string, body: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, method: 'POST', agent, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } }, (res) => {
      const chunks: Buffer[] = []
      res.on('data', (c: Buffer) => chunks.push(c))
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }))
    })
    req.on('error', reject)
    req.end(body)
  })
}

/** Calls `fn(i)` for i < count at `rate` per second (paced by the clock, not by answers). */
async function paced(count: number, rate: number, fn: (i: number) => Promise<void>): Promise<void> {
  const started = performance.now()
  const running: Promise<void>[] = []
  for (let i = 0; i < count; i++) {
    const due = started + (i * 1000) / rate
    const wait = due - performance.now()
    if (wait > 1) await new Promise((resolve) => setTimeout(resolve, wait))
    running.push(fn(i))
  }
  await Promise.all(running)
}

interface Row { engine: string; figure: string; value: string; baseline: string; target: string; result: string }

async function benchEngine(db: BenchDatabase): Promise<Row[]> {
  const rows: Row[] = []
  const decisions = RATE * SECONDS
  const env = { ...db.env, KNS_SECRET: randomBytes(32).toString('hex'), WEBHOOK_ALLOW_PRIVATE: 'true', BENCH_EVENTS: '1' }
  log(`-- ${db.engine}: seeding ${decisions + WAITERS} pending approvals`)
  const seeded = await seed(env, { ownedNumbers: 200, users: 0, detailApprovals: decisions + WAITERS, signApprovals: 0 })
  const receiver = await startReceiver()
  const tool = await openService(loadConfig(env), { role: 'tool' })
  try {
    const keyId = seeded.apiKey.split('_')[1]!
    await addSubscription(tool.db, tool.events.box, { keyId, url: receiver.url }, { allowPrivate: true })
  } finally {
    await tool.close()
  }
  const server: Target = await startServer(`events-${db.engine}`, 'app', env)
  try {
    // 1. decision -> webhook at RATE/s, and the baseline: a plain POST to the same receiver at the same rate.
    const refs = seeded.detailRefs.slice(0, decisions)
    const baseline: number[] = []
    await paced(RATE * 2, RATE, async () => {
      const started = performance.now()
      const url = new URL(receiver.url)
      await new Promise<void>((resolve, reject) => {
        const req = request({ host: url.hostname, port: url.port, path: '/baseline', method: 'POST', agent, headers: { 'content-type': 'application/json' } }, (res) => { res.resume(); res.on('end', resolve) })
        req.on('error', reject)
        req.end('{}')
      })
      baseline.push(performance.now() - started)
    })
    let failed = 0
    const decisionMs: number[] = []
    const decisionAnswered = new Map<string, number>()
    await paced(refs.length, RATE, async (i) => {
      const started = performance.now()
      const answer = await post(server.port, '/numsys/approval-cancel', JSON.stringify({ approvalNumber: refs[i] }))
      decisionMs.push(performance.now() - started)
      decisionAnswered.set(refs[i]!, Date.now())
      if (answer.status !== 200 || !answer.body.includes('"success":true')) failed++
    })
    const deadline = Date.now() + 30_000
    while (receiver.arrivals.size < refs.length && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50))
    const latencies = [...receiver.latencies].sort((a, b) => a - b)
    // Of which the decision's own request (its commit): the same tail shows there.
    decisionMs.sort((a, b) => a - b)
    const afterAnswer = refs.map((ref) => (receiver.arrivals.get(ref) ?? Number.NaN) - decisionAnswered.get(ref)!).filter(Number.isFinite).sort((a, b) => a - b)
    log(`   decision requests: p50 ${percentile(decisionMs, 50).toFixed(1)} ms, p99 ${percentile(decisionMs, 99).toFixed(1)} ms, max ${decisionMs.at(-1)!.toFixed(0)} ms; ` +
      `webhook after the decision's answer: p50 ${percentile(afterAnswer, 50).toFixed(0)} ms, p99 ${percentile(afterAnswer, 99).toFixed(0)} ms`)
    const base = baseline.sort((a, b) => a - b)
    const p99 = percentile(latencies, 99)
    const missing = refs.length - receiver.arrivals.size
    rows.push({
      engine: db.engine, figure: `decision -> webhook at ${RATE}/s (${refs.length})`,
      value: `p50 ${percentile(latencies, 50).toFixed(0)} ms, p90 ${percentile(latencies, 90).toFixed(0)} ms, p99 ${p99.toFixed(0)} ms, max ${(latencies.at(-1) ?? Number.NaN).toFixed(0)} ms${missing > 0 ? `, ${missing} missing` : ''}${failed > 0 ? `, ${failed} decisions failed` : ''}`,
      baseline: `the decisions' own requests p99 ${percentile(decisionMs, 99).toFixed(0)} ms; a plain POST to the receiver p99 ${percentile(base, 99).toFixed(1)} ms`,
      target: 'p99 <= 100 ms',
      result: missing === 0 && failed === 0 && p99 <= 100 ? 'PASS' : 'FAIL',
    })
    log(`   ${rows.at(-1)!.figure}: ${rows.at(-1)!.value} (baseline ${rows.at(-1)!.baseline})`)

    // 2. WAITERS concurrent waits, each released by its own decision.
    const waitRefs = seeded.detailRefs.slice(decisions, decisions + WAITERS)
    const waitAgent = new Agent({ keepAlive: false, maxSockets: Infinity })
    const rssBefore = rssBytes(server.pid)
    const answeredAt = new Map<string, number>()
    const waits = waitRefs.map((ref) => new Promise<void>((resolve) => {
      const req = request({ host: '127.0.0.1', port: server.port, path: `/numsys/transaction_details?ref=${ref}&wait=30`, agent: waitAgent }, (res) => {
        res.resume()
        res.on('end', () => { answeredAt.set(ref, performance.now()); resolve() })
      })
      req.on('error', () => resolve())
      req.end()
    }))
    await new Promise((resolve) => setTimeout(resolve, 1500))
    const rssWaiting = rssBytes(server.pid)
    const decidedAt = new Map<string, number>()
    await inPool(waitRefs, 32, async (ref) => {
      await post(server.port, '/numsys/approval-cancel', JSON.stringify({ approvalNumber: ref }))
      decidedAt.set(ref, performance.now())
    })
    await Promise.all(waits)
    const release = waitRefs.map((ref) => (answeredAt.get(ref) ?? Number.POSITIVE_INFINITY) - decidedAt.get(ref)!).sort((a, b) => a - b)
    const early = waitRefs.filter((ref) => (answeredAt.get(ref) ?? 0) < (decidedAt.get(ref) ?? 0) - 50).length
    const worst = release.at(-1)!
    rows.push({
      engine: db.engine, figure: `${WAITERS} waits released by one decision each`,
      value: `p50 ${percentile(release, 50).toFixed(0)} ms, max ${Math.max(0, worst).toFixed(0)} ms; RSS +${((rssWaiting - rssBefore) / 2 ** 20).toFixed(1)} MiB while waiting` +
        (early > 0 ? `; ${early} answered before their decision` : ''),
      baseline: `RSS ${(rssBefore / 2 ** 20).toFixed(0)} MiB before`, target: 'all within 1 s',
      result: early === 0 && worst <= 1000 ? 'PASS' : 'FAIL',
    })
    log(`   ${rows.at(-1)!.figure}: ${rows.at(-1)!.value}`)
  } finally {
    await server.stop()
    await receiver.close()
  }
  return rows
}

async function main(): Promise<number> {
  const rows: Row[] = []
  let broken = false
  for (const engine of ENGINES) {
    let db: BenchDatabase
    try {
      db = engine === 'postgres' ? await postgresDatabase(PG_URL) : sqliteDatabase()
    } catch (err) {
      log(`-- ${engine}: skipped (${(err as Error).message})`)
      continue
    }
    try {
      rows.push(...await benchEngine(db))
    } catch (err) {
      broken = true
      log(`!! ${engine}: ${(err as Error).stack}`)
    } finally {
      await db.cleanup()
    }
  }
  process.stdout.write(['', '| engine | figure | measured | same-run baseline | target | result |', '|---|---|---|---|---|---|',
    ...rows.map((r) => `| ${r.engine} | ${r.figure} | ${r.value} | ${r.baseline} | ${r.target} | ${r.result} |`), ''].join('\n'))
  return broken ? 1 : 0
}

process.exitCode = await main()
agent.destroy()
