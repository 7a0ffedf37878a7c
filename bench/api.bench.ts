/**
 * `npm run bench`: requests/s and p99 latency of the area A and caller-verification (area B)
 * endpoints, each as a ratio to a reference measured in the same run, on SQLite and (when
 * reachable) PostgreSQL. The reference is a bare Fastify route, except for
 * call-signature-verification: raw `crypto.verify` ES256 in one process (bench/caller-bench.ts).
 * That endpoint is then loaded at half its peak rate for p99 (bench/caller-paced.ts).
 *
 * Every target server runs in its own child process (bench/server.ts), the bare baseline
 * included, so autocannon's CPU use here weighs on every measurement alike. Each endpoint
 * alternates with its reference in short slices, so both see the same machine load.
 *
 * Environment:
 *   BENCH_DURATION_S     seconds measured per endpoint (default 4), and as long on its reference
 *   BENCH_SLICE_S        the endpoint and its reference alternate in slices this long (default 2; at most 25)
 *   BENCH_WARMUP_S       unmeasured seconds before each measurement (default 1; 0 = none)
 *   BENCH_HALF_RATE_S    seconds of each of the three half-peak-rate runs (default 2)
 *   BENCH_CONNECTIONS    concurrent connections (default 32)
 *   BENCH_DATABASE_URL   PostgreSQL server (default postgres://postgres@127.0.0.1:5432/test);
 *                        a fresh schema is created and dropped; unreachable = skipped
 *   BENCH_CPU_PROF       a directory: the servers run with --cpu-prof and write profiles there
 *   BENCH_ENGINES        engines to run, comma-separated (default sqlite,postgres)
 *   BENCH_ONLY           only the endpoints whose name contains one of these comma-separated texts
 *   BENCH_CALLER_NUMBERS numbers seeded for caller verification (default 10000), over 20 keystores
 *
 * Exit code 0 when every measurement ran cleanly, whether or not the targets are met (the
 * table is a report); 1 when the bench could not run or a measurement saw errors (non-2xx,
 * unexpected bodies, socket errors), since its figures would not mean what they say.
 */
import { availableParallelism, loadavg } from 'node:os'
import { callerEndpoints, callerNote, LOOKUP_NAME, startRawVerify, summarizeVerify, VERIFY_NAME, type RawVerify } from './caller-bench.ts'
import { paced, stopPaced, summarizePaced, type PacedResult } from './caller-paced.ts'
import { autocannonSlices, type Slice } from './autocannon-slices.ts'
import { preflight, startServer, type Endpoint, type Reference, type Summary, type Target } from './bench-server.ts'
import { seedCaller, type CallerSeed } from './caller-seed.ts'
import { startX5uFixture, X5U_NAME } from './x5u-bench.ts'
import { areaAEndpoints, onEngines, seed, walletSignatures, type BenchDatabase, type Engine } from './seed.ts'
import { camaraEndpoints, CHECK_NAME, seedCamara } from './camara-bench.ts'

function envInt(name: string, fallback: number, min: number): number {
  const raw = process.env[name]
  if (raw === undefined || raw === '') return fallback
  const value = Number(raw)
  if (!Number.isInteger(value) || value < min) throw new Error(`${name} must be a whole number >= ${min}, got "${raw}"`)
  return value
}

const DURATION_S = envInt('BENCH_DURATION_S', 4, 1)
const SLICE_S = envInt('BENCH_SLICE_S', 2, 1)
if (SLICE_S > 25) throw new Error('BENCH_SLICE_S must be at most 25: PASSporTs (re-signed at 30 s) must stay under CALL_MAX_AGE_S = 60 s')
const WARMUP_S = envInt('BENCH_WARMUP_S', 1, 0)
const HALF_RATE_S = envInt('BENCH_HALF_RATE_S', 2, 1)
const CONNECTIONS = envInt('BENCH_CONNECTIONS', 32, 1)
const PG_URL = process.env.BENCH_DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/test'
const ENGINES = (process.env.BENCH_ENGINES || 'sqlite,postgres').split(',').map((e) => e.trim())
const ONLY = (process.env.BENCH_ONLY || '').split(',')
const SIZES = { ownedNumbers: 200, users: 200, detailApprovals: 500, signApprovals: 1000, swapNumbers: 500 }
const CALLER_SIZES = { numbers: envInt('BENCH_CALLER_NUMBERS', 10_000, 1), keystores: 20 }
const halfRateName = (name: string) => `${name} at 0.5 × peak`
const HALF_RATE_NAME = halfRateName(VERIFY_NAME)
/** req/s at least this ratio of the reference's, or p99 at most this many ms. */
type Goal = { minRatio: number } | { maxP99: number }
const TARGETS: Record<string, Goal> = {
  'GET /numsys/transaction_details': { minRatio: 0.5 },
  [CHECK_NAME]: { minRatio: 0.5 },
  'POST /numsys/approval-phone': { minRatio: 0.3 },
  [VERIFY_NAME]: { minRatio: 0.5 },
  [HALF_RATE_NAME]: { maxP99: 10 },
  [X5U_NAME]: { minRatio: 0.8 },
  [halfRateName(X5U_NAME)]: { maxP99: 10 },
  [LOOKUP_NAME]: { minRatio: 0.5 },
}

