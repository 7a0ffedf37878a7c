/**
 * All cores (issue "Production under pressure"): req/s of call verification and of
 * approval-phone on PostgreSQL with `kns serve --workers 1` and `--workers 2`, each a closed
 * loop of BENCH_CONNECTIONS connections for BENCH_SECONDS, measured in the same run (the
 * ratio is the figure; the load generator shares the machine's cores).
 *
 *   npm run bench:workers      BENCH_WORKERS (1,2), BENCH_SECONDS (8), BENCH_CONNECTIONS (32)
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { join } from 'node:path'
import { randomBytes } from 'node:crypto'
import autocannon from 'autocannon'
import { loadConfig } from '../src/config.ts'
import { createApiKey } from '../src/keys/api-keys.ts'
import { openService } from '../src/service.ts'
import { signCalls, seedCaller } from './caller-seed.ts'
import { approvalBody, postgresDatabase } from './seed.ts'
import { freePort } from '../test/support/process.ts'
import { envInt, runMain } from './bench-server.ts'

const log = (line: string) => process.stderr.write(`${line}\n`)
const SECONDS = envInt('BENCH_SECONDS', 8)
const CONNECTIONS = envInt('BENCH_CONNECTIONS', 32)
const COUNTS = (process.env.BENCH_WORKERS ?? '1,2').split(',').map(Number).filter((n) => n > 0)
const PG_URL = process.env.BENCH_DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/test'
const KNS = join(import.meta.dirname, '..', 'bin', 'kns.js')

async function serve(env: Record<string, string>, workers: number): Promise<{ port: number; child: ChildProcess }> {
  const port = await freePort()
  const childEnv: Record<string, string> = { ...env, PORT: String(port), HOST: '127.0.0.1', MAX_CONNECTIONS_PER_IP: '1000000', LOG_LEVEL: 'warn' }
  for (const name of ['PATH', 'HOME', 'TMPDIR', 'LANG']) if (process.env[name] !== undefined) childEnv[name] = process.env[name]!
  const child = spawn(process.execPath, [KNS, 'serve', '--workers', String(workers)], { env: childEnv, stdio: ['ignore', 'pipe', 'inherit'] })
  let out = ''
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => { out += chunk })
  const deadline = Date.now() + 60_000
  while (Date.now() < deadline) {
    const listening = workers === 1 ? 1 : (out.match(/"msg":"worker listening"/g) ?? []).length
    if (listening >= workers && await fetch(`http://127.0.0.1:${port}/healthz`).then((r) => r.ok, () => false)) return { port, child }
    await new Promise((resolve) => setTimeout(resolve, 200))
  }
  child.kill('SIGKILL')
  throw new Error(`kns serve --workers ${workers} did not come up`)
}

async function stop(child: ChildProcess): Promise<void> {
  const exited = new Promise((resolve) => child.once('exit', resolve))
  child.kill('SIGTERM')
  const timer = setTimeout(() => child.kill('SIGKILL'), 20_000)
  await exited
  clearTimeout(timer)
}

async function main(): Promise<number> {
  let db
  try {
    db = await postgresDatabase(PG_URL)
  } catch (err) {
    log(`PostgreSQL at ${PG_URL} unreachable (${err instanceof Error ? err.message : String(err)}): skipped`)
    return 0
  }
  try {
    const seed = await seedCaller(db.env, { numbers: envInt('BENCH_CALLER_NUMBERS', 2000), keystores: 10 })
    const service = await openService(loadConfig(db.env), { watchChanges: false })
    const approvals = (await createApiKey(service.db, { vendor: 'Bench Bank', scopes: ['approvals'], rate: 1_000_000 })).key
    await service.close()
    const rows: string[] = []
    const base: Record<string, number> = {}
    for (const workers of COUNTS) {
      const { port, child } = await serve(db.env, workers)
      try {
        const bodies = signCalls(seed)
        let i = 0
        const verify = await autocannon({
          url: `http://127.0.0.1:${port}`, connections: CONNECTIONS, duration: SECONDS,
          requests: [{ method: 'POST', path: '/numsys/call-signature-verification', headers: { 'content-type': 'application/json', 'x-api-key': seed.apiKey },
            setupRequest: (r) => ({ ...r, body: bodies[i++ % bodies.length]! }) }],
        })
        const run = randomBytes(4).toString('hex')
        let j = 0
        const create = await autocannon({
          url: `http://127.0.0.1:${port}`, connections: CONNECTIONS, duration: SECONDS,
          requests: [{ method: 'POST', path: '/numsys/approval-phone', headers: { 'content-type': 'application/json', 'x-api-key': approvals },
            setupRequest: (r) => ({ ...r, body: JSON.stringify(approvalBody(seed.numbers[j % seed.numbers.length]!.phone, `w${workers}-${run}-${j++}`)) }) }],
        })
        const rate = (r: typeof verify) => r['2xx'] / SECONDS
        base.verify ??= rate(verify)
        base.create ??= rate(create)
        rows.push(`| ${workers} | ${rate(verify).toFixed(0)} | ${(rate(verify) / base.verify).toFixed(2)} | ${verify.latency.p99} ms | ${rate(create).toFixed(0)} | ${(rate(create) / base.create).toFixed(2)} | ${create.latency.p99} ms | ${verify.non2xx + create.non2xx} |`)
      } finally {
        await stop(child)
      }
    }
    log(`PostgreSQL, ${CONNECTIONS} connections, ${SECONDS} s each, closed loop; the load generator on the same machine`)
    log('| workers | call verification req/s | x 1 worker | p99 | approval-phone req/s | x 1 worker | p99 | non-2xx |')
    log('|---|---|---|---|---|---|---|---|')
    for (const row of rows) log(row)
    return 0
  } finally {
    await db.cleanup()
  }
}

runMain(main)
