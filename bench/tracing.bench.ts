/**
 * `npm run bench:tracing`: what OpenTelemetry tracing (docs/operations.md, Traces) costs. The
 * same server in three configurations, each its own child process started as `kns serve`
 * starts (bench/server.ts), on copies of one seeded database:
 *
 *   off   no OTLP endpoint: tracing off, the baseline
 *   all   OTLP/HTTP (protobuf) to a local sink, every request traced (parentbased_always_on)
 *   1 %   the same with OTEL_TRACES_SAMPLER=parentbased_traceidratio, OTEL_TRACES_SAMPLER_ARG=0.01
 *         (a realistic production setting)
 *
 * measured with autocannon on a read that touches the database (GET /numsys/transaction_details)
 * and on call-signature verification, the three alternating in short slices (off, then rounds
 * of all, 1 %, off), so all see the same machine load. Printed: req/s, p99 and server CPU per
 * request of each, their ratios to off, and the spans the sink received per request measured
 * (the proof that tracing was on: for "all" it is the spans of one request's tree).
 *
 * The sinks (bench/otlp-sink.ts, one per traced configuration) run in child processes of their
 * own, not here: in this process they would share the event loop with autocannon and slow the
 * load generator in the traced slices only. Spans are counted between two quiet moments (no
 * export for the batch processor's delay and a half second), so the batches exported late are
 * counted with the requests that made them, and the warm-up's are not.
 *
 * Environment:
 *   BENCH_DURATION_S     seconds measured per endpoint and configuration (default 4)
 *   BENCH_SLICE_S        slice length (default 2; at most 25, as bench/api.bench.ts)
 *   BENCH_WARMUP_S       unmeasured seconds per endpoint and configuration first (default 1)
 *   BENCH_CONNECTIONS    concurrent connections (default 32)
 *   BENCH_CALLER_NUMBERS numbers seeded for caller verification (default 2000), over 20 keystores
 *   BENCH_ENGINES        sqlite (default) and/or postgres; on PostgreSQL the three servers share one schema
 *   BENCH_DATABASE_URL   PostgreSQL server (default postgres://postgres@127.0.0.1:5432/test)
 *   BENCH_BSP_DELAY_MS   OTEL_BSP_SCHEDULE_DELAY for the traced servers (default: unset, the SDK's 5000)
 *
 * Exit code 0 when every measurement ran cleanly, whatever the figures (the table is a report);
 * 1 when the bench could not run, a measurement saw errors (non-2xx, unexpected bodies, socket
 * errors), a sink refused an export, or the "all" configuration exported no span.
 */
