/**
 * Overload (issue "Production under pressure"): call verification offered at 1x, 2x and 4x its
 * measured capacity by 1 000 connections, with admission control as configured (defaults, or
 * MAX_IN_FLIGHT / QUEUE_BUDGET_MS from this shell). Per factor: the share answered 503, the
 * p99 of the admitted (2xx) answers, client timeouts, and beside the flood, from another
 * process, a light client's p99 (one verification every 50 ms) and the slowest /readyz.
 * Baselines in the same run: the unloaded p99 (one connection) and the capacity (closed loop,
 * BENCH_CAPACITY_CONNECTIONS connections).
 *
 * Targets: at 4x, admitted p99 <= 5 x the unloaded p99, the light client's p99 under 100 ms,
 * no client timeouts, /readyz within 100 ms throughout.
 *
 * Registration flood (issue 31, item 4): as `kns serve` with PUBLIC_RATE_LIMIT=0 and the default
 * per-address connection cap, BENCH_REGISTRATION_CONNECTIONS (400) connections from 127.0.0.1
 * post `register-user-login` with fresh numbers (closed loop), and beside them a light client
 * from 127.0.0.2 reads `transaction_details` every 50 ms with a 2 s timeout. Baseline in the
 * same run: the unloaded p99 of a registration (one connection). Targets: the light client's
 * p99 under 200 ms and no timeout, what the flood cannot be served answered 503 with
 * Retry-After, admitted p99 within 5 x unloaded. Exit code 0 when it ran, met or not.
 *
 *   npm run bench:overload     BENCH_OVERLOAD_SECONDS (10) per factor, BENCH_CALLER_NUMBERS (2000)
 *                              BENCH_OVERLOAD_FACTORS (1,2,4), BENCH_OVERLOAD_CONNECTIONS (1000)
 *                              BENCH_OVERLOAD_SCENARIOS (calls,registration),
 *                              BENCH_ENGINES (sqlite; registration only: sqlite,postgres),
 *                              BENCH_DATABASE_URL (postgres://postgres@127.0.0.1:5432/test)
 */
import { fork } from 'node:child_process'
import autocannon from 'autocannon'
import { createApiKey } from '../src/keys/api-keys.ts'
import { loadConfig } from '../src/config.ts'
import { openService } from '../src/service.ts'
import { envInt, runMain, startServer, type Target } from './bench-server.ts'
import { signCalls, seedCaller, type CallerSeed } from './caller-seed.ts'
import { postgresDatabase, seed, sqliteDatabase, type BenchDatabase } from './seed.ts'

const log = (line: string) => process.stderr.write(`${line}\n`)
const SECONDS = envInt('BENCH_OVERLOAD_SECONDS', 10)
const CONNECTIONS = envInt('BENCH_OVERLOAD_CONNECTIONS', 1000)
const CAPACITY_CONNECTIONS = envInt('BENCH_CAPACITY_CONNECTIONS', 32)
const FACTORS = (process.env.BENCH_OVERLOAD_FACTORS ?? '1,2,4').split(',').map(Number).filter((f) => f > 0)
const NUMBERS = envInt('BENCH_CALLER_NUMBERS', 2000)
const PATH = '/numsys/call-signature-verification'
const SCENARIOS = (process.env.BENCH_OVERLOAD_SCENARIOS ?? 'calls,registration').split(',').map((s) => s.trim())
const ENGINES = (process.env.BENCH_ENGINES ?? 'sqlite').split(',').map((e) => e.trim())
const PG_URL = process.env.BENCH_DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/test'
const REGISTRATION_CONNECTIONS = envInt('BENCH_REGISTRATION_CONNECTIONS', 400)
/** The admission settings a run may pass to the server from this shell. */
const PASSTHROUGH = ['MAX_IN_FLIGHT', 'MAX_IN_FLIGHT_PER_CLIENT', 'MAX_REGISTRATIONS_IN_PROGRESS', 'QUEUE_BUDGET_MS', 'MAX_CONNECTIONS', 'MAX_CONNECTIONS_PER_IP', 'SHED_LAG_MS']

