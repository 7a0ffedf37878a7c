/**
 * The soak benchmark's load process, forked by bench/soak.bench.ts: the mixed workload
 * (bench/soak-mix.ts) over keep-alive connections (bench/caller-paced.ts's Connection), in
 * one of two modes:
 *
 *   closed  N connections, each sending its next request as soon as its answer arrives (the peak)
 *   paced   open loop at a steady rate, request i due at start + i / rate whether or not
 *           earlier ones were answered; a request waiting for a free connection has its wait
 *           counted in its latency. Reports every window (a minute) as it closes.
 *
 * Unlike bench/caller-paced.ts, requests are made as they fall due rather than beforehand
 * (10 minutes of them would be gigabytes) and PASSporTs are re-signed as they age; both
 * cost a few µs per request here. Latencies go into fixed histograms, so a window's figures
 * cost no sorting and the process allocates little (its collections would be timed as
 * server latency). A window holds the answers that arrived in it.
 */
import type { Endpoint } from './bench-server.ts'
import { Connection, open } from './caller-paced.ts'
import { mixCycle, soakEndpoints, type SoakSeed } from './soak-mix.ts'

export type DriverCommand =
  | { type: 'init'; port: number; seed: SoakSeed }
  | { type: 'closed'; connections: number; seconds: number }
  | { type: 'paced'; rate: number; windows: number; windowS: number; sockets: number }

export type DriverReport =
  | { type: 'ready' }
  | { type: 'window'; index: number; stats: WindowStats }
  | { type: 'done' }

/** One endpoint's answers in a window. */
export interface KindStats {
  answered: number
  /** Non-2xx answers by status code. */
  statuses: Record<string, number>
  /** Of the 503s, those the admission control shed (code OVERLOADED): the machine too busy. */
  shed: number
  /** 2xx answers whose body was not what the endpoint should answer. */
  badBodies: number
  socketErrors: number
  /** Unanswered after TIMEOUT_MS (the connection is then replaced). */
  timeouts: number
  /** Latency of every answer (see bucketOf). */
  histogram: Uint32Array
}

export interface WindowStats {
  seconds: number
  sent: number
  kinds: KindStats[]
  /** This process's CPU time in the window, µs. */
  driverCpuUs: number
  /** The latest any request was sent after its due time (paced: this process descheduled or busy). */
  maxLagMs: number
  /** Most requests at once sent or due and not yet answered: the server's backlog (in steady state, rate × latency). */
  maxOutstanding: number
}

const TIMEOUT_MS = 10_000

// Latency histogram: bucket i holds values up to 0.01 ms × 1.02^i, so percentiles are read
// to within 2 %, from 10 µs to ~76 s (the last bucket takes anything longer).
const BUCKETS = 800
const GROWTH = Math.log(1.02)
export const bucketOf = (ms: number) => (ms <= 0.01 ? 0 : Math.min(BUCKETS - 1, Math.ceil(Math.log(ms / 0.01) / GROWTH)))
const bucketMs = (i: number) => 0.01 * Math.exp(i * GROWTH)

/** The p-th percentile (0-100) of the merged histograms, in ms (a bucket's upper bound); null when empty. */
export function histogramPercentile(histograms: Uint32Array[], p: number): number | null {
  const merged = new Float64Array(BUCKETS)
  for (const h of histograms) for (let i = 0; i < BUCKETS; i++) merged[i]! += h[i]!
  const total = merged.reduce((a, b) => a + b, 0)
  if (total === 0) return null
  const rank = Math.max(1, Math.ceil((p / 100) * total))
  let seen = 0
  for (let i = 0; i < BUCKETS; i++) if ((seen += merged[i]!) >= rank) return bucketMs(i)
  return bucketMs(BUCKETS - 1)
}

const emptyKind = (): KindStats => ({ answered: 0, statuses: {}, shed: 0, badBodies: 0, socketErrors: 0, timeouts: 0, histogram: new Uint32Array(BUCKETS) })

interface Pending { kind: number; request: Buffer; sentAt: number }

