/**
 * `npm run bench:soak [-- --minutes N]`: a production-like mix held for minutes, to see
 * whether memory, latency or errors drift, on SQLite and (when reachable) PostgreSQL.
 *
 * Per engine: seed as `npm run bench` does (bench/seed.ts, bench/caller-seed.ts) plus the demo
 * statistics (`kns seed --demo`: 100 000 sessions over 90 days, 1 000 sign-ups), start the
 * server in its own child process (bench/server.ts, `kns serve`'s V8 flags), warm the key
 * cache, then from a load process of its own (bench/soak-driver.ts):
 *   1. the peak: closed loop, BENCH_CONNECTIONS connections, BENCH_SOAK_WARMUP_S unmeasured
 *      then BENCH_SOAK_PEAK_S measured; the peak rate is the answers per second;
 *   2. the soak: open loop at BENCH_SOAK_LOAD × the peak (evenly paced, over PACED_SOCKETS
 *      keep-alive connections), for the minutes asked, reporting every minute: answers,
 *      errors, p50/p99/max latency (from sending, waiting for a connection included), the
 *      server's RSS (/proc/<pid>/status VmRSS) and V8 heap in use at the minute's end, its CPU
 *      time per answer and longest event-loop delay, and what else used the two cores (the
 *      load process, PostgreSQL, the rest; CPU pressure), so a tail can be told apart from
 *      other work on the machine (bench/proc-stats.ts).
 *
 * The mix, requests per 100 (bench/soak-mix.ts says why):
 *   30 call-signature-verification (valid PASSporTs, each re-signed when 30 s old)
 *   18 object-id-lookup              23 transaction_details (seeded pending approvals)
 *   10 approval-phone (new approvals)  5 verify_signature    3 approval-cancel (seeded approvals)
 *    2 register-user-login (logins of seeded users)
 *    9 public statistics: 2 each global-public-stats, gateway-stats (7 days), wifi-stats
 *      (30 days), wifi-nodes; 1 ns-stats (90 days)
 *
 * Verdict (a report: it does not change the exit code):
 *   RSS flat    RSS at the end of the last minute under 1.10 × RSS at the end of minute 1
 *   p99 stable  every minute's p99 at most 2 × the median of the minutes' p99s
 *   no errors   no non-2xx answer, unexpected 2xx body, socket error or 10 s timeout, in any phase
 * and whether the server kept up (never more than a second of requests sent and unanswered):
 * the p99 rule is relative, and a server seconds behind all along would pass it.
 * Note that the server needs more CPU per request paced than at the closed-loop peak (less to
 * coalesce), so 0.8 × the peak rate is nearer its capacity than 0.8: both are printed.
 * Exit code 0 when every engine ran without errors other than requests shed (503 OVERLOADED,
 * the admission's answer on a machine too busy for the load), and those under SHED_TOLERATED of
 * the requests: counted in the verdict's "no errors", not in the exit code, so CI's small run on
 * a shared machine does not fail on the machine; 1 when one could not run, saw any other error
 * (another 503 included: DATABASE_UNAVAILABLE is what a leaking pool looks like), or shed more.
 *
 * Environment:
 *   BENCH_SOAK_MINUTES   minutes of the soak (default 10; `--minutes N` wins)
 *   BENCH_SOAK_LOAD      the soak's rate as a fraction of the peak (default 0.8)
 *   BENCH_SOAK_PEAK_S    seconds of the measured peak (default 10)
 *   BENCH_SOAK_WARMUP_S  unmeasured closed-loop seconds before it (default 5)
 *   BENCH_CONNECTIONS    connections of the peak (default 32)
 *   BENCH_ENGINES        engines to run, comma-separated (default sqlite,postgres)
 *   BENCH_DATABASE_URL   PostgreSQL server (default postgres://postgres@127.0.0.1:5432/test);
 *                        a fresh schema is created and dropped; unreachable = skipped
 *   BENCH_CALLER_NUMBERS numbers seeded for caller verification (default 10000), over 20 keystores
 */