import { fork } from 'node:child_process'
import { cpSync, mkdtempSync, rmSync } from 'node:fs'
import { availableParallelism, loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { autocannonSlices, type Slice } from './autocannon-slices.ts'
import { envInt, preflight, runMain, startServer, type Endpoint, type Summary, type Target } from './bench-server.ts'
import { callerEndpoints, VERIFY_NAME } from './caller-bench.ts'
import { seedCaller, type CallerSeed } from './caller-seed.ts'
import { areaAEndpoints, onEngines, seed, type BenchDatabase, type Engine, type Seed } from './seed.ts'

const DURATION_S = envInt('BENCH_DURATION_S', 4)
const SLICE_S = envInt('BENCH_SLICE_S', 2)
if (SLICE_S > 25) throw new Error('BENCH_SLICE_S must be at most 25: PASSporTs (re-signed at 30 s) must stay under CALL_MAX_AGE_S = 60 s')
const WARMUP_S = envInt('BENCH_WARMUP_S', 1)
const CONNECTIONS = envInt('BENCH_CONNECTIONS', 32)
const CALLER_SIZES = { numbers: envInt('BENCH_CALLER_NUMBERS', 2000), keystores: 20 }
const ENGINES = (process.env.BENCH_ENGINES || 'sqlite').split(',').map((e) => e.trim())
const PG_URL = process.env.BENCH_DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/test'
const BSP_DELAY_MS = process.env.BENCH_BSP_DELAY_MS ? envInt('BENCH_BSP_DELAY_MS', 5000) : undefined
/** No export for this long: the batch processor has sent all it held. */
const QUIET_MS = (BSP_DELAY_MS ?? 5000) + 500
const READ_NAME = 'GET /numsys/transaction_details'

const log = (line: string) => process.stderr.write(`${line}\n`)
const { cannon, slice, summarize } = autocannonSlices(CONNECTIONS)

// ---------------------------------------------------------------------------------------
// Sinks

interface SinkCounts { requests: number; spans: number; bytes: number; refused: number }
interface Sink { endpoint: string; counts(): Promise<SinkCounts>; stop(): Promise<void> }

async function startSink(): Promise<Sink> {
  const child = fork(new URL('./otlp-sink.ts', import.meta.url), [], { execArgv: [], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] })
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  const { port } = await new Promise<{ port: number }>((resolve, reject) => {
    child.once('message', (message) => resolve(message as { port: number }))
    child.once('exit', (code) => reject(new Error(`OTLP sink exited with code ${code} before listening`)))
  })
  return {
    endpoint: `http://127.0.0.1:${port}`,
    counts: () => new Promise((resolve) => {
      child.once('message', (message) => resolve(message as SinkCounts))
      child.send('counts')
    }),
    async stop() {
      if (child.exitCode === null) child.send('stop')
      await exited
    },
  }
}

/** Waits until no sink has received anything for QUIET_MS. */
async function settle(sinks: Sink[]): Promise<void> {
  let last = ''
  let since = Date.now()
  for (;;) {
    const now = JSON.stringify(await Promise.all(sinks.map((s) => s.counts())))
    if (now !== last) [last, since] = [now, Date.now()]
    else if (Date.now() - since >= QUIET_MS) return
    await sleep(250)
  }
}

// ---------------------------------------------------------------------------------------
// The three configurations

interface Configuration {
  name: 'off' | 'all' | '1 %'
  /** The OTEL_* variables of its server. */
  otel: Record<string, string>
  sink?: Sink
}

function configurations(all: Sink, ratio: Sink): Configuration[] {
  const exporting = (sink: Sink) => ({
    OTEL_EXPORTER_OTLP_ENDPOINT: sink.endpoint,
    OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf',
    ...(BSP_DELAY_MS === undefined ? {} : { OTEL_BSP_SCHEDULE_DELAY: String(BSP_DELAY_MS) }),
  })
  return [
    { name: 'off', otel: {} },
    { name: 'all', otel: { ...exporting(all), OTEL_TRACES_SAMPLER: 'parentbased_always_on' }, sink: all },
    { name: '1 %', otel: { ...exporting(ratio), OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: '0.01' }, sink: ratio },
  ]
}

/** A configuration's server with its own endpoint objects (each warms its own server's key cache). */
interface Running { config: Configuration; server: Target; endpoints: Endpoint[] }

interface Row extends Summary {
  endpoint: string
  engine: Engine
  config: Configuration['name']
  /** Spans received per request measured; null untraced. */
  spansPerRequest: number | null
  off?: Summary
}

/**
 * One endpoint in the three configurations: each warmed, the sinks quiet, then off, and rounds
 * of all, 1 %, off in slices; the sinks quiet again, and the spans between the two counted.
 */
