/**
 * An open-loop load generator at a steady rate, for latency at a given load.
 *
 * autocannon's `overallRate` is not one: each connection sends its per-second quota
 * back-to-back as soon as its one-second window opens (all windows open together), so at
 * "half the peak rate" the server runs flat out for half of every second and idles the
 * other half; and its coordinated-omission correction uses an expected interval of
 * ceil(1 / rate) = 1 ms, so a response taking L ms is recorded L times (L, L-1, ... 1 ms),
 * which weights the tail by its own length.
 *
 * Here request i is sent at start + i / rate, spread evenly, whether or not earlier ones
 * have been answered (waiting for a free connection counts in its latency). Latency runs
 * from when it was sent: on a shared machine this process is itself descheduled at times,
 * and timing from the due time would charge that to the server (a late tick sends the
 * overdue requests at once, so they still load it).
 *
 * The generator shares the machine with the server, so it is kept light: keep-alive
 * connections opened before the clock starts (connection set-up is not what is measured),
 * requests written as prebuilt bytes, responses parsed only for their status, length and
 * body. node:http's client cost several times more CPU per request, and its latency noise
 * (the "bare, paced alike" reference) was most of the 10 ms budget.
 *
 * It runs in a process of its own (bench/paced-child.ts): in the benchmark's main process,
 * whose heap holds the seeded data and autocannon's results, young-generation collections
 * paused it for 3-16 ms at a time, and every response arriving meanwhile was timed as slow.
 * The requests are built here and sent over IPC before the clock starts.
 */
import { fork, type ChildProcess } from 'node:child_process'
import { connect, type Socket } from 'node:net'
import type { Summary } from './bench-server.ts'

export interface PacedOptions {
  port: number
  /** Requests per second. */
  rate: number
  seconds: number
  /** Keep-alive connections, all opened before the clock starts; requests beyond them queue (and their wait counts). */
  sockets: number
  method: string
  headers: Record<string, string>
  next(): { path: string; body?: string }
  ok(body: string): boolean
}

/** What the generating process needs: the requests, prebuilt. */
export interface PacedRun {
  port: number
  rate: number
  seconds: number
  sockets: number
  requests: Buffer[]
}

/** What it sends back: 2xx bodies as distinct texts with their counts, for the caller's `ok`. */
export interface PacedRunResult {
  sent: number
  latencies: number[]
  statuses: Record<string, number>
  bodies: [body: string, count: number][]
  errors: number
}

export interface PacedResult {
  sent: number
  /** Milliseconds from sending to the end of the response, for 2xx responses. */
  latencies: number[]
  statuses: Record<string, number>
  badBodies: number
  errors: number
  seconds: number
  /** Server CPU time meanwhile, µs, when the caller measured it. */
  cpuUs?: number
}

interface Outstanding { sentAt: number }

/** One keep-alive connection answering its requests in order (no pipelining: one at a time). Also the soak benchmark's. */
export class Connection {
  readonly socket: Socket
  #buffer: Buffer = Buffer.alloc(0)
  #current: Outstanding | undefined
  constructor(socket: Socket, onResponse: (c: Connection, sentAt: number, status: number, body: string) => void, onError: (c: Connection) => void) {
    this.socket = socket
    socket.setNoDelay(true)
    socket.on('data', (chunk: Buffer) => {
      this.#buffer = this.#buffer.length === 0 ? chunk : Buffer.concat([this.#buffer, chunk])
      for (;;) {
        const end = this.#buffer.indexOf('\r\n\r\n')
        if (end < 0 || this.#current === undefined) return
        const head = this.#buffer.toString('latin1', 0, end)
        const length = /\r\ncontent-length: *(\d+)/i.exec(head)
        if (length === null) { onError(this); return }
        const total = end + 4 + Number(length[1])
        if (this.#buffer.length < total) return
        const body = this.#buffer.toString('utf8', end + 4, total)
        this.#buffer = this.#buffer.subarray(total)
        const sentAt = this.#current.sentAt
        this.#current = undefined
        onResponse(this, sentAt, Number(head.slice(9, 12)), body)
      }
    })
    socket.on('error', () => onError(this))
  }

  get busy(): boolean { return this.#current !== undefined }

  send(request: Buffer, sentAt: number): void {
    this.#current = { sentAt }
    this.socket.write(request)
  }

  /** Fails the request in flight, if any (the connection is gone). */
  abandon(): boolean {
    const had = this.#current !== undefined
    this.#current = undefined
    return had
  }
}

export function open(port: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port })
    socket.once('connect', () => { socket.off('error', reject); resolve(socket) })
    socket.once('error', reject)
  })
}

/** Each request of the run, as the bytes to write: built before the clock starts, like autocannon's. */
function buildRequests(opts: PacedOptions): Buffer[] {
  const total = Math.round(opts.rate * opts.seconds)
  const fixedHeaders = Object.entries(opts.headers).map(([name, value]) => `${name}: ${value}\r\n`).join('')
  return Array.from({ length: total }, () => {
    const { path, body } = opts.next()
    const payload = body === undefined ? Buffer.alloc(0) : Buffer.from(body)
    const head = `${opts.method} ${path} HTTP/1.1\r\nhost: 127.0.0.1\r\n${fixedHeaders}content-length: ${payload.length}\r\n\r\n`
    return Buffer.concat([Buffer.from(head, 'latin1'), payload])
  })
}