import { fork, spawn } from 'node:child_process'
import { availableParallelism, loadavg } from 'node:os'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { preflight, startServer, type Target } from './bench-server.ts'
import { callerEndpoints, LOOKUP_NAME } from './caller-bench.ts'
import { seedCaller } from './caller-seed.ts'
import { postgresDatabase, seed, sqliteDatabase, walletSignatures, type BenchDatabase, type Engine } from './seed.ts'
import { histogramPercentile, type DriverCommand, type DriverReport, type KindStats, type WindowStats } from './soak-driver.ts'
import { MIX, soakEndpoints, type SoakSeed } from './soak-mix.ts'
import { cpuDelta, cpuPressureUs, machineBusyUs, postgresCpuUs, rssBytes, type CpuSample } from './proc-stats.ts'

function envNumber(name: string, fallback: number, min: number, max = Infinity): number {
  const raw = process.env[name]
  if (raw === undefined || raw === '') return fallback
  const value = Number(raw)
  if (!Number.isFinite(value) || value < min || value > max) throw new Error(`${name} must be a number from ${min} to ${max}, got "${raw}"`)
  return value
}

const { values: args } = parseArgs({ options: { minutes: { type: 'string' } } })
if (args.minutes !== undefined) process.env.BENCH_SOAK_MINUTES = args.minutes
const MINUTES = Math.round(envNumber('BENCH_SOAK_MINUTES', 10, 1))
const LOAD = envNumber('BENCH_SOAK_LOAD', 0.8, 0.01, 1)
const PEAK_S = envNumber('BENCH_SOAK_PEAK_S', 10, 1)
const WARMUP_S = envNumber('BENCH_SOAK_WARMUP_S', 5, 0)
const CONNECTIONS = Math.round(envNumber('BENCH_CONNECTIONS', 32, 1))
const PG_URL = process.env.BENCH_DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/test'
const ENGINES = (process.env.BENCH_ENGINES || 'sqlite,postgres').split(',').map((e) => e.trim())
const CALLER_SIZES = { numbers: Math.round(envNumber('BENCH_CALLER_NUMBERS', 10_000, 1)), keystores: 20 }
/** Approvals to verify and to cancel: separate sets, since a cancelled approval cannot be approved. */
const DECISIONS = 1000
/** The share of requests the admission may shed (503 OVERLOADED) before the exit code says so. */
const SHED_TOLERATED = 0.05
const SIZES = { ownedNumbers: 200, users: 200, detailApprovals: 500, signApprovals: 2 * DECISIONS }
/**
 * Connections of the soak: many, as from many clients. With 64, a stall of one kind of request
 * (in PostgreSQL runs, for seconds) filled them all, and every other kind, lookups and cached
 * statistics included, queued behind it in this benchmark instead of being answered; then
 * every endpoint showed the same p99 and nothing told which one had stalled.
 */
const PACED_SOCKETS = 1024
const RSS_GROWTH_MAX = 0.10
const P99_SPREAD_MAX = 2
const log = (line: string) => process.stderr.write(`${line}\n`)

// ---------------------------------------------------------------------------------------
// The load process

interface Driver {
  closed(connections: number, seconds: number): Promise<WindowStats>
  paced(rate: number, minutes: number, onMinute: (index: number, stats: WindowStats) => void): Promise<void>
  stop(): void
}

async function startDriver(port: number, soakSeed: SoakSeed): Promise<Driver> {
  // No parent flags (e.g. --cpu-prof): it only sends and times. Advanced serialization carries the histograms.
  const child = fork(new URL('./soak-driver.ts', import.meta.url), [], { execArgv: [], serialization: 'advanced', stdio: ['ignore', 'inherit', 'inherit', 'ipc'] })
  let onReport: (r: DriverReport) => void = () => {}
  let onExit: (code: number | null) => void = () => {}
  child.on('message', (message) => onReport(message as DriverReport))
  child.on('exit', (code) => onExit(code))
  /** Sends a command and passes its reports on until `done` (or `ready`). */
  const command = (cmd: DriverCommand, each: (r: DriverReport) => void) => new Promise<void>((resolve, reject) => {
    onExit = (code) => reject(new Error(`the soak load process exited (code ${code})`))
    onReport = (r) => { if (r.type === 'done' || r.type === 'ready') resolve(); else each(r) }
    child.send(cmd)
  })
  await command({ type: 'init', port, seed: soakSeed }, () => {})
  return {
    async closed(connections, seconds) {
      let stats: WindowStats | undefined
      await command({ type: 'closed', connections, seconds }, (r) => { if (r.type === 'window') stats = r.stats })
      return stats!
    },
    paced: (rate, minutes, onMinute) => command({ type: 'paced', rate, windows: minutes, windowS: 60, sockets: PACED_SOCKETS },
      (r) => { if (r.type === 'window') onMinute(r.index, r.stats) }),
    // Disconnecting lets it exit by itself (it exits when the channel closes).
    stop() { onExit = () => {}; if (child.connected) child.disconnect() },
  }
}