const log = (line: string) => process.stderr.write(`${line}\n`)
const { cannon, slice, summarize } = autocannonSlices(CONNECTIONS)

// ---------------------------------------------------------------------------------------
// Server children

// ---------------------------------------------------------------------------------------
// Endpoints

const bare: Endpoint = {
  name: 'GET /bare (baseline)', method: 'GET', headers: {},
  next: () => ({ path: '/bare' }),
  ok: (body) => body.includes('"ok":true'),
}

// ---------------------------------------------------------------------------------------
// Measuring

interface Measurement extends Summary {
  endpoint: string
  engine: Engine | '-'
  /** The reference over the slices interleaved with this endpoint's (absent on reference rows). */
  ref?: Summary & { name: string }
}

const us = (cpuUs: number | null) => cpuUs === null ? '-' : cpuUs.toFixed(0)
const report = (m: Measurement) => log(`   ${m.engine.padEnd(8)} ${m.endpoint.padEnd(34)} ${m.rps.toFixed(0).padStart(6)} req/s  ` +
  `p99 ${String(m.p99).padStart(4)} ms  CPU ${us(m.cpuUs)} µs` + (m.ref === undefined ? '' : `   ${m.ref.name} ${m.ref.rps.toFixed(0)}/s` +
  (m.ref.p99 === null ? '' : `  p99 ${m.ref.p99} ms`) + `  CPU ${us(m.ref.cpuUs)} µs`) + (m.problems ? `  !! ${m.problems}` : ''))

/**
 * Other work on the machine makes throughput drift by several times within a minute, so the
 * endpoint and its reference alternate in short slices (R E R E ... R): both see the same
 * conditions, and the ratio compares like with like.
 */
async function measure<R>(server: Target, endpoint: Endpoint, engine: Engine, ref: Reference<R>): Promise<Measurement> {
  await endpoint.warm?.(server.port)
  await preflight(server.port, endpoint)
  if (WARMUP_S > 0) await cannon(server.port, endpoint, WARMUP_S)
  const slices = Math.max(1, Math.round(DURATION_S / SLICE_S))
  const own: Slice[] = []
  const refRuns: R[] = [await ref.run(SLICE_S)]
  for (let i = 0; i < slices; i++) {
    endpoint.prepare?.()
    own.push(await slice(server, endpoint, SLICE_S))
    refRuns.push(await ref.run(SLICE_S))
  }
  const m: Measurement = { endpoint: endpoint.name, engine, ...summarize(own), ref: { name: ref.name, ...ref.summarize(refRuns) } }
  report(m)
  return m
}

/**
 * The endpoint again at half its measured peak, for latency under ordinary load: evenly paced
 * (bench/caller-paced.ts; the target applies here) with the bare route paced alike as the
 * reference (what the machine alone does to p99), and autocannon `overallRate` at the same
 * rate, whose bursts and latency correction overstate p99 (for comparison). In turns, slice by slice.
 */
