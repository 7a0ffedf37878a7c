/**
 * `npm run bench`: requests/s and p99 latency of the area A endpoints, each as a ratio to a
 * bare Fastify route measured in the same run, on SQLite and (when reachable) PostgreSQL.
 *
 * Every target server runs in its own child process (bench/server.ts), the bare baseline
 * included, so autocannon's CPU use here weighs on every measurement alike.
 *
 * Environment:
 *   BENCH_DURATION_S     seconds measured per endpoint (default 5)
 *   BENCH_WARMUP_S       unmeasured seconds before each measurement (default 1; 0 = none)
 *   BENCH_CONNECTIONS    concurrent connections (default 32)
 *   BENCH_DATABASE_URL   PostgreSQL server (default postgres://postgres@127.0.0.1:5432/test);
 *                        a fresh schema is created and dropped; unreachable = skipped
 *   BENCH_CPU_PROF       a directory: the servers run with --cpu-prof and write profiles there
 *
 * Exit code 0 when every measurement ran cleanly, whether or not the targets are met (the
 * table is a report); 1 when the bench could not run or a measurement saw errors (non-2xx,
 * unexpected bodies, socket errors), since its figures would not mean what they say.
 */
import { fork, type ChildProcess } from 'node:child_process'
import { availableParallelism } from 'node:os'
import { resolve } from 'node:path'
import autocannon, { type Result } from 'autocannon'
import { approvalBody, inPool, pad, postgresDatabase, seed, sqliteDatabase, type BenchDatabase, type Engine, type Seed } from './seed.ts'

function envInt(name: string, fallback: number, min: number): number {
  const raw = process.env[name]
  if (raw === undefined || raw === '') return fallback
  const value = Number(raw)
  if (!Number.isInteger(value) || value < min) throw new Error(`${name} must be a whole number >= ${min}, got "${raw}"`)
  return value
}

const DURATION_S = envInt('BENCH_DURATION_S', 5, 1)
const WARMUP_S = envInt('BENCH_WARMUP_S', 1, 0)
const CONNECTIONS = envInt('BENCH_CONNECTIONS', 32, 1)
const PG_URL = process.env.BENCH_DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/test'
const CPU_PROF_DIR = process.env.BENCH_CPU_PROF ? resolve(process.env.BENCH_CPU_PROF) : undefined
const SIZES = { ownedNumbers: 200, users: 200, detailApprovals: 500, signApprovals: 1000 }
const TARGETS: Record<string, number> = {
  'GET /numsys/transaction_details': 0.5,
  'POST /numsys/approval-phone': 0.3,
}

const log = (line: string) => process.stderr.write(`${line}\n`)

// ---------------------------------------------------------------------------------------
// Server children

interface Target { port: number; stop(): Promise<void> }

async function startServer(label: string, mode: 'bare' | 'app', env: Record<string, string>): Promise<Target> {
  const execArgv = [...process.execArgv]
  if (CPU_PROF_DIR !== undefined) execArgv.push('--cpu-prof', `--cpu-prof-dir=${CPU_PROF_DIR}`, `--cpu-prof-name=${label}.cpuprofile`)
  // Only what the server needs: nothing from this shell's DATABASE_URL, KNS_SECRET, ...
  const childEnv: Record<string, string> = { ...env, BENCH_MODE: mode }
  for (const name of ['PATH', 'HOME', 'TMPDIR', 'LANG']) if (process.env[name] !== undefined) childEnv[name] = process.env[name]
  const child: ChildProcess = fork(new URL('./server.ts', import.meta.url), [], { env: childEnv, execArgv, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] })
  const exited = new Promise<number | null>((resolveExit) => child.once('exit', (code) => resolveExit(code)))
  const port = await new Promise<number>((resolvePort, reject) => {
    child.once('message', (message) => resolvePort((message as { port: number }).port))
    child.once('error', reject)
    void exited.then((code) => reject(new Error(`${label} server exited with code ${code} before listening`)))
  })
  let crashed = true
  void exited.then((code) => { if (crashed) log(`!! ${label} server exited unexpectedly (code ${code})`) })
  return {
    port,
    async stop() {
      crashed = false
      if (child.exitCode !== null) return
      child.send('stop')
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000)
      await exited
      clearTimeout(timer)
    },
  }
}

// ---------------------------------------------------------------------------------------
// Endpoints

interface Endpoint {
  name: string
  method: 'GET' | 'POST'
  headers: Record<string, string>
  /** The next request: called once per request, so bodies and paths vary. */
  next(): { path: string; body?: string }
  /** A 2xx body that means what the endpoint should mean (e.g. `success: true`). */
  ok(body: string): boolean
}

const JSON_HEADERS = { 'content-type': 'application/json' }