async function measure(runs: Running[], index: number, engine: Engine, sinks: Sink[]): Promise<Row[]> {
  for (const run of runs) {
    const endpoint = run.endpoints[index]!
    await endpoint.warm?.(run.server.port)
    await preflight(run.server.port, endpoint)
    await cannon(run.server.port, endpoint, WARMUP_S)
  }
  await settle(sinks)
  const before = new Map(await Promise.all(runs.map(async (r) => [r, await r.config.sink?.counts()] as const)))
  const slices = new Map<Running, Slice[]>(runs.map((r) => [r, []]))
  const take = async (run: Running) => {
    const endpoint = run.endpoints[index]!
    endpoint.prepare?.()
    slices.get(run)!.push(await slice(run.server, endpoint, SLICE_S))
  }
  const [off, ...traced] = runs
  await take(off!)
  for (let i = 0; i < Math.max(1, Math.round(DURATION_S / SLICE_S)); i++) {
    for (const run of traced) await take(run)
    await take(off!)
  }
  await settle(sinks)
  const offSummary = summarize(slices.get(off!)!)
  const rows: Row[] = []
  for (const run of runs) {
    const own = slices.get(run)!
    const summary = run === off ? offSummary : summarize(own)
    const requests = own.reduce((n, s) => n + s.raw.totalCompletedRequests, 0)
    const [start, end] = [before.get(run), await run.config.sink?.counts()]
    const problems = [summary.problems]
    let spansPerRequest: number | null = null
    if (start !== undefined && end !== undefined) {
      spansPerRequest = (end.spans - start.spans) / requests
      if (end.refused > start.refused) problems.push(`the sink refused ${end.refused - start.refused} exports`)
      if (run.config.name === 'all' && end.spans === start.spans) problems.push('no span received: tracing was not on')
    }
    const row: Row = {
      endpoint: run.endpoints[index]!.name, engine, config: run.config.name, ...summary,
      problems: problems.filter(Boolean).join(', '), spansPerRequest, ...(run === off ? {} : { off: offSummary }),
    }
    log(`   ${engine.padEnd(8)} ${row.endpoint.padEnd(42)} ${row.config.padEnd(4)} ${row.rps.toFixed(0).padStart(6)} req/s  p99 ${row.p99} ms` +
      (spansPerRequest === null ? '' : `  ${spansPerRequest.toFixed(2)} spans/req`) + (row.problems ? `  !! ${row.problems}` : ''))
    rows.push(row)
  }
  return rows
}

// ---------------------------------------------------------------------------------------
// Per engine

/** The database each configuration's server opens: copies of the seeded SQLite directory, or the one PostgreSQL schema. */
function databaseCopies(db: BenchDatabase, count: number): { envs: Record<string, string>[]; cleanup(): void } {
  if (db.engine === 'postgres') return { envs: Array.from({ length: count }, () => db.env), cleanup() {} }
  const dirs = Array.from({ length: count - 1 }, () => mkdtempSync(join(tmpdir(), 'kns-bench-tracing-')))
  for (const dir of dirs) cpSync(db.env.DATA_DIR!, dir, { recursive: true })
  return {
    envs: [db.env, ...dirs.map((dir) => ({ ...db.env, DATA_DIR: dir }))],
    cleanup() { for (const dir of dirs) rmSync(dir, { recursive: true, force: true }) },
  }
}

function endpointsFor(engine: Engine, data: Seed, caller: CallerSeed): Endpoint[] {
  const read = areaAEndpoints(engine, data, []).find((e) => e.name === READ_NAME)!
  const verify = callerEndpoints(caller, log).find((e) => e.name === VERIFY_NAME)!
  return [read, verify]
}

async function benchEngine(db: BenchDatabase, configs: Configuration[]): Promise<Row[]> {
  log(`-- ${db.engine}: seeding`)
  const data = await seed(db.env, { ownedNumbers: 20, users: 0, detailApprovals: 500, signApprovals: 0 })
  const caller = await seedCaller(db.env, CALLER_SIZES)
  const copies = databaseCopies(db, configs.length)
  const runs: Running[] = []
  try {
    for (const [i, config] of configs.entries()) {
      const server = await startServer(`kns-${db.engine}-tracing-${config.name.replace(' %', 'pct')}`, 'app', { ...copies.envs[i]!, ...config.otel })
      runs.push({ config, server, endpoints: endpointsFor(db.engine, data, caller) })
    }
    log(`-- ${db.engine}: three servers up; measuring`)
    const sinks = configs.flatMap((c) => c.sink === undefined ? [] : [c.sink])
    const rows: Row[] = []
    for (const index of runs[0]!.endpoints.keys()) rows.push(...await measure(runs, index, db.engine, sinks))
    return rows
  } finally {
    for (const run of runs) await run.server.stop()
    copies.cleanup()
  }
}

