/**
 * Every benchmark script runs, in a small and quick form, so none can rot unnoticed (issue
 * "Production under pressure", item 8: `bench:stats` had not run for weeks). Their figures are
 * not judged here (a shared CI machine is no place for it): each must exit 0 and print its
 * table. Once per CI run: skipped on the PostgreSQL pass (the scripts choose their engines).
 */
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { test } from 'node:test'
import { ROOT } from '../support/process.ts'

const SMALL: Record<string, Record<string, string>> = {
  'bench/api.bench.ts': { BENCH_ENGINES: 'sqlite', BENCH_DURATION_S: '1', BENCH_SLICE_S: '1', BENCH_WARMUP_S: '1', BENCH_HALF_RATE_S: '1', BENCH_CALLER_NUMBERS: '200', BENCH_CONNECTIONS: '8' },
  'bench/events.bench.ts': { BENCH_ENGINES: 'sqlite', BENCH_EVENTS_RATE: '50', BENCH_EVENTS_SECONDS: '1', BENCH_WAITERS: '50' },
  'bench/stats.bench.ts': { BENCH_ENGINES: 'sqlite', BENCH_SESSIONS: '5000', BENCH_DAYS: '10', BENCH_QUERY_RUNS: '2', BENCH_RAW_RUNS: '1' },
  'bench/soak.bench.ts': { BENCH_ENGINES: 'sqlite', BENCH_SOAK_MINUTES: '1', BENCH_SOAK_PEAK_S: '2', BENCH_SOAK_WARMUP_S: '1', BENCH_SOAK_LOAD: '0.2', BENCH_CONNECTIONS: '8' },
  'bench/phone-login.bench.ts': { BENCH_LOGINS: '3' },
  'bench/workers.bench.ts': { BENCH_SECONDS: '1', BENCH_CALLER_NUMBERS: '100', BENCH_CONNECTIONS: '4' },
  'bench/sip.bench.ts': { BENCH_SIP_SECONDS: '1', BENCH_SIP_ROUNDS: '1', BENCH_HALF_RATE_S: '1', BENCH_CALLER_NUMBERS: '100', BENCH_CONNECTIONS: '4' },
  'bench/overload.bench.ts': { BENCH_OVERLOAD_SECONDS: '1', BENCH_OVERLOAD_CONNECTIONS: '50', BENCH_CALLER_NUMBERS: '200', BENCH_OVERLOAD_FACTORS: '2', BENCH_CAPACITY_CONNECTIONS: '8' },
  'bench/tracing.bench.ts': { BENCH_ENGINES: 'sqlite', BENCH_DURATION_S: '1', BENCH_SLICE_S: '1', BENCH_WARMUP_S: '1', BENCH_CALLER_NUMBERS: '100', BENCH_CONNECTIONS: '4', BENCH_BSP_DELAY_MS: '500' },
}

function run(script: string, env: Record<string, string>): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve) => {
    const childEnv: Record<string, string> = { ...env }
    for (const name of ['PATH', 'HOME', 'TMPDIR', 'LANG']) if (process.env[name] !== undefined) childEnv[name] = process.env[name]!
    const child = spawn(process.execPath, [script], { cwd: ROOT, env: childEnv, stdio: ['ignore', 'pipe', 'pipe'] })
    let output = ''
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => { output += chunk })
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => { output += chunk })
    const timer = setTimeout(() => child.kill('SIGKILL'), 240_000)
    child.on('exit', (code) => {
      clearTimeout(timer)
      resolve({ code, output })
    })
  })
}

for (const [script, env] of Object.entries(SMALL)) {
  test(`${script} runs (small form; figures not judged)`, { timeout: 250_000, skip: process.env.DATABASE_URL ? 'run once per CI, on the SQLite pass' : false }, async () => {
    const { code, output } = await run(script, env)
    assert.equal(code, 0, output.slice(-3000))
    assert.match(output, /\|---/, `a table in ${output.slice(-1000)}`)
  })
}