// ---------------------------------------------------------------------------------------
// Figures

const answered = (w: WindowStats) => w.kinds.reduce((n, k) => n + k.answered, 0)

/** Everything that was not a clean 2xx with the expected body, as text ('' when none). */
function problemsOf(kinds: KindStats[], names: readonly string[]): { count: number; shed: number; text: string } {
  const parts: string[] = []
  let count = 0
  let shed = 0
  kinds.forEach((k, i) => {
    const statuses = Object.entries(k.statuses).map(([code, n]) => `${code}x${n}`)
    const other = [[k.badBodies, 'bad bodies'], [k.socketErrors, 'socket errors'], [k.timeouts, 'timeouts']] as const
    const found = [...statuses, ...other.filter(([n]) => n > 0).map(([n, what]) => `${n} ${what}`)]
    count += Object.values(k.statuses).reduce((a, b) => a + b, 0) + k.badBodies + k.socketErrors + k.timeouts
    shed += k.shed
    if (found.length > 0) parts.push(`${names[i]}: ${found.join(' ')}`)
  })
  return { count, shed, text: parts.join('; ') }
}

const p = (histograms: Uint32Array[], q: number) => histogramPercentile(histograms, q)
const ms = (v: number | null) => v === null ? '-' : v < 10 ? v.toFixed(1) : v.toFixed(0)
const mib = (bytes: number) => (bytes / 2 ** 20).toFixed(1)
const median = (values: number[]) => { const s = [...values].sort((a, b) => a - b); return s.length % 2 ? s[s.length >> 1]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2 }

interface Minute {
  index: number
  stats: WindowStats
  requests: number
  errors: number
  /** Of the errors, 503 OVERLOADED (shed by the admission control). */
  shed: number
  errorText: string
  p50: number | null
  p99: number | null
  max: number | null
  /** The endpoint with the highest p99 in the minute, and that p99. */
  slowest: string
  rss: number
  heapUsed: number
  loopDelayMaxMs: number
  serverCpuUs: number
  postgresCpuUs: number
  /** CPU time of everything else (this process, other work on the machine), µs. */
  otherCpuUs: number
  /** Share of the minute in which some task was waiting for a CPU (null: not known). */
  cpuPressure: number | null
}

