/**
 * Spawning the real `kns` binary (bin/kns.js) for the CLI and process tests: one-shot
 * commands with captured output, and long-running servers on a free port.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..')
export const KNS = join(ROOT, 'bin', 'kns.js')

/** The test runner's own node when it is Node 24+, otherwise the project's pinned node. */
export const NODE = Number(process.versions.node.split('.')[0]) >= 24 ? process.execPath : join(ROOT, 'node_modules', '.bin', 'node')

/**
 * The environment of a child: the fresh database env and nothing of the developer's kns
 * configuration (DATABASE_URL, PORT, KNS_SECRET... of the parent would break isolation).
 */
export function childEnv(env: Record<string, string>): Record<string, string> {
  const base: Record<string, string> = {}
  for (const name of ['PATH', 'HOME', 'TMPDIR', 'LANG', 'TZ']) {
    const value = process.env[name]
    if (value !== undefined) base[name] = value
  }
  // V8's code cache for the (type-stripped) modules: each child starts much faster.
  return { ...base, NODE_NO_WARNINGS: '1', NODE_COMPILE_CACHE: join(tmpdir(), 'kns-test-compile-cache'), ...env }
}

export interface RunResult {
  code: number | null
  signal: NodeJS.Signals | null
  stdout: string
  stderr: string
}

const live = new Set<ChildProcess>()
/** Children started in a process group of their own (`npm start` and its node): signalled as a group. */
const groups = new WeakSet<ChildProcess>()

function signal(child: ChildProcess, name: NodeJS.Signals): void {
  if (!groups.has(child) || child.pid === undefined) {
    child.kill(name)
    return
  }
  try {
    process.kill(-child.pid, name)
  } catch {
    // the group is gone already
  }
}

/**
 * Runs `kns <args>` to completion. The working directory is the env's DATA_DIR (a temp
 * directory), so a developer's ./.env never leaks into the test.
 */
export function runKns(args: string[], env: Record<string, string>, options: { timeoutMs?: number } = {}): Promise<RunResult> {
  const child = spawn(NODE, [KNS, ...args], { cwd: env.DATA_DIR ?? ROOT, env: childEnv(env), stdio: ['ignore', 'pipe', 'pipe'] })
  live.add(child)
  const forget = () => live.delete(child)
  child.on('error', forget)
  child.on('close', forget)
  return collectOutput(child, `kns ${args.join(' ')}`, options.timeoutMs ?? 30_000)
}

/**
 * A spawned command's exit and its whole output (stdout and stderr piped). Past `timeoutMs` it
 * is killed and the promise rejects, naming `what` and the output so far.
 */
export function collectOutput(child: ChildProcess, what: string, timeoutMs: number): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    let stdout = ''
    let stderr = ''
    child.stdout!.setEncoding('utf8').on('data', (chunk: string) => { stdout += chunk })
    child.stderr!.setEncoding('utf8').on('data', (chunk: string) => { stderr += chunk })
    const timer = setTimeout(() => {
      child.kill('SIGKILL')
      reject(new Error(`${what} timed out\nstdout: ${stdout}\nstderr: ${stderr}`))
    }, timeoutMs)
    child.on('error', (err) => {
      clearTimeout(timer)
      reject(err)
    })
    child.on('close', (code, signal) => {
      clearTimeout(timer)
      resolve({ code, signal, stdout, stderr })
    })
  })
}

/** Parses stdout that must be exactly one JSON object on one line. */
export function oneJson(result: RunResult): Record<string, unknown> {
  const lines = result.stdout.split('\n').filter((line) => line !== '')
  if (lines.length !== 1) throw new Error(`expected one line of JSON on stdout, got ${lines.length}: ${result.stdout}\nstderr: ${result.stderr}`)
  const parsed = JSON.parse(lines[0]!) as unknown
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) throw new Error(`stdout is not a JSON object: ${lines[0]}`)
  return parsed as Record<string, unknown>
}

/** A port that was free a moment ago (listen on 0, read it, close). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer()
    server.unref()
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const address = server.address()
      const port = typeof address === 'object' && address !== null ? address.port : 0
      server.close(() => resolve(port))
    })
  })
}

export interface Exit { code: number | null; signal: NodeJS.Signals | null }

export interface RunningServer {
  child: ChildProcess
  port: number
  url: string
  stdout(): string
  stderr(): string
  /** Resolves when the process has exited. */
  exited: Promise<Exit>
  /** SIGTERM, then the exit (SIGKILL after `timeoutMs`). */
  stop(timeoutMs?: number): Promise<Exit>
}

/**
 * Whether a process with this pid exists (EPERM: it does, another user's). For the orphan
 * sweeps: what a test made is named after its process's pid, and outlives it only if it crashed.
 */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM'
  }
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

/** What starts the server instead of `node bin/kns.js serve`: e.g. `npm start`, or another layout's bin/kns.js. */
export interface ServerCommand { file: string; args: string[]; cwd?: string }

/**
 * Starts `kns serve` (or `options.command`, in a process group of its own so that a stop
 * reaches the server behind a launcher such as npm) on a free port and waits until GET
 * /healthz answers 200.
 */
