/**
 * `npm run bench:stats`: the public statistics at scale, on SQLite and PostgreSQL, in one run.
 *
 * 1. `kns seed --demo --out` writes a demo network of BENCH_SESSIONS sessions as CSV files.
 * 2. Per engine, on a fresh database: `kns stats import` of those files (ingestion throughput,
 *    wall time of the whole command), then a one-year gateway-stats query answered from the
 *    rollups (p50 of BENCH_QUERY_RUNS) against the same answer computed from the raw sessions
 *    (p50 of BENCH_RAW_RUNS), after checking that both answers are identical.
 *
 * Environment:
 *   BENCH_SESSIONS       sessions to generate (default 10000000)
 *   BENCH_DAYS           days they span, ending 2026-01-01 (default 400: a full year to query)
 *   BENCH_QUERY_RUNS     rollup query repetitions (default 30)
 *   BENCH_RAW_RUNS       raw computation repetitions (default 3)
 *   BENCH_ENGINES        engines to run, comma-separated (default sqlite,postgres)
 *   BENCH_DATABASE_URL   PostgreSQL server (default postgres://postgres@127.0.0.1:5432/test);
 *                        a fresh schema is created and dropped; unreachable = skipped
 *
 * The query is timed in process (the function the endpoint calls, without the answer cache),
 * so the figures are the database work, not HTTP. Exit code 1 when a step fails or the two
 * answers differ.
 */
import { spawn } from 'node:child_process'
import { deepStrictEqual } from 'node:assert'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { loadConfig } from '../src/config.ts'
import { openService } from '../src/service.ts'
import { rangeStats } from '../src/stats/public/queries.ts'
import { DAY, normalizePeriod } from '../src/stats/time.ts'
import { postgresDatabase, sqliteDatabase, type BenchDatabase } from './seed.ts'
import { rawRangeStats } from './stats-raw.ts'

function envInt(name: string, fallback: number): number {
  const raw = process.env[name]
  if (raw === undefined || raw === '') return fallback
  if (!/^\d+$/.test(raw)) throw new Error(`${name} must be a whole number, got "${raw}"`)
  return Number(raw)
}

const SESSIONS = envInt('BENCH_SESSIONS', 10_000_000)
const DAYS = envInt('BENCH_DAYS', 400)
const QUERY_RUNS = envInt('BENCH_QUERY_RUNS', 30)
const RAW_RUNS = envInt('BENCH_RAW_RUNS', 3)
const ENGINES = (process.env.BENCH_ENGINES || 'sqlite,postgres').split(',').map((e) => e.trim())
const PG_URL = process.env.BENCH_DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/test'
const UNTIL = '2026-01-01'
const KNS = fileURLToPath(new URL('../bin/kns.js', import.meta.url))
const log = (line: string) => process.stderr.write(`${line}\n`)

/** Runs `kns <args>` with only the database's environment; resolves to its stdout JSON and wall seconds. */
function kns(args: string[], env: Record<string, string>): Promise<{ json: Record<string, unknown>; seconds: number }> {
  const childEnv: Record<string, string> = { ...env }
  for (const name of ['PATH', 'HOME', 'TMPDIR', 'LANG']) if (process.env[name] !== undefined) childEnv[name] = process.env[name]
  const started = performance.now()
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [KNS, ...args, '--json'], { env: childEnv, stdio: ['ignore', 'pipe', 'inherit'] })
    let stdout = ''
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => { stdout += chunk })
    child.on('error', reject)
    child.on('exit', (code) => {
      if (code !== 0) reject(new Error(`kns ${args.join(' ')} exited with ${code}`))
      else resolve({ json: JSON.parse(stdout) as Record<string, unknown>, seconds: (performance.now() - started) / 1000 })
    })
  })
}

function p50(samples: number[]): number {
  const sorted = [...samples].sort((a, b) => a - b)
  return sorted[Math.floor((sorted.length - 1) / 2)]!
}

async function time<T>(runs: number, fn: () => Promise<T>): Promise<{ p50: number; result: T }> {
  let result!: T
  const samples: number[] = []
  for (let i = 0; i < runs; i++) {
    const started = performance.now()
    result = await fn()
    samples.push(performance.now() - started)
  }
  return { p50: p50(samples), result }
}