const percentile = (values: number[], p: number) => {
  if (values.length === 0) return NaN
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]!
}

interface Flood { offered: number; achieved: number; ok: number; shed: number; other: number; timeouts: number; errors: number; admittedP99: number }

/** autocannon against call verification; per-answer latencies by status (each connection has one request in flight). */
async function flood(target: Target, seed: CallerSeed, connections: number, seconds: number, overallRate?: number): Promise<Flood> {
  const bodies = signCalls(seed)
  let next = 0
  const admitted: number[] = []
  const result = await autocannon({
    url: `http://127.0.0.1:${target.port}`, connections, duration: seconds, timeout: 10,
    ...(overallRate === undefined ? {} : { overallRate }),
    requests: [{
      method: 'POST', path: PATH, headers: { 'content-type': 'application/json', 'x-api-key': seed.apiKey },
      setupRequest: (request, context) => {
        context.sentAt = performance.now()
        return { ...request, body: bodies[next++ % bodies.length]! }
      },
      onResponse: (status, _body, context) => {
        if (status >= 200 && status < 300) admitted.push(performance.now() - (context.sentAt as number))
      },
    }],
  })
  const stats = result.statusCodeStats
  const count = (code: string) => stats[code]?.count ?? 0
  const ok = result['2xx']
  const shed = count('503')
  const all = Object.values(stats).reduce((n, s) => n + s.count, 0)
  return {
    offered: overallRate ?? 0, achieved: all / seconds, ok, shed, other: all - ok - shed,
    timeouts: result.timeouts, errors: result.errors, admittedP99: percentile(admitted, 0.99),
  }
}

interface ProbeResult { light: Array<{ ms: number; status: number }>; ready: Array<{ ms: number; status: number }> }

type ProbeJob = { durationMs: number } & ({ kind: 'calls'; apiKey: string; bodies: string[] } | { kind: 'details'; refs: string[]; localAddress: string; timeoutMs: number })

/** The probe process; `connected` settles once its connections are open (it measures from then on), `result` when it is done. */
function probe(target: Target, job: ProbeJob): { connected: Promise<void>; result: Promise<ProbeResult> } {
  const child = fork(new URL('./overload-probe.ts', import.meta.url), [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] })
  let connected!: () => void
  const result = new Promise<ProbeResult>((resolve, reject) => {
    child.on('message', (message) => {
      if ((message as { connected?: boolean }).connected === true) return connected()
      resolve(message as ProbeResult)
      child.kill()
    })
    child.once('error', reject)
    child.send({ port: target.port, ...job })
  })
  return { connected: new Promise<void>((resolve) => { connected = resolve }), result }
}

const passthrough = () => Object.fromEntries(PASSTHROUGH.filter((n) => process.env[n] !== undefined).map((n) => [n, process.env[n]!]))