const SHORT = MIX.map(({ name }) => name.replace(/^(GET|POST) \/(numsys|api\/v1\/\w+)\//, '').replace('global-public-', ''))

function minuteOf(index: number, stats: WindowStats, rss: number, vitals: { heapUsed: number; loopDelayMaxMs: number }, cpu: ReturnType<typeof cpuDelta>): Minute {
  const hs = stats.kinds.map((k) => k.histogram)
  const { count, shed, text } = problemsOf(stats.kinds, SHORT)
  const byP99 = stats.kinds.map((k, i) => ({ i, p99: p([k.histogram], 99) ?? 0 })).sort((a, b) => b.p99 - a.p99)[0]!
  return {
    index, stats, requests: answered(stats), errors: count, shed, errorText: text, p50: p(hs, 50), p99: p(hs, 99), max: p(hs, 100),
    slowest: `${SHORT[byP99.i]} ${ms(byP99.p99)}`, rss, ...vitals, serverCpuUs: cpu.serverUs, postgresCpuUs: cpu.postgresUs,
    otherCpuUs: Math.max(0, cpu.machineUs - cpu.serverUs - stats.driverCpuUs - cpu.postgresUs),
    cpuPressure: cpu.pressureUs === null ? null : cpu.pressureUs / (stats.seconds * 1e6),
  }
}

const MINUTE_HEADER = '| min | requests | req/s | errors | p50 ms | p99 ms | max ms | RSS MiB | heap MiB | server µs/req | ' +
  'cores: server / load / postgres / other | CPU wait % | server loop max delay ms | load send max lag ms | max outstanding | highest p99 (endpoint ms) |\n' +
  '|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---|'
function minuteRow(m: Minute): string {
  const cores = [m.serverCpuUs, m.stats.driverCpuUs, m.postgresCpuUs, m.otherCpuUs].map((us) => (us / m.stats.seconds / 1e6).toFixed(2)).join(' / ')
  return `| ${m.index + 1} | ${m.requests} | ${(m.requests / m.stats.seconds).toFixed(0)} | ${m.errors} | ${ms(m.p50)} | ${ms(m.p99)} | ` +
    `${ms(m.max)} | ${mib(m.rss)} | ${mib(m.heapUsed)} | ${(m.serverCpuUs / m.requests).toFixed(0)} | ${cores} | ` +
    `${m.cpuPressure === null ? '-' : (m.cpuPressure * 100).toFixed(0)} | ${ms(m.loopDelayMaxMs)} | ${ms(m.stats.maxLagMs)} | ${m.stats.maxOutstanding} | ${m.slowest} |`
}

// ---------------------------------------------------------------------------------------
// One engine

interface EngineRun {
  engine: Engine
  /** cpuUs: the server's CPU time per answer at the peak (coalescing makes it lower than at a paced rate). */
  peak: { rps: number; p50: number | null; p99: number | null; cpuUs: number }
  rate: number
  minutes: Minute[]
  /** Errors in the warm-up and the peak. */
  setupErrors: { count: number; shed: number; text: string }
}

/** `kns seed --demo` into the engine's database: the public statistics then have something to answer. */
function seedDemoStatistics(env: Record<string, string>): Promise<void> {
  const childEnv: Record<string, string> = { ...env }
  for (const name of ['PATH', 'HOME', 'TMPDIR', 'LANG']) if (process.env[name] !== undefined) childEnv[name] = process.env[name]
  const kns = fileURLToPath(new URL('../bin/kns.js', import.meta.url))
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [kns, 'seed', '--demo', '--json'], { env: childEnv, stdio: ['ignore', 'ignore', 'inherit'] })
    child.on('error', reject)
    child.on('exit', (code) => code === 0 ? resolve() : reject(new Error(`kns seed --demo exited with ${code}`)))
  })
}

async function soakEngine(db: BenchDatabase): Promise<EngineRun> {
  log(`-- ${db.engine}: seeding`)
  const started = Date.now()
  const data = await seed(db.env, SIZES)
  const caller = await seedCaller(db.env, CALLER_SIZES)
  await seedDemoStatistics(db.env)
  const server: Target = await startServer(`kns-soak-${db.engine}`, 'app', db.env)
  let driver: Driver | undefined
  try {
    const signed = await walletSignatures(server.port, data.keypair, data.signRefs.slice(0, DECISIONS))
    const soakSeed: SoakSeed = {
      engine: db.engine, apiKey: data.apiKey, ownedPhones: data.ownedPhones, users: data.users,
      detailRefs: data.detailRefs, signed, cancelRefs: data.signRefs.slice(DECISIONS), caller,
    }
    await callerEndpoints(caller, log).find((e) => e.name === LOOKUP_NAME)!.warm!(server.port)
    // One request of each kind first, so a broken setup fails with its answer, not a count.
    for (const endpoint of soakEndpoints(soakSeed, log)) await preflight(server.port, endpoint)
    log(`-- ${db.engine}: ready in ${((Date.now() - started) / 1000).toFixed(1)} s; server pid ${server.pid}, RSS ${mib(rssBytes(server.pid))} MiB`)

    driver = await startDriver(server.port, soakSeed)
    const warm = WARMUP_S > 0 ? await driver.closed(CONNECTIONS, WARMUP_S) : undefined
    const cpuBefore = await server.cpu()
    const peakStats = await driver.closed(CONNECTIONS, PEAK_S)
    const peakCpuUs = await server.cpu() - cpuBefore
    const setupErrors = problemsOf([...(warm?.kinds ?? []), ...peakStats.kinds], [...SHORT, ...SHORT])
    const hs = peakStats.kinds.map((k) => k.histogram)
    const peak = { rps: answered(peakStats) / peakStats.seconds, p50: p(hs, 50), p99: p(hs, 99), cpuUs: peakCpuUs / answered(peakStats) }
    const rate = Math.max(1, Math.round(peak.rps * LOAD))
    log(`-- ${db.engine}: peak ${peak.rps.toFixed(0)} req/s (${CONNECTIONS} connections, p50 ${ms(peak.p50)} ms, p99 ${ms(peak.p99)} ms, ` +
      `server ${peak.cpuUs.toFixed(0)} µs/req)` +
      `${setupErrors.text ? `  !! ${setupErrors.text}` : ''}; soaking at ${rate} req/s for ${MINUTES} min`)
    log(MINUTE_HEADER)

    const minutes: Minute[] = []
    const sample = async (): Promise<CpuSample> => ({ serverUs: await server.cpu(), machineUs: machineBusyUs(), postgres: postgresCpuUs(), pressureUs: cpuPressureUs() })
    await server.vitals() // starts the server's event-loop delay monitor
    let before = await sample()
    // Reports arrive as each minute closes; the server is asked in turn (one question at a time).
    let chain = Promise.resolve()
    await driver.paced(rate, MINUTES, (index, stats) => {
      const rss = rssBytes(server.pid)
      chain = chain.then(async () => {
        const vitals = await server.vitals()
        const now = await sample()
        const m = minuteOf(index, stats, rss, vitals, cpuDelta(before, now))
        before = now
        minutes.push(m)
        log(minuteRow(m) + (m.errorText ? `  !! ${m.errorText}` : ''))
      })
    })
    await chain
    return { engine: db.engine, peak, rate, minutes, setupErrors }
  } finally {
    driver?.stop()
    await server.stop()
  }
}