interface Row { engine: string; importS: number; perSecond: number; rollupMs: number; rawMs: number; same: boolean }

async function benchEngine(engine: string, files: string): Promise<Row> {
  let db: BenchDatabase
  if (engine === 'sqlite') db = sqliteDatabase()
  else db = await postgresDatabase(PG_URL)
  try {
    await kns(['migrate'], db.env)
    log(`[${engine}] importing ${SESSIONS} sessions ...`)
    const imported = await kns(['stats', 'import', '--gateways', join(files, 'gateways.csv'), '--wifi-nodes', join(files, 'wifi-nodes.csv'),
      '--usage', join(files, 'usage.csv')], db.env)
    const usage = imported.json.usage as { read: number; inserted: number }
    if (usage.inserted !== SESSIONS) throw new Error(`imported ${usage.inserted} of ${SESSIONS} sessions`)
    const service = await openService(loadConfig(db.env))
    try {
      const until = Date.parse(`${UNTIL}T00:00:00Z`)
      const period = normalizePeriod(new Date(until - 365 * DAY).toISOString(), new Date(until).toISOString(), Date.now())
      await rangeStats(service.db, 'gateway', period) // warm
      log(`[${engine}] one-year gateway stats from the rollups (${QUERY_RUNS} runs) ...`)
      const rollup = await time(QUERY_RUNS, () => rangeStats(service.db, 'gateway', period))
      log(`[${engine}] the same from the raw sessions (${RAW_RUNS} runs) ...`)
      const raw = await time(RAW_RUNS, () => rawRangeStats(service.db, 'gateway', period))
      let same = true
      try {
        deepStrictEqual(rollup.result, raw.result)
      } catch (err) {
        same = false
        log(`[${engine}] the answers differ: ${(err as Error).message.slice(0, 2000)}`)
      }
      return { engine, importS: imported.seconds, perSecond: SESSIONS / imported.seconds, rollupMs: rollup.p50, rawMs: raw.p50, same }
    } finally {
      await service.close()
    }
  } finally {
    await db.cleanup()
  }
}

async function main(): Promise<number> {
  const files = mkdtempSync(join(tmpdir(), 'kns-stats-bench-'))
  try {
    log(`generating ${SESSIONS} sessions over ${DAYS} days ...`)
    const seeded = await kns(['seed', '--demo', '--sessions', String(SESSIONS), '--days', String(DAYS), '--seed', '42', '--until', UNTIL, '--out', files], {
      DATA_DIR: files, LOG_LEVEL: 'silent',
    })
    log(`generated in ${seeded.seconds.toFixed(1)} s`)
    const rows: Row[] = []
    for (const engine of ENGINES) {
      try {
        rows.push(await benchEngine(engine, files))
      } catch (err) {
        if (engine === 'postgres' && /ECONNREFUSED|connect/.test(String(err))) log(`[postgres] skipped: ${(err as Error).message}`)
        else throw err
      }
    }
    const lines = [
      `Sessions: ${SESSIONS.toLocaleString('en')} over ${DAYS} days (demo seed 42); query: one-year gateway stats (weekly buckets).`,
      '',
      '| engine | import (`kns stats import`) | sessions/s | one-year query p50, rollups | same answer from raw sessions, p50 | speed-up | answers equal |',
      '|---|---|---|---|---|---|---|',
      ...rows.map((r) => `| ${r.engine} | ${r.importS.toFixed(1)} s | ${Math.round(r.perSecond).toLocaleString('en')} | ${r.rollupMs.toFixed(1)} ms | ` +
        `${r.rawMs.toFixed(0)} ms | ${Math.round(r.rawMs / r.rollupMs)}x | ${r.same ? 'yes' : 'NO'} |`),
    ]
    process.stdout.write(`${lines.join('\n')}\n`)
    return rows.every((r) => r.same) ? 0 : 1
  } finally {
    rmSync(files, { recursive: true, force: true })
  }
}

process.exitCode = await main()