async function callsScenario(): Promise<void> {
  const db = sqliteDatabase()
  try {
    log(`seeding ${NUMBERS} numbers...`)
    const seed = await seedCaller(db.env, { numbers: NUMBERS, keystores: 10 })
    // The light client has a key of its own (its own rate bucket, as a second carrier would).
    const service = await openService(loadConfig(db.env), { watchChanges: false })
    const lightKey = (await createApiKey(service.db, { vendor: 'Light Carrier', scopes: ['caller'], rate: 1_000_000 })).key
    await service.close()
    const settings = passthrough()
    const target = await startServer('kns-overload', 'app', { ...db.env, ...settings })
    try {
      await flood(target, seed, 8, 2) // warm-up: key cache, JIT
      const unloaded = await flood(target, seed, 1, Math.max(3, Math.ceil(SECONDS / 3)))
      const capacity = await flood(target, seed, CAPACITY_CONNECTIONS, SECONDS)
      const capacityRate = capacity.ok / SECONDS
      log(`unloaded p99 ${unloaded.admittedP99.toFixed(2)} ms; capacity ${capacityRate.toFixed(0)} req/s (${CAPACITY_CONNECTIONS} connections, closed loop)`)
      log(`admission: ${Object.entries(settings).map(([k, v]) => `${k}=${v}`).join(' ') || 'defaults'}`)
      log('| load | offered req/s | answered req/s | 2xx | 503 | other | timeouts | admitted p99 | x unloaded | light p99 | light fails | /readyz max | verdict |')
      log('|---|---|---|---|---|---|---|---|---|---|---|---|---|')
      for (const factor of FACTORS) {
        const rate = Math.round(capacityRate * factor)
        const lightBodies = signCalls({ ...seed, numbers: seed.numbers.slice(0, 100) })
        const light = probe(target, { kind: 'calls', apiKey: lightKey, bodies: lightBodies, durationMs: SECONDS * 1000 })
        await light.connected
        const [f, p] = await Promise.all([flood(target, seed, CONNECTIONS, SECONDS, rate), light.result])
        const total = f.ok + f.shed + f.other
        const share = (n: number) => `${(100 * n / Math.max(1, total)).toFixed(1)} %`
        const lightP99 = percentile(p.light.map((s) => s.ms), 0.99)
        const lightFails = p.light.filter((s) => s.status !== 200).length
        const readyMax = Math.max(...p.ready.map((s) => s.ms))
        const ratio = f.admittedP99 / unloaded.admittedP99
        const met = factor < 4 ? '-' : (ratio <= 5 && lightP99 < 100 && f.timeouts === 0 && readyMax <= 100 && p.ready.every((s) => s.status === 200)) ? 'met' : 'MISSED'
        log(`| ${factor}x | ${rate} | ${f.achieved.toFixed(0)} | ${share(f.ok)} | ${share(f.shed)} | ${share(f.other)} | ${f.timeouts} | ${f.admittedP99.toFixed(1)} ms | ${ratio.toFixed(1)} | ` +
          `${lightP99.toFixed(1)} ms | ${lightFails}/${p.light.length} | ${readyMax.toFixed(1)} ms | ${met} |`)
      }
    } finally {
      await target.stop()
    }
  } finally {
    await db.cleanup()
  }
}

interface Registrations { ok: number; shed: number; shedWithRetryAfter: number; other: number; timeouts: number; errors: number; admittedP99: number; answered: number }

/** Closed-loop registrations of fresh numbers (`+1555<run><7 digits>`) on `connections` connections from 127.0.0.1. */
async function registrationFlood(target: Target, run: number, connections: number, seconds: number): Promise<Registrations> {
  let next = 0
  const admitted: number[] = []
  let shed = 0
  let shedWithRetryAfter = 0
  const result = await autocannon({
    url: `http://127.0.0.1:${target.port}`, connections, duration: seconds, timeout: 10,
    requests: [{
      method: 'POST', path: '/numsys/register-user-login', headers: { 'content-type': 'application/json' },
      setupRequest: (request, context) => {
        context.sentAt = performance.now()
        const phoneNumber = `+1555${run}${String(next++).padStart(7, '0')}`
        return { ...request, body: JSON.stringify({ email: `flood${next}@bench.example`, phoneNumber }) }
      },
      onResponse: (status, body, context) => {
        if (status >= 200 && status < 300) admitted.push(performance.now() - (context.sentAt as number))
        if (status === 503) {
          shed++
          // autocannon shows no headers: admission's 503s (code OVERLOADED) are the ones written with Retry-After.
          if (/"code":"OVERLOADED"/.test(body)) shedWithRetryAfter++
        }
      },
    }],
  })
  const all = Object.values(result.statusCodeStats).reduce((n, s) => n + s.count, 0)
  return {
    ok: result['2xx'], shed, shedWithRetryAfter, other: all - result['2xx'] - shed, timeouts: result.timeouts, errors: result.errors,
    admittedP99: percentile(admitted, 0.99), answered: all,
  }
}