/** First in, first out, with an O(1) shift: Array#shift copies the rest, quadratic once a backlog builds. */
class Queue<T> {
  #items: (T | undefined)[] = []
  #head = 0
  get length(): number { return this.#items.length - this.#head }
  push(item: T): void { this.#items.push(item) }
  peek(): T | undefined { return this.#items[this.#head] }
  shift(): T | undefined {
    if (this.#head === this.#items.length) return undefined
    const item = this.#items[this.#head]
    this.#items[this.#head++] = undefined
    if (this.#head >= 1024 && this.#head * 2 >= this.#items.length) { this.#items = this.#items.slice(this.#head); this.#head = 0 }
    return item
  }
}

/** The connections and what is in flight on them; every request ends in exactly one `settle`. */
class Pool {
  readonly #port: number
  readonly #all = new Set<Connection>()
  readonly #idle: Connection[] = []
  readonly #waiting = new Queue<Pending>()
  readonly #inFlight = new Map<Connection, Pending>()
  readonly #sweeper: NodeJS.Timeout
  #closing = false
  /** Closed loop: the next request for a connection that just became free (null: stop). */
  refill: (() => Pending | null) | undefined
  settle: (kind: number, outcome: { latency: number; status: number; body: string } | 'error' | 'timeout') => void = () => {}

  private constructor(port: number) {
    this.#port = port
    this.#sweeper = setInterval(() => this.#sweep(), 250)
  }

  static async open(port: number, size: number): Promise<Pool> {
    const pool = new Pool(port)
    for (const socket of await Promise.all(Array.from({ length: size }, () => open(port)))) pool.#adopt(socket)
    return pool
  }

  get outstanding(): number { return this.#inFlight.size + this.#waiting.length }
  get idleConnections(): number { return this.#idle.length }

  send(p: Pending): void {
    // Longest idle first (round robin): with the most recently used first, as in caller-paced,
    // connections at the bottom of the stack idle past the server's keep-alive timeout over
    // ten minutes, and one closing as a request is written to it would count as an error.
    const c = this.#idle.shift()
    if (c === undefined) this.#waiting.push(p)
    else this.#write(c, p)
  }

  close(): void {
    this.#closing = true
    clearInterval(this.#sweeper)
    for (const c of this.#all) c.socket.destroy()
  }

  #adopt(socket: import('node:net').Socket): void {
    const c = new Connection(socket, (conn, _sentAt, status, body) => this.#answered(conn, status, body), (conn) => this.#failed(conn, 'error'))
    this.#all.add(c)
    // Closed by the server (no 'error'): the request on it, if any, failed; replaced either way.
    socket.once('close', () => this.#failed(c, 'error'))
    this.#release(c)
  }

  #write(c: Connection, p: Pending): void {
    this.#inFlight.set(c, p)
    c.send(p.request, p.sentAt)
  }

  #release(c: Connection): void {
    const next = this.#waiting.shift() ?? this.refill?.() ?? undefined
    if (next === undefined) this.#idle.push(c)
    else this.#write(c, next)
  }

  #answered(c: Connection, status: number, body: string): void {
    const p = this.#inFlight.get(c)!
    this.#inFlight.delete(c)
    this.settle(p.kind, { latency: performance.now() - p.sentAt, status, body })
    this.#release(c)
  }

  /** A broken or timed-out connection: its request fails, and a new connection takes its place. */
  #failed(c: Connection, why: 'error' | 'timeout'): void {
    if (this.#closing || !this.#all.delete(c)) return
    c.abandon()
    c.socket.destroy()
    const i = this.#idle.indexOf(c)
    if (i >= 0) this.#idle.splice(i, 1)
    const p = this.#inFlight.get(c)
    this.#inFlight.delete(c)
    if (p !== undefined) this.settle(p.kind, why)
    open(this.#port).then((socket) => { if (this.#closing) socket.destroy(); else this.#adopt(socket) }, () => {})
  }

  #sweep(): void {
    const now = performance.now()
    for (const [c, p] of this.#inFlight) if (now - p.sentAt > TIMEOUT_MS) this.#failed(c, 'timeout')
    // With no connection left (the server gone), queued requests would otherwise wait forever.
    while (this.#waiting.length > 0 && now - this.#waiting.peek()!.sentAt > TIMEOUT_MS) this.settle(this.#waiting.shift()!.kind, 'timeout')
  }
}

/** Makes requests in the mix's proportions and counts their outcomes into the current window. */
class Load {
  readonly endpoints: Endpoint[]
  readonly #heads: string[]
  readonly #cycle = mixCycle()
  #sequence = 0
  window!: WindowStats
  #windowStarted = 0
  #cpu = process.cpuUsage()

  constructor(seed: SoakSeed) {
    this.endpoints = soakEndpoints(seed, (line) => process.stderr.write(`${line}\n`))
    this.#heads = this.endpoints.map((e) => `HTTP/1.1\r\nhost: 127.0.0.1\r\n${Object.entries(e.headers).map(([n, v]) => `${n}: ${v}\r\n`).join('')}`)
    this.newWindow()
  }

  next(sentAt: number): Pending {
    const kind = this.#cycle[this.#sequence++ % this.#cycle.length]!
    const e = this.endpoints[kind]!
    const { path, body } = e.next()
    const payload = body === undefined ? Buffer.alloc(0) : Buffer.from(body)
    const head = `${e.method} ${path} ${this.#heads[kind]}content-length: ${payload.length}\r\n\r\n`
    this.window.sent++
    return { kind, request: Buffer.concat([Buffer.from(head, 'latin1'), payload]), sentAt }
  }

  settle = (kind: number, outcome: { latency: number; status: number; body: string } | 'error' | 'timeout'): void => {
    const k = this.window.kinds[kind]!
    if (outcome === 'error') { k.socketErrors++; return }
    if (outcome === 'timeout') { k.timeouts++; return }
    k.answered++
    k.histogram[bucketOf(outcome.latency)]!++
    if (outcome.status < 200 || outcome.status > 299) {
      k.statuses[outcome.status] = (k.statuses[outcome.status] ?? 0) + 1
      if (outcome.status === 503 && outcome.body.includes('"code":"OVERLOADED"')) k.shed++
    }
    else if (!this.endpoints[kind]!.ok(outcome.body)) k.badBodies++
  }

  /** Closes the current window and starts the next. */
  newWindow(): WindowStats {
    const closed = this.window
    const now = performance.now()
    if (closed !== undefined) {
      closed.seconds = (now - this.#windowStarted) / 1000
      const cpu = process.cpuUsage(this.#cpu)
      closed.driverCpuUs = cpu.user + cpu.system
    }
    this.#cpu = process.cpuUsage()
    this.#windowStarted = now
    this.window = { seconds: 0, sent: 0, kinds: this.endpoints.map(emptyKind), driverCpuUs: 0, maxLagMs: 0, maxOutstanding: 0 }
    return closed
  }
}

async function drained(pool: Pool): Promise<void> {
  while (pool.outstanding > 0) await new Promise((resolve) => setTimeout(resolve, 5))
}

async function closedLoop(load: Load, port: number, connections: number, seconds: number): Promise<WindowStats> {
  const pool = await Pool.open(port, connections)
  pool.settle = load.settle
  load.newWindow()
  const end = performance.now() + seconds * 1000
  pool.refill = () => { const now = performance.now(); return now < end ? load.next(now) : null }
  for (let i = pool.idleConnections; i > 0; i--) pool.send(load.next(performance.now()))
  await new Promise((resolve) => setTimeout(resolve, seconds * 1000))
  await drained(pool)
  pool.close()
  return load.newWindow()
}

async function pacedLoop(load: Load, port: number, cmd: Extract<DriverCommand, { type: 'paced' }>, report: (r: DriverReport) => void): Promise<void> {
  const pool = await Pool.open(port, cmd.sockets)
  pool.settle = load.settle
  load.newWindow()
  const interval = 1000 / cmd.rate
  const total = Math.round(cmd.rate * cmd.windows * cmd.windowS)
  const windowMs = cmd.windowS * 1000
  let sent = 0
  let window = 0
  const start = performance.now()
  await new Promise<void>((resolve) => {
    const tick = () => {
      const now = performance.now()
      // The last window stays open until every request has been answered (or timed out).
      while (window < cmd.windows - 1 && now >= start + (window + 1) * windowMs) report({ type: 'window', index: window++, stats: load.newWindow() })
      for (; sent < total && start + sent * interval <= now; sent++) {
        load.window.maxLagMs = Math.max(load.window.maxLagMs, now - (start + sent * interval))
        pool.send(load.next(now))
      }
      load.window.maxOutstanding = Math.max(load.window.maxOutstanding, pool.outstanding)
      if (sent < total) setTimeout(tick, Math.max(0, Math.min(1, start + sent * interval - performance.now())))
      else resolve()
    }
    tick()
  })
  await drained(pool)
  pool.close()
  report({ type: 'window', index: window, stats: load.newWindow() })
}

if (import.meta.main) {
  if (process.send === undefined) {
    console.error('bench/soak-driver.ts is started by bench/soak.bench.ts (it needs an IPC channel)')
    process.exit(2)
  }
  const report = (r: DriverReport) => process.send!(r)
  let load: Load | undefined
  let port = 0
  const run = async (cmd: DriverCommand) => {
    if (cmd.type === 'init') {
      load = new Load(cmd.seed)
      port = cmd.port
      return report({ type: 'ready' })
    }
    if (load === undefined) throw new Error(`${cmd.type} before init`)
    if (cmd.type === 'closed') report({ type: 'window', index: 0, stats: await closedLoop(load, port, cmd.connections, cmd.seconds) })
    else await pacedLoop(load, port, cmd, report)
    report({ type: 'done' })
  }
  process.on('message', (message) => {
    run(message as DriverCommand).catch((err: unknown) => {
      process.stderr.write(`soak load process: ${(err as Error).stack ?? String(err)}\n`)
      process.exit(1)
    })
  })
  process.on('disconnect', () => process.exit(0))
}