async function measureHalfRate(server: Target, endpoint: Endpoint, engine: Engine, peak: Measurement, bareServer: Target): Promise<Measurement[]> {
  const rate = Math.max(1, Math.round(peak.rps / 2))
  const pacedSlice = async (target: Target, e: Endpoint) => {
    const before = await target.cpu()
    const result = await paced({ port: target.port, rate, seconds: SLICE_S, sockets: CONNECTIONS * 2, ...e })
    return { ...result, cpuUs: await target.cpu() - before }
  }
  const [even, control, bursty]: [PacedResult[], PacedResult[], Slice[]] = [[], [], []]
  for (let i = 0; i < Math.max(1, Math.round(HALF_RATE_S / SLICE_S)); i++) {
    endpoint.prepare?.()
    even.push(await pacedSlice(server, endpoint))
    control.push(await pacedSlice(bareServer, bare))
    endpoint.prepare?.()
    bursty.push(await slice(server, endpoint, SLICE_S, rate))
  }
  const results: Measurement[] = [
    { endpoint: halfRateName(endpoint.name), engine, ...summarizePaced(even), ref: { name: 'bare, paced alike', ...summarizePaced(control) } },
    { endpoint: `${halfRateName(endpoint.name)} (autocannon overallRate)`, engine, ...summarize(bursty), ref: { name: 'peak', rps: peak.rps, p99: peak.p99, cpuUs: peak.cpuUs, problems: '' } },
  ]
  results.forEach(report)
  return results
}

interface References { bare: Reference<Slice>; bareServer: Target; verify: RawVerify }

async function benchEngine(db: BenchDatabase, refs: References): Promise<Measurement[]> {
  log(`-- ${db.engine}: seeding`)
  const started = Date.now()
  const data = await seed(db.env, SIZES)
  const caller: CallerSeed = await seedCaller(db.env, CALLER_SIZES)
  const camara = await seedCamara(db.env, SIZES.swapNumbers)
  const x5u = await startX5uFixture()
  const server = await startServer(`kns-${db.engine}`, 'app', { ...db.env, ...x5u.env })
  try {
    const signed = await walletSignatures(server.port, data.keypair, data.signRefs)
    log(`-- ${db.engine}: seeded and signed in ${((Date.now() - started) / 1000).toFixed(1)} s; measuring`)
    const results: Measurement[] = []
    const all = [...areaAEndpoints(db.engine, data, signed), ...camaraEndpoints(camara), ...callerEndpoints(caller, log), x5u.endpoint(caller.apiKey, log)]
    for (const endpoint of all.filter((e) => ONLY.some((only) => e.name.includes(only)))) {
      if (endpoint.name !== VERIFY_NAME && endpoint.name !== X5U_NAME) {
        results.push(await measure(server, endpoint, db.engine, refs.bare))
        continue
      }
      const peak = await measure(server, endpoint, db.engine, refs.verify)
      results.push(peak, ...await measureHalfRate(server, endpoint, db.engine, peak, refs.bareServer))
    }
    return results
  } finally {
    await server.stop()
    await x5u.stop()
  }
}

// ---------------------------------------------------------------------------------------
// Report

function verdict(m: Measurement): { target: string; result: string } {
  const goal = TARGETS[m.endpoint]
  if (goal === undefined || m.ref === undefined) return { target: '-', result: '-' }
  if ('maxP99' in goal) return { target: `p99 <= ${goal.maxP99} ms`, result: m.p99 !== null && m.p99 <= goal.maxP99 ? 'PASS' : 'FAIL' }
  return { target: `>= ${goal.minRatio} × ${m.ref.name}`, result: m.rps / m.ref.rps >= goal.minRatio ? 'PASS' : 'FAIL' }
}

function table(measurements: Measurement[]): string {
  const rows = [
    '| Endpoint | Engine | req/s | p99 ms | CPU µs/req | Reference | ref /s | ref p99 ms | ref CPU µs | req/s ÷ ref | CPU ref ÷ own | p99 ÷ ref | Target | Result | Errors |',
    '|---|---|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---|---|---|',
  ]
  const ms = (p99: number | null) => p99 === null ? '-' : String(p99)
  for (const m of measurements) {
    const { target, result } = verdict(m)
    const ref = m.ref
    // Truncated, not rounded: a ratio shown as 0.50 has met a 0.5 target.
    const ratio = ref === undefined ? '-' : (Math.floor((m.rps / ref.rps) * 100) / 100).toFixed(2)
    const p99Ratio = ref === undefined || m.p99 === null || ref.p99 === null || ref.p99 <= 0 ? '-' : (m.p99 / ref.p99).toFixed(1)
    const cpuRatio = ref?.cpuUs == null || m.cpuUs === null ? '-' : (ref.cpuUs / m.cpuUs).toFixed(2)
    const errors = [m.problems, ref?.problems ? `${ref.name}: ${ref.problems}` : ''].filter(Boolean).join('; ')
    rows.push(`| \`${m.endpoint}\` | ${m.engine} | ${m.rps.toFixed(0)} | ${ms(m.p99)} | ${us(m.cpuUs)} | ${ref?.name ?? '-'} | ` +
      `${ref === undefined ? '-' : ref.rps.toFixed(0)} | ${ref === undefined ? '-' : ms(ref.p99)} | ${ref === undefined ? '-' : us(ref.cpuUs)} | ` +
      `${ratio} | ${cpuRatio} | ${p99Ratio} | ${target} | ${result} | ${errors || 'none'} |`)
  }
  return rows.join('\n')
}