async function registrationScenario(engine: string): Promise<void> {
  const db: BenchDatabase = engine === 'postgres' ? await postgresDatabase(PG_URL) : sqliteDatabase()
  try {
    const { detailRefs } = await seed(db.env, { ownedNumbers: 20, users: 0, detailApprovals: 20, signApprovals: 0 })
    // As `kns serve`: no public rate limit (the issue's setting), the default per-address
    // connection cap and per-client in-flight cap (0: half of MAX_IN_FLIGHT).
    const settings = { MAX_CONNECTIONS_PER_IP: '256', MAX_IN_FLIGHT_PER_CLIENT: '0', MAX_REGISTRATIONS_IN_PROGRESS: '5', ...passthrough() }
    const target = await startServer('kns-overload-registration', 'app', { ...db.env, PUBLIC_RATE_LIMIT: '0', ...settings })
    try {
      await registrationFlood(target, 1, 8, 2) // warm-up
      const unloaded = await registrationFlood(target, 2, 1, Math.max(3, Math.ceil(SECONDS / 3)))
      log(`registration flood (${engine}): unloaded p99 ${unloaded.admittedP99.toFixed(2)} ms (${(unloaded.ok / Math.max(3, Math.ceil(SECONDS / 3))).toFixed(0)} req/s on one connection); ` +
        `admission: ${Object.entries(settings).map(([k, v]) => `${k}=${v}`).join(' ')}`)
      const light = probe(target, { kind: 'details', refs: detailRefs, localAddress: '127.0.0.2', timeoutMs: 2000, durationMs: SECONDS * 1000 })
      await light.connected
      const [f, p] = await Promise.all([registrationFlood(target, 3, REGISTRATION_CONNECTIONS, SECONDS), light.result])
      const share = (n: number) => `${(100 * n / Math.max(1, f.answered)).toFixed(1)} %`
      const lightP99 = percentile(p.light.map((s) => s.ms), 0.99)
      const lightTimeouts = p.light.filter((s) => s.status === -1).length
      const lightFails = p.light.filter((s) => s.status !== 200).length
      const readyMax = Math.max(...p.ready.map((s) => s.ms))
      const ratio = f.admittedP99 / unloaded.admittedP99
      const met = ratio <= 5 && lightP99 < 200 && lightTimeouts === 0 && f.shed === f.shedWithRetryAfter ? 'met' : 'MISSED'
      log('| engine | connections | answered req/s | 2xx | 503 (with Retry-After) | other | flood timeouts | admitted p99 | x unloaded | light p99 | light timeouts | light fails | /readyz max | verdict |')
      log('|---|---|---|---|---|---|---|---|---|---|---|---|---|---|')
      log(`| ${engine} | ${REGISTRATION_CONNECTIONS} | ${(f.answered / SECONDS).toFixed(0)} | ${share(f.ok)} | ${share(f.shed)} (${f.shedWithRetryAfter}/${f.shed}) | ${share(f.other)} | ${f.timeouts} | ` +
        `${f.admittedP99.toFixed(1)} ms | ${ratio.toFixed(1)} | ${lightP99.toFixed(1)} ms | ${lightTimeouts}/${p.light.length} | ${lightFails}/${p.light.length} | ${readyMax.toFixed(1)} ms | ${met} |`)
    } finally {
      await target.stop()
    }
  } finally {
    await db.cleanup()
  }
}

async function main(): Promise<number> {
  if (SCENARIOS.includes('calls')) await callsScenario()
  if (SCENARIOS.includes('registration')) for (const engine of ENGINES) await registrationScenario(engine)
  return 0
}

runMain(main)