export async function startServer(env: Record<string, string>, options: { timeoutMs?: number; args?: string[]; command?: ServerCommand } = {}): Promise<RunningServer> {
  const port = await freePort()
  const { file, args, cwd } = options.command ?? { file: NODE, args: [KNS, 'serve', ...(options.args ?? [])] }
  const child = spawn(file, args, {
    cwd: cwd ?? env.DATA_DIR ?? ROOT,
    env: childEnv({ HOST: '127.0.0.1', ...env, PORT: String(port) }),
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: options.command !== undefined,
  })
  live.add(child)
  if (options.command !== undefined) groups.add(child)
  let stdout = ''
  let stderr = ''
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => { stdout += chunk })
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => { stderr += chunk })
  const exited = new Promise<Exit>((resolve) => {
    child.on('exit', (code, signal) => {
      live.delete(child)
      resolve({ code, signal })
    })
  })
  const url = `http://127.0.0.1:${port}`
  const server: RunningServer = {
    child, port, url, exited,
    stdout: () => stdout,
    stderr: () => stderr,
    async stop(timeoutMs = 15_000) {
      if (child.exitCode === null && child.signalCode === null) signal(child, 'SIGTERM')
      const timer = setTimeout(() => signal(child, 'SIGKILL'), timeoutMs)
      try {
        return await exited
      } finally {
        clearTimeout(timer)
        // A launcher may exit before what it launched: nothing of the group outlives the stop.
        if (groups.has(child)) signal(child, 'SIGKILL')
      }
    },
  }
  let done = false
  void exited.then(() => { done = true })
  const deadline = Date.now() + (options.timeoutMs ?? 30_000)
  while (Date.now() < deadline) {
    if (done) {
      if (groups.has(child)) signal(child, 'SIGKILL')
      throw new Error(`${file} ${args.join(' ')} exited before it was ready (code ${child.exitCode})\nstdout: ${stdout}\nstderr: ${stderr}`)
    }
    try {
      const res = await fetch(`${url}/healthz`, { signal: AbortSignal.timeout(2000) })
      if (res.status === 200) return server
    } catch {
      // not listening yet
    }
    await sleep(50)
  }
  signal(child, 'SIGKILL')
  throw new Error(`${file} ${args.join(' ')} did not answer /healthz in time\nstdout: ${stdout}\nstderr: ${stderr}`)
}

/** For `after` hooks: kills every child this module started that is still running. */
export async function killAll(): Promise<void> {
  const waits: Promise<unknown>[] = []
  for (const child of live) {
    if (child.exitCode !== null || child.signalCode !== null) {
      if (groups.has(child)) signal(child, 'SIGKILL')
      continue
    }
    waits.push(new Promise((resolve) => { child.once('exit', resolve); setTimeout(resolve, 2000) }))
    signal(child, 'SIGKILL')
  }
  live.clear()
  await Promise.all(waits)
}

/** A valid approval-phone body; for a number without a token the answer is 404 (once the key is accepted). */
export function approvalPhoneBody(phoneNumber: string, referenceNumber = `ref-${Math.random().toString(16).slice(2)}`) {
  return {
    title: 'SIM replacement',
    message: 'Approve the replacement of your SIM card.',
    successRedirectUrl: 'https://vendor.example/approved',
    cancelRedirectUrl: 'https://vendor.example/cancelled',
    referenceNumber,
    method: 'sign',
    phoneNumber,
  }
}

export async function postJson(url: string, body: unknown, headers: Record<string, string> = {}): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(url, {
    method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body), signal: AbortSignal.timeout(10_000),
  })
  return { status: res.status, body: (await res.json()) as Record<string, unknown> }
}

export interface RevocationTiming {
  /** Statuses seen on each server before the revoking command started (all should be 404). */
  before: number[][]
  /** Milliseconds from the revoking command's exit to the first 401, per server (negative: before it exited). */
  lag: number[]
  revoke: RunResult
}

/**
 * Polls POST /numsys/approval-phone with `key` on every server (a number without a token:
 * 404 while the key works), runs `revoke`, and measures when each server first answers 401.
 */
export async function measureRevocation(urls: string[], key: string, revoke: () => Promise<RunResult>, phoneNumber: string): Promise<RevocationTiming> {
  const before: number[][] = urls.map(() => [])
  const firstUnauthorized: (number | undefined)[] = urls.map(() => undefined)
  let started = false
  let stop = false
  const poll = async (i: number) => {
    while (!stop && firstUnauthorized[i] === undefined) {
      const { status } = await postJson(`${urls[i]}/numsys/approval-phone`, approvalPhoneBody(phoneNumber), { 'x-api-key': key })
      if (status === 401) firstUnauthorized[i] = performance.now()
      else if (!started) before[i]!.push(status)
      await sleep(10)
    }
  }
  const pollers = urls.map((_, i) => poll(i))
  const ready = performance.now() + 10_000
  while (before.some((statuses) => statuses.length < 3)) {
    if (performance.now() > ready || firstUnauthorized.some((t) => t !== undefined)) {
      stop = true
      await Promise.all(pollers)
      throw new Error(`the key did not work before the revocation: ${JSON.stringify(before)}`)
    }
    await sleep(10)
  }
  started = true
  const result = await revoke()
  const exitedAt = performance.now()
  const deadline = exitedAt + 5000
  while (firstUnauthorized.some((t) => t === undefined) && performance.now() < deadline) await sleep(10)
  stop = true
  await Promise.all(pollers)
  return { before, lag: firstUnauthorized.map((t) => (t === undefined ? Infinity : t - exitedAt)), revoke: result }
}