/** The open-loop run itself (in the generating process). */
export async function runPaced(run: PacedRun): Promise<PacedRunResult> {
  const result: PacedRunResult = { sent: 0, latencies: [], statuses: {}, bodies: [], errors: 0 }
  const { requests } = run
  const total = requests.length
  const interval = 1000 / run.rate
  const bodies = new Map<string, number>()

  let done = 0
  let finish!: () => void
  const finished = new Promise<void>((resolve) => { finish = resolve })
  const settle = () => { if (++done === total) finish() }
  const waiting: { request: Buffer; sentAt: number }[] = []
  const idle: Connection[] = []

  const release = (c: Connection) => {
    const next = waiting.shift()
    if (next !== undefined) c.send(next.request, next.sentAt)
    else idle.push(c)
  }
  const onResponse = (c: Connection, sentAt: number, status: number, body: string) => {
    const code = String(status)
    result.statuses[code] = (result.statuses[code] ?? 0) + 1
    if (code.startsWith('2')) {
      result.latencies.push(performance.now() - sentAt)
      bodies.set(body, (bodies.get(body) ?? 0) + 1)
    }
    settle()
    release(c)
  }
  const onError = (c: Connection) => {
    c.socket.destroy()
    const i = idle.indexOf(c)
    if (i >= 0) idle.splice(i, 1)
    if (c.abandon()) { result.errors++; settle() }
  }
  const connections = await Promise.all(Array.from({ length: Math.max(1, run.sockets) }, () => open(run.port)))
  for (const socket of connections) idle.push(new Connection(socket, onResponse, onError))

  const fire = (request: Buffer, sentAt: number) => {
    // Most recently used first: the same few connections stay warm at low load.
    const c = idle.pop()
    if (c !== undefined) c.send(request, sentAt)
    else waiting.push({ request, sentAt })
  }

  const start = performance.now()
  const tick = () => {
    const now = performance.now()
    for (; result.sent < total && start + result.sent * interval <= now; result.sent++) fire(requests[result.sent]!, now)
    if (result.sent < total) setTimeout(tick, Math.max(0, Math.min(1, start + result.sent * interval - performance.now())))
  }
  tick()
  if (total > 0) await finished
  for (const socket of connections) socket.destroy()
  result.bodies = [...bodies]
  return result
}

let child: ChildProcess | undefined

/** The generating process, started once and kept (its start-up is not part of any run). */
function generator(): ChildProcess {
  if (child !== undefined && child.connected) return child
  // Never the parent's flags (e.g. --cpu-prof): this process only sends and times.
  child = fork(new URL('./paced-child.ts', import.meta.url), [], { execArgv: [], serialization: 'advanced', stdio: ['ignore', 'inherit', 'inherit', 'ipc'] })
  child.unref()
  child.channel?.unref()
  return child
}

/** Runs `opts` from the generating process; `ok` is applied here to each distinct 2xx body. */
export async function paced(opts: PacedOptions): Promise<PacedResult> {
  const run: PacedRun = { port: opts.port, rate: opts.rate, seconds: opts.seconds, sockets: opts.sockets, requests: buildRequests(opts) }
  const worker = generator()
  // Held open only while a run is under way: between runs the child never keeps the benchmark alive.
  worker.channel?.ref()
  const answer = await new Promise<PacedRunResult>((resolve, reject) => {
    const onExit = (code: number | null) => reject(new Error(`the paced load generator exited (${code})`))
    worker.once('exit', onExit)
    worker.once('message', (message) => { worker.off('exit', onExit); resolve(message as PacedRunResult) })
    worker.send(run)
  }).finally(() => worker.channel?.unref())
  const badBodies = answer.bodies.reduce((n, [body, count]) => n + (opts.ok(body) ? 0 : count), 0)
  return { sent: answer.sent, latencies: answer.latencies, statuses: answer.statuses, badBodies, errors: answer.errors, seconds: opts.seconds }
}

/** Stops the generating process (at the end of the benchmark). */
export function stopPaced(): void {
  child?.kill()
  child = undefined
}

/** The p-th percentile (0-100) of `values`, in their unit; null when there are none. */
export function percentile(values: number[], p: number): number | null {
  if (values.length === 0) return null
  const sorted = Float64Array.from(values).sort()
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!
}

/** Achieved req/s, p99 (0.1 ms) and anything that was not a clean 2xx, as in the table. */
export function summarizePaced(runs: PacedResult[]): Summary {
  const latencies = runs.flatMap((r) => r.latencies)
  const statuses = new Map<string, number>()
  for (const r of runs) for (const [code, n] of Object.entries(r.statuses)) statuses.set(code, (statuses.get(code) ?? 0) + n)
  const problems: string[] = []
  const failed = [...statuses].filter(([code]) => !code.startsWith('2'))
  if (failed.length > 0) problems.push(failed.map(([code, n]) => `${code}x${n}`).join(' '))
  const badBodies = runs.reduce((n, r) => n + r.badBodies, 0)
  if (badBodies > 0) problems.push(`${badBodies} unexpected 2xx bodies`)
  const errors = runs.reduce((n, r) => n + r.errors, 0)
  if (errors > 0) problems.push(`${errors} socket errors or timeouts`)
  const p99 = percentile(latencies, 99)
  const seconds = runs.reduce((n, r) => n + r.seconds, 0)
  const cpuUs = runs.every((r) => r.cpuUs !== undefined) ? runs.reduce((n, r) => n + r.cpuUs!, 0) / latencies.length : null
  return { rps: latencies.length / seconds, p99: p99 === null ? null : Math.round(p99 * 10) / 10, problems: problems.join(', '), cpuUs }
}