const bare: Endpoint = {
  name: 'GET /bare (baseline)', method: 'GET', headers: {},
  next: () => ({ path: '/bare' }),
  ok: (body) => body.includes('"ok":true'),
}

function endpoints(engine: Engine, data: Seed, signed: { approvalNumber: string; signature: string }[]): Endpoint[] {
  let registrations = 0
  let newNumbers = 0
  let references = 0
  let reads = 0
  let verifications = 0
  return [{
    name: 'POST /numsys/register-user-login', method: 'POST', headers: JSON_HEADERS,
    // Alternately a number never seen before (mints a token) and a registered one (login).
    next() {
      const i = registrations++
      const user = i % 2 === 0
        ? { email: `new${newNumbers}@bench.example`, phoneNumber: `+49151${pad(newNumbers++, 8)}` }
        : data.users[(i >> 1) % data.users.length]!
      return { path: '/numsys/register-user-login', body: JSON.stringify(user) }
    },
    ok: (body) => body.includes('"success":true'),
  }, {
    name: 'POST /numsys/approval-phone', method: 'POST', headers: { ...JSON_HEADERS, 'x-api-key': data.apiKey },
    next() {
      const i = references++
      const body = approvalBody(data.ownedPhones[i % data.ownedPhones.length]!, `bench-${engine}-${i}`)
      return { path: '/numsys/approval-phone', body: JSON.stringify(body) }
    },
    ok: (body) => body.includes('"approvalNumber"'),
  }, {
    name: 'GET /numsys/transaction_details', method: 'GET', headers: {},
    next: () => ({ path: `/numsys/transaction_details?ref=${data.detailRefs[reads++ % data.detailRefs.length]}` }),
    ok: (body) => body.includes('"status":"pending"'),
  }, {
    name: 'POST /numsys/verify_signature', method: 'POST', headers: JSON_HEADERS,
    // The first round approves each approval; later rounds are idempotent successes.
    next: () => ({ path: '/numsys/verify_signature', body: JSON.stringify(signed[verifications++ % signed.length]) }),
    ok: (body) => body.includes('"success":true'),
  }]
}

// ---------------------------------------------------------------------------------------
// Measuring

interface Measurement {
  endpoint: string
  engine: Engine | '-'
  rps: number
  p99: number
  requests: number
  /** Empty when clean; otherwise what went wrong, e.g. "409x12, 3 unexpected bodies". */
  problems: string
}

/** One request through fetch, so a broken setup fails with its response rather than a count. */
async function preflight(port: number, endpoint: Endpoint): Promise<void> {
  const { path, body } = endpoint.next()
  const response = await fetch(`http://127.0.0.1:${port}${path}`, { method: endpoint.method, headers: endpoint.headers, body })
  const text = await response.text()
  if (!response.ok || !endpoint.ok(text)) throw new Error(`${endpoint.name}: preflight answered ${response.status} ${text.slice(0, 500)}`)
}

function cannon(port: number, endpoint: Endpoint, durationS: number): Promise<Result> {
  return autocannon({
    url: `http://127.0.0.1:${port}`,
    connections: CONNECTIONS,
    duration: durationS,
    timeout: 10,
    requests: [{
      method: endpoint.method,
      headers: endpoint.headers,
      setupRequest(request) {
        const next = endpoint.next()
        request.path = next.path
        if (next.body !== undefined) request.body = next.body
        return request
      },
    }],
    verifyBody: endpoint.ok,
  })
}

async function measure(port: number, endpoint: Endpoint, engine: Engine | '-'): Promise<Measurement> {
  await preflight(port, endpoint)
  if (WARMUP_S > 0) await cannon(port, endpoint, WARMUP_S)
  const result = await cannon(port, endpoint, DURATION_S)
  const problems: string[] = []
  const statuses = Object.entries(result.statusCodeStats).filter(([code]) => !code.startsWith('2'))
  if (statuses.length > 0) problems.push(statuses.map(([code, s]) => `${code}x${s.count}`).join(' '))
  const badBodies = result.mismatches - result.non2xx
  if (badBodies > 0) problems.push(`${badBodies} unexpected 2xx bodies`)
  if (result.errors > 0) problems.push(`${result.errors} socket errors (${result.timeouts} timeouts)`)
  const m: Measurement = {
    endpoint: endpoint.name, engine, rps: result.requests.average, p99: result.latency.p99,
    requests: result.requests.total, problems: problems.join(', '),
  }
  log(`   ${engine.padEnd(8)} ${endpoint.name.padEnd(36)} ${m.rps.toFixed(0).padStart(7)} req/s  p99 ${m.p99} ms` +
    (m.problems ? `  !! ${m.problems}` : ''))
  return m
}