// ---------------------------------------------------------------------------------------
// Report

function table(rows: Row[]): string {
  const lines = [
    '| Endpoint | Engine | Tracing | req/s | p99 ms | CPU µs/req | spans/req | req/s ÷ off | p99 ÷ off | CPU own ÷ off | Errors |',
    '|---|---|---|---:|---:|---:|---:|---:|---:|---:|---|',
  ]
  for (const r of rows) {
    const off = r.off
    const ratio = off === undefined ? '-' : (r.rps / off.rps).toFixed(2)
    const p99 = off === undefined || r.p99 === null || off.p99 === null || off.p99 <= 0 ? '-' : (r.p99 / off.p99).toFixed(1)
    const cpu = off?.cpuUs == null || r.cpuUs === null ? '-' : (r.cpuUs / off.cpuUs).toFixed(2)
    lines.push(`| \`${r.endpoint}\` | ${r.engine} | ${r.config} | ${r.rps.toFixed(0)} | ${r.p99 ?? '-'} | ${r.cpuUs === null ? '-' : r.cpuUs.toFixed(0)} | ` +
      `${r.spansPerRequest === null ? '-' : r.spansPerRequest.toFixed(2)} | ${ratio} | ${p99} | ${cpu} | ${r.problems || 'none'} |`)
  }
  return lines.join('\n')
}

async function main(): Promise<number> {
  log(`kns tracing bench: ${CONNECTIONS} connections; per endpoint and configuration ${WARMUP_S} s warm-up, then ${DURATION_S} s ` +
    `in ${SLICE_S} s slices (off, then rounds of all, 1 %, off); ${availableParallelism()} CPUs, Node ${process.version}`)
  const loadBefore = loadavg().map((l) => l.toFixed(1)).join(' ')
  const [all, ratio] = await Promise.all([startSink(), startSink()])
  const rows: Row[] = []
  const notes: string[] = []
  try {
    const skipped = (note: string) => { notes.push(note); log(`-- ${note}`) }
    rows.push(...(await onEngines(ENGINES, PG_URL, skipped, (db) => benchEngine(db, configurations(all, ratio)))).flat())
  } finally {
    await Promise.all([all.stop(), ratio.stop()])
  }
  console.log(`\n${table(rows)}\n`)
  console.log(`Tracing off (no OTLP endpoint) is the baseline; "all" exports every request's spans, "1 %" samples ` +
    `with parentbased_traceidratio 0.01, both over OTLP/HTTP protobuf to a local sink (its own process) that counts and ` +
    `discards, with the SDK's batch settings${BSP_DELAY_MS === undefined ? '' : ` (OTEL_BSP_SCHEDULE_DELAY=${BSP_DELAY_MS})`}. ` +
    `The three servers alternate ${SLICE_S} s slices (${DURATION_S} s of each, after ${WARMUP_S} s warm-up). spans/req: spans ` +
    `received per request measured. CPU µs/req: the server process's CPU time per request; "CPU own ÷ off" is the CPU ` +
    `cost of tracing, which machine load skews far less than req/s. p99 in whole ms (autocannon). ${CONNECTIONS} ` +
    `connections, ${availableParallelism()} CPUs, Node ${process.version}, load average ${loadBefore} before and ` +
    `${loadavg().map((l) => l.toFixed(1)).join(' ')} after.`)
  for (const note of notes) console.log(`Note: ${note}`)
  const flagged = rows.filter((r) => r.problems !== '')
  if (flagged.length > 0) {
    console.log(`\nFLAGGED: ${flagged.length} measurement(s) saw errors; their figures are not valid.`)
    return 1
  }
  return rows.length > 0 ? 0 : 1
}

runMain(main)
