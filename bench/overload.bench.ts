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
 * no client timeouts, /readyz within 100 ms throughout. Exit code 0 when it ran, met or not.
 *
 *   npm run bench:overload     BENCH_OVERLOAD_SECONDS (10) per factor, BENCH_CALLER_NUMBERS (2000)
 *                              BENCH_OVERLOAD_FACTORS (1,2,4), BENCH_OVERLOAD_CONNECTIONS (1000)
 */
import { fork } from 'node:child_process'
import autocannon from 'autocannon'
import { createApiKey } from '../src/keys/api-keys.ts'
import { loadConfig } from '../src/config.ts'
import { openService } from '../src/service.ts'
import { envInt, runMain, startServer, type Target } from './bench-server.ts'
import { signCalls, seedCaller, type CallerSeed } from './caller-seed.ts'
import { sqliteDatabase } from './seed.ts'

const log = (line: string) => process.stderr.write(`${line}\n`)
const SECONDS = envInt('BENCH_OVERLOAD_SECONDS', 10)
const CONNECTIONS = envInt('BENCH_OVERLOAD_CONNECTIONS', 1000)
const CAPACITY_CONNECTIONS = envInt('BENCH_CAPACITY_CONNECTIONS', 32)
const FACTORS = (process.env.BENCH_OVERLOAD_FACTORS ?? '1,2,4').split(',').map(Number).filter((f) => f > 0)
const NUMBERS = envInt('BENCH_CALLER_NUMBERS', 2000)
const PATH = '/numsys/call-signature-verification'

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

function probe(target: Target, apiKey: string, bodies: string[], durationMs: number): Promise<ProbeResult> {
  const child = fork(new URL('./overload-probe.ts', import.meta.url), [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] })
  return new Promise((resolve, reject) => {
    child.once('message', (message) => { resolve(message as ProbeResult); child.kill() })
    child.once('error', reject)
    child.send({ port: target.port, apiKey, bodies, durationMs })
  })
}

async function main(): Promise<number> {
  const db = sqliteDatabase()
  try {
    log(`seeding ${NUMBERS} numbers...`)
    const seed = await seedCaller(db.env, { numbers: NUMBERS, keystores: 10 })
    // The light client has a key of its own (its own rate bucket, as a second carrier would).
    const service = await openService(loadConfig(db.env), { watchChanges: false })
    const lightKey = (await createApiKey(service.db, { vendor: 'Light Carrier', scopes: ['caller'], rate: 1_000_000 })).key
    await service.close()
    const passthrough = Object.fromEntries(['MAX_IN_FLIGHT', 'QUEUE_BUDGET_MS', 'MAX_CONNECTIONS', 'MAX_CONNECTIONS_PER_IP', 'SHED_LAG_MS']
      .filter((n) => process.env[n] !== undefined).map((n) => [n, process.env[n]!]))
    const target = await startServer('kns-overload', 'app', { ...db.env, ...passthrough })
    try {
      await flood(target, seed, 8, 2) // warm-up: key cache, JIT
      const unloaded = await flood(target, seed, 1, Math.max(3, Math.ceil(SECONDS / 3)))
      const capacity = await flood(target, seed, CAPACITY_CONNECTIONS, SECONDS)
      const capacityRate = capacity.ok / SECONDS
      log(`unloaded p99 ${unloaded.admittedP99.toFixed(2)} ms; capacity ${capacityRate.toFixed(0)} req/s (${CAPACITY_CONNECTIONS} connections, closed loop)`)
      log(`admission: ${Object.entries(passthrough).map(([k, v]) => `${k}=${v}`).join(' ') || 'defaults'}`)
      log('| load | offered req/s | answered req/s | 2xx | 503 | other | timeouts | admitted p99 | x unloaded | light p99 | light fails | /readyz max | verdict |')
      log('|---|---|---|---|---|---|---|---|---|---|---|---|---|')
      for (const factor of FACTORS) {
        const rate = Math.round(capacityRate * factor)
        const lightBodies = signCalls({ ...seed, numbers: seed.numbers.slice(0, 100) })
        const [f, p] = await Promise.all([flood(target, seed, CONNECTIONS, SECONDS, rate), probe(target, lightKey, lightBodies, SECONDS * 1000)])
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
    return 0
  } finally {
    await db.cleanup()
  }
}

runMain(main)