async function benchEngine(db: BenchDatabase): Promise<Measurement[]> {
  log(`-- ${db.engine}: seeding`)
  const started = Date.now()
  const data = await seed(db.env, SIZES)
  const server = await startServer(`kns-${db.engine}`, 'app', db.env)
  try {
    // Signatures over each approval's signMessage, as a wallet gets it from transaction_details.
    const signed = await inPool(data.signRefs, 8, async (approvalNumber) => {
      const response = await fetch(`http://127.0.0.1:${server.port}/numsys/transaction_details?ref=${approvalNumber}`)
      if (!response.ok) throw new Error(`transaction_details ${approvalNumber}: ${response.status} ${await response.text()}`)
      const { signMessage } = await response.json() as { signMessage: string }
      const { signature } = await data.keypair.signPersonalMessage(new TextEncoder().encode(signMessage))
      return { approvalNumber, signature }
    })
    log(`-- ${db.engine}: seeded and signed in ${((Date.now() - started) / 1000).toFixed(1)} s; measuring`)
    const results: Measurement[] = []
    for (const endpoint of endpoints(db.engine, data, signed)) results.push(await measure(server.port, endpoint, db.engine))
    return results
  } finally {
    await server.stop()
  }
}

// ---------------------------------------------------------------------------------------
// Report

function table(measurements: Measurement[], baseline: { rps: number; p99: number }): string {
  const rows = [
    '| Endpoint | Engine | req/s | p99 ms | req/s ÷ bare | p99 ÷ bare | Target (req/s ÷ bare) | Result | Errors |',
    '|---|---|---:|---:|---:|---:|---:|---|---|',
  ]
  for (const m of measurements) {
    const ratio = m.rps / baseline.rps
    const target = TARGETS[m.endpoint]
    const result = target === undefined ? '-' : ratio >= target ? 'PASS' : 'FAIL'
    const p99Ratio = baseline.p99 > 0 ? (m.p99 / baseline.p99).toFixed(1) : 'n/a'
    rows.push(`| \`${m.endpoint}\` | ${m.engine} | ${m.rps.toFixed(0)} | ${m.p99} | ${ratio.toFixed(2)} | ${p99Ratio} | ` +
      `${target === undefined ? '-' : `>= ${target}`} | ${result} | ${m.problems || 'none'} |`)
  }
  return rows.join('\n')
}

async function main(): Promise<number> {
  log(`kns bench: ${CONNECTIONS} connections, ${WARMUP_S} s warm-up + ${DURATION_S} s per endpoint, ` +
    `${availableParallelism()} CPUs, Node ${process.version}`)
  const measurements: Measurement[] = []
  const notes: string[] = []

  const bareServer = await startServer('bare', 'bare', {})
  let before: Measurement
  let after: Measurement
  try {
    log('-- baseline')
    before = await measure(bareServer.port, bare, '-')

    for (const open of [async () => sqliteDatabase(), async () => postgresDatabase(PG_URL)]) {
      let db: BenchDatabase
      try {
        db = await open()
      } catch (err) {
        const note = `postgres: skipped, ${new URL(PG_URL).host} unreachable (${(err as Error).message})`
        notes.push(note)
        log(`-- ${note}`)
        continue
      }
      try {
        measurements.push(...await benchEngine(db))
      } finally {
        await db.cleanup()
      }
    }

    log('-- baseline again')
    after = await measure(bareServer.port, bare, '-')
  } finally {
    await bareServer.stop()
  }

  // The baseline is the mean of its runs before and after, so slow drift shows in neither ratio.
  const baseline = { rps: (before.rps + after.rps) / 2, p99: (before.p99 + after.p99) / 2 }
  const baselineRow: Measurement = {
    endpoint: bare.name, engine: '-', rps: baseline.rps, p99: baseline.p99,
    requests: before.requests + after.requests, problems: [before.problems, after.problems].filter(Boolean).join(', '),
  }
  const all = [baselineRow, ...measurements]
  console.log(`\n${table(all, baseline)}\n`)
  console.log(`Bare route: ${before.rps.toFixed(0)} req/s (p99 ${before.p99} ms) before, ${after.rps.toFixed(0)} req/s ` +
    `(p99 ${after.p99} ms) after; ratios use the mean. ${CONNECTIONS} connections, ${DURATION_S} s per endpoint, ` +
    `${availableParallelism()} CPUs, Node ${process.version}; server and bare route each in a child process.`)
  for (const note of notes) console.log(`Note: ${note}`)
  const flagged = all.filter((m) => m.problems !== '')
  if (flagged.length > 0) {
    console.log(`\nFLAGGED: ${flagged.length} measurement(s) saw errors; their figures are not valid.`)
    return 1
  }
  return 0
}

try {
  process.exitCode = await main()
} catch (err) {
  console.error(`bench failed: ${(err as Error).stack ?? err}`)
  process.exitCode = 1
}