// ---------------------------------------------------------------------------------------
// Report

function verdict(run: EngineRun): string[] {
  const { minutes } = run
  const first = minutes[0]!
  const last = minutes[minutes.length - 1]!
  const growth = (last.rss - first.rss) / first.rss
  const percent = (from: number, to: number) => `${to >= from ? '+' : ''}${((to - from) / from * 100).toFixed(1)} %`
  // A heap that settles after minute 1 shows as one step; a leak keeps growing through the second half too.
  const half = minutes[Math.max(0, Math.floor(minutes.length / 2) - 1)]!
  const rss = minutes.length < 2 ? 'n/a (one minute)' : `${growth <= RSS_GROWTH_MAX ? 'PASS' : 'FAIL'}: ${mib(first.rss)} -> ${mib(last.rss)} MiB ` +
    `(${percent(first.rss, last.rss)}; limit +${RSS_GROWTH_MAX * 100} %); second half (end of minute ${half.index + 1} -> end) ${percent(half.rss, last.rss)}`
  const p99s = minutes.map((m) => m.p99 ?? Infinity)
  const mid = median(p99s)
  const over = minutes.filter((m) => (m.p99 ?? Infinity) > P99_SPREAD_MAX * mid).map((m) => `minute ${m.index + 1} ${ms(m.p99)} ms`)
  const p99 = `${over.length === 0 ? 'PASS' : 'FAIL'}: median minute p99 ${ms(mid)} ms, limit ${ms(P99_SPREAD_MAX * mid)} ms, ` +
    `range ${ms(Math.min(...p99s))}-${ms(Math.max(...p99s))} ms${over.length > 0 ? `; over it: ${over.join(', ')}` : ''}`
  const errors = minutes.reduce((n, m) => n + m.errors, 0) + run.setupErrors.count
  const rates = minutes.map((m) => m.requests / m.stats.seconds)
  // The p99 rule is relative: a server that fell seconds behind all along would pass it.
  const behind = minutes.filter((m) => m.stats.maxOutstanding > run.rate).map((m) => `minute ${m.index + 1} (${m.stats.maxOutstanding} outstanding)`)
  return [
    `RSS flat (end of minute 1 -> end): ${rss}`,
    `p99 stable (every minute <= ${P99_SPREAD_MAX} x the median minute's): ${p99}`,
    `no errors: ${errors === 0 ? 'PASS' : `FAIL: ${errors}`}`,
    `kept up (never over 1 s of requests outstanding; else the figures are not at ${LOAD} x load): ` +
      `${behind.length === 0 ? 'yes' : `NO: ${behind.join(', ')}`}; answers/s per minute ${Math.min(...rates).toFixed(0)}-${Math.max(...rates).toFixed(0)} for ${run.rate} sent/s`,
  ]
}

