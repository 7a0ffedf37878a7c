/**
 * What the benchmarks share: the server child they measure (started as `kns serve` starts),
 * the endpoint and summary shapes, and the preflight request. Imported by the benchmark
 * scripts; imports none of them (no circle).
 */
import { fork, type ChildProcess } from 'node:child_process'
import { resolve } from 'node:path'
import { SERVER_NODE_FLAGS } from '../src/cli/node-flags.ts'

const CPU_PROF_DIR = process.env.BENCH_CPU_PROF ? resolve(process.env.BENCH_CPU_PROF) : undefined
const log = (line: string) => process.stderr.write(`${line}\n`)

/** A whole positive number from the environment (a benchmark's size or duration); the fallback when unset or not one. */
export function envInt(name: string, fallback: number): number {
  const value = Number(process.env[name] ?? fallback)
  return Number.isSafeInteger(value) && value > 0 ? value : fallback
}

/** Runs a benchmark's main and exits with its code; a throw is printed and exits 1. */
export function runMain(main: () => Promise<number>): void {
  main().then((code) => process.exit(code), (err: unknown) => {
    log(err instanceof Error ? err.stack ?? err.message : String(err))
    process.exit(1)
  })
}

export interface Target {
  port: number
  /** The SIP redirect interface's UDP port, when the server was started with SIP_LISTEN. */
  sipPort?: number
  /** The server child's process id (for its /proc entries). */
  pid: number
  /** The server process's CPU time so far, µs (user + system, all threads). */
  cpu(): Promise<number>
  /** V8 heap in use (bytes) and the longest event-loop delay since the last call (ms); one question at a time, like cpu(). */
  vitals(): Promise<{ heapUsed: number; loopDelayMaxMs: number }>
  stop(): Promise<void>
}

export async function startServer(label: string, mode: 'bare' | 'app', env: Record<string, string>): Promise<Target> {
  // Both started as `kns serve` starts (src/cli/node-flags.ts), so the ratio compares code, not V8 settings.
  const execArgv = [...SERVER_NODE_FLAGS, ...process.execArgv]
  if (CPU_PROF_DIR !== undefined) execArgv.push('--cpu-prof', `--cpu-prof-dir=${CPU_PROF_DIR}`, `--cpu-prof-name=${label}.cpuprofile`)
  // Only what the server needs: nothing from this shell's DATABASE_URL, KNS_SECRET, ...
  // The load comes from one address standing in for many clients: no per-address connection cap
  // nor per-client in-flight cap nor registration bound, unless the benchmark sets them
  // (admission control's other limits stay as configured).
  const childEnv: Record<string, string> = { MAX_CONNECTIONS_PER_IP: '1000000', MAX_IN_FLIGHT_PER_CLIENT: '100000', MAX_REGISTRATIONS_IN_PROGRESS: '100000', ...env, BENCH_MODE: mode }
  for (const name of ['PATH', 'HOME', 'TMPDIR', 'LANG', 'UV_THREADPOOL_SIZE']) if (process.env[name] !== undefined) childEnv[name] = process.env[name]
  const child: ChildProcess = fork(new URL('./server.ts', import.meta.url), [], { env: childEnv, execArgv, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] })
  const exited = new Promise<number | null>((resolveExit) => child.once('exit', (code) => resolveExit(code)))
  const { port, sipPort } = await new Promise<{ port: number; sipPort?: number }>((resolvePort, reject) => {
    child.once('message', (message) => resolvePort(message as { port: number; sipPort?: number }))
    child.once('error', reject)
    void exited.then((code) => reject(new Error(`${label} server exited with code ${code} before listening`)))
  })
  let crashed = true
  void exited.then((code) => { if (crashed) log(`!! ${label} server exited unexpectedly (code ${code})`) })
  return {
    port,
    ...(sipPort === undefined ? {} : { sipPort }),
    pid: child.pid!,
    cpu: () => new Promise<number>((resolveCpu) => {
      child.once('message', (message) => resolveCpu((message as { cpuUs: number }).cpuUs))
      child.send('cpu')
    }),
    vitals: () => new Promise((resolveVitals) => {
      child.once('message', (message) => resolveVitals(message as { heapUsed: number; loopDelayMaxMs: number }))
      child.send('vitals')
    }),
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

export interface Endpoint {
  name: string
  method: 'GET' | 'POST'
  headers: Record<string, string>
  /** The next request: called once per request, so bodies and paths vary. */
  next(): { path: string; body?: string }
  /** A 2xx body that means what the endpoint should mean (e.g. `success: true`). */
  ok(body: string): boolean
  /** Before the preflight and each slice (e.g. re-sign tokens that are getting old). */
  prepare?(): void
  /** Extra warm-up before the first measurement (e.g. fill a cache). */
  warm?(port: number): Promise<void>
}

export interface Summary {
  rps: number
  p99: number | null
  problems: string
  /** Server CPU time per request (per verification for crypto.verify), µs; null when not known. */
  cpuUs: number | null
}

/** What an endpoint is compared with, run in the slices between the endpoint's. */
export interface Reference<R> {
  name: string
  run(seconds: number): Promise<R>
  summarize(runs: R[]): Summary
}

/** One request through fetch, so a broken setup fails with its response rather than a count. */
export async function preflight(port: number, endpoint: Endpoint): Promise<void> {
  endpoint.prepare?.()
  const { path, body } = endpoint.next()
  const response = await fetch(`http://127.0.0.1:${port}${path}`, { method: endpoint.method, headers: endpoint.headers, body })
  const text = await response.text()
  if (!response.ok || !endpoint.ok(text)) throw new Error(`${endpoint.name}: preflight answered ${response.status} ${text.slice(0, 500)}`)
}