async function main(): Promise<number> {
  log(`kns bench: ${CONNECTIONS} connections; per endpoint ${WARMUP_S} s warm-up, then ${DURATION_S} s in ${SLICE_S} s slices ` +
    `alternating with its reference; ${availableParallelism()} CPUs, Node ${process.version}`)
  const measurements: Measurement[] = []
  const allBare: Slice[] = []
  const notes: string[] = []
  const loadBefore = loadavg().map((l) => l.toFixed(1)).join(' ')

  const bareServer = await startServer('bare', 'bare', {})
  let rawVerify: RawVerify | undefined
  try {
    await preflight(bareServer.port, bare)
    if (WARMUP_S > 0) await cannon(bareServer.port, bare, WARMUP_S)
    rawVerify = await startRawVerify(WARMUP_S)
    const run = async (seconds: number) => { const s = await slice(bareServer, bare, seconds); allBare.push(s); return s }
    const refs: References = { verify: rawVerify, bare: { name: 'bare', run, summarize }, bareServer }
    const skipped = (note: string) => { notes.push(note); log(`-- ${note}`) }
    measurements.push(...(await onEngines(ENGINES, PG_URL, skipped, (db) => benchEngine(db, refs))).flat())
  } finally {
    await rawVerify?.stop()
    await bareServer.stop()
  }

  const perEndpoint = measurements.filter((m) => m.ref?.name === 'bare').map((m) => m.ref!.rps)
  const range = perEndpoint.length === 0 ? '' : ` (here ${Math.min(...perEndpoint).toFixed(0)}-${Math.max(...perEndpoint).toFixed(0)} req/s)`
  const all: Measurement[] = allBare.length === 0 ? [] : [{ endpoint: bare.name, engine: '-', ...summarize(allBare) }]
  if (rawVerify !== undefined && rawVerify.all.length > 0) all.push({ endpoint: 'crypto.verify ES256, 1 process (verifies/s)', engine: '-', ...summarizeVerify(rawVerify.all) })
  all.push(...measurements)
  console.log(`\n${table(all)}\n`)
  console.log(`Each endpoint alternates ${SLICE_S} s slices with its reference (${DURATION_S} s of each, after ${WARMUP_S} s ` +
    `warm-up); "ref" is the reference over the slices around that endpoint: the bare route${range}, or for ` +
    `call-signature-verification raw crypto.verify; the first rows are all slices of each reference. ` +
    `CPU µs/req: the server process's CPU time (all threads) per request served (for crypto.verify, per verification); ` +
    `"CPU ref ÷ own" is the throughput ratio the two would have with equal CPU, which machine load skews far less than ` +
    `req/s ÷ ref. p99 ÷ ref is latency: higher is worse. ${CONNECTIONS} connections, ${availableParallelism()} CPUs, Node ${process.version}, ` +
    `load average ${loadBefore} before and ${loadavg().map((l) => l.toFixed(1)).join(' ')} after; each server in its own child process.`)
  console.log(callerNote(CALLER_SIZES, HALF_RATE_S, SLICE_S))
  for (const note of notes) console.log(`Note: ${note}`)
  const flagged = all.filter((m) => m.problems !== '' || (m.ref?.problems ?? '') !== '')
  if (flagged.length > 0) {
    console.log(`\nFLAGGED: ${flagged.length} measurement(s) saw errors; their figures are not valid.`)
    return 1
  }
  return 0
}

// Only when run itself: bench/soak.bench.ts imports startServer and preflight from here.
if (import.meta.main) {
  try {
    process.exitCode = await main()
  } catch (err) {
    console.error(`bench failed: ${(err as Error).stack ?? err}`)
    process.exitCode = 1
  } finally {
    stopPaced()
  }
}