/** The whole soak per endpoint: where the errors and the tail are. */
function perEndpoint(run: EngineRun): string {
  const rows = ['| endpoint | weight | requests | errors | p50 ms | p99 ms | max ms |', '|---|---:|---:|---:|---:|---:|---:|']
  MIX.forEach(({ name, weight }, i) => {
    const kinds = run.minutes.map((m) => m.stats.kinds[i]!)
    const hs = kinds.map((k) => k.histogram)
    rows.push(`| \`${name}\` | ${weight} | ${kinds.reduce((n, k) => n + k.answered, 0)} | ${problemsOf(kinds, [name]).count} | ` +
      `${ms(p(hs, 50))} | ${ms(p(hs, 99))} | ${ms(p(hs, 100))} |`)
  })
  return rows.join('\n')
}

async function main(): Promise<number> {
  log(`kns soak: ${MINUTES} min at ${LOAD} x the peak (closed loop, ${CONNECTIONS} connections, ${WARMUP_S} s warm-up + ${PEAK_S} s); ` +
    `${availableParallelism()} CPUs, Node ${process.version}, load average ${loadavg().map((l) => l.toFixed(1)).join(' ')}`)
  const runs: EngineRun[] = []
  const notes: string[] = []
  let failed = false
  for (const engine of ENGINES) {
    let db: BenchDatabase
    try {
      db = engine === 'sqlite' ? sqliteDatabase() : await postgresDatabase(PG_URL)
    } catch (err) {
      notes.push(`postgres: skipped, ${new URL(PG_URL).host} unreachable (${(err as Error).message})`)
      log(`-- ${notes.at(-1)}`)
      continue
    }
    try {
      runs.push(await soakEngine(db))
    } catch (err) {
      failed = true
      log(`!! ${engine}: could not run: ${(err as Error).stack ?? err}`)
    } finally {
      await db.cleanup()
    }
  }
  for (const run of runs) {
    console.log(`\n### ${run.engine}: peak ${run.peak.rps.toFixed(0)} req/s (closed loop, ${CONNECTIONS} connections, p99 ${ms(run.peak.p99)} ms, ` +
      `server ${run.peak.cpuUs.toFixed(0)} µs/req); ` +
      `soak at ${run.rate} req/s (${LOAD} x) for ${run.minutes.length} min\n`)
    console.log(`${MINUTE_HEADER}\n${run.minutes.map(minuteRow).join('\n')}\n`)
    console.log(perEndpoint(run))
    console.log(`\nVerdict (${run.engine}):\n${verdict(run).map((line) => `  ${line}`).join('\n')}`)
    const errors = run.setupErrors.text ? [`warm-up/peak: ${run.setupErrors.text}`] : []
    errors.push(...run.minutes.filter((m) => m.errorText).map((m) => `minute ${m.index + 1}: ${m.errorText}`))
    if (errors.length > 0) console.log(`Errors:\n${errors.map((e) => `  ${e}`).join('\n')}`)
  }
  console.log(`\nLatency from sending (a request waiting for a free connection counts its wait), read from histograms to within 2 %; ` +
    `RSS and heap at each minute's end; server µs/req: its CPU time per answer; cores: CPU time per second of the server, ` +
    `the load process, PostgreSQL's processes and everything else (this process, other work on the machine; /proc/stat); ` +
    `CPU wait: share of the minute in which some task on the machine waited for a core (/proc/pressure/cpu); server loop ` +
    `max delay: its longest event-loop delay (a synchronous query, a GC pause, or waiting for a core); load send max lag: ` +
    `how late the load process sent a request (descheduled or busy); max outstanding: requests sent or due and not yet ` +
    `answered (over ${PACED_SOCKETS} connections). Load average at the end ` +
    `${loadavg().map((l) => l.toFixed(1)).join(' ')}.`)
  for (const note of notes) console.log(`Note: ${note}`)
  const broken = runs.some((r) => {
    const requests = r.minutes.reduce((n, m) => n + m.requests, 0)
    const shed = r.setupErrors.shed + r.minutes.reduce((n, m) => n + m.shed, 0)
    return r.setupErrors.count > r.setupErrors.shed || r.minutes.some((m) => m.errors > m.shed) || shed > SHED_TOLERATED * requests
  })
  return failed || broken || runs.length === 0 ? 1 : 0
}

try {
  process.exitCode = await main()
} catch (err) {
  console.error(`soak failed: ${(err as Error).stack ?? err}`)
  process.exitCode = 1
}
