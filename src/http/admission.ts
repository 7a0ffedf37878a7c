/**
 * Admission control: what the server takes on when more arrives than it can serve.
 *
 * Connections. A cap below the process's descriptor limit (MAX_CONNECTIONS) and one per client
 * address (MAX_CONNECTIONS_PER_IP; a trusted proxy's own connections are not capped, it carries
 * many clients): a connection past either is answered 503 in the service's error shape and
 * closed at once, so a flood of idle connections cannot starve the database pool or the
 * ledger watcher of descriptors. Past half the cap, idle keep-alive is cut to
 * KEEP_ALIVE_BUSY_MS; near the cap, idle keep-alive connections are closed to make room.
 *
 * Requests. At most MAX_IN_FLIGHT requests are worked on at once. One that finds no slot waits
 * in a queue, by priority, at most QUEUE_BUDGET_MS; past that it is answered 503 with
 * Retry-After (cheap: nothing was parsed). Priorities, highest first (docs/operations.md):
 * `critical` (call verification and signing, approval decisions, the state of a request, the
 * login in progress) may use every slot; `normal` (new approvals, registration, lookups, the
 * pages) three quarters; `low` (statistics, administration, the reference) half, so a flood
 * of low work always leaves room above it. /healthz and /readyz are never queued; /metrics
 * renders one at a time. A `transaction_details?wait=` that is held waits outside the bound
 * (it has its own, WAIT_MAX_*): it costs no CPU while it waits.
 */
import { randomUUID } from 'node:crypto'
import type { IncomingMessage, Server, ServerResponse } from 'node:http'
import type { Socket } from 'node:net'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { OverloadedError } from '../errors.ts'
import { errorBody } from './error-body.ts'
import { Counter, Gauge, type Registry } from 'prom-client'

export type Priority = 'critical' | 'normal' | 'low' | 'ops'

export interface AdmissionLimits {
  maxConnections: number
  maxConnectionsPerIp: number
  maxInFlight: number
  queueBudgetMs: number
  busyKeepAliveMs: number
  keepAliveMs: number
  /** SHED_LAG_MS: event-loop lag past which new requests are shed before Fastify sees them (0: never). */
  lagLimitMs: number
}

/** Share of the in-flight slots each priority may hold. */
const SHARE: Record<Exclude<Priority, 'ops'>, number> = { critical: 1, normal: 0.75, low: 0.5 }
const ORDER: Array<Exclude<Priority, 'ops'>> = ['critical', 'normal', 'low']
/** A queue longer than this many times the slots is not drained within any budget: refuse at once. */
const QUEUE_FACTOR = 4

const CRITICAL = [
  /^\/numsys\/(call-signature-verification|verify_signature|verify_transaction|approval-cancel|transaction_details)(\?|$)/,
  /^\/stir\/v1\//, /^\/ledger\/v1\//, /^\/zklogin\/v1\//,
]
const LOW = [/^\/api\/v1\//, /^\/docs(\/|$)/, /^\/openapi\.json$/]
const OPS = /^\/(healthz|readyz)(\?|$)/

/** The priority of a request, by its path (the login provider's own paths are `critical` when under `loginPath`). */
export function priorityOf(url: string, loginPath: string): Priority {
  if (OPS.test(url)) return 'ops'
  if (CRITICAL.some((p) => p.test(url)) || url.startsWith(`${loginPath}/`) || url === loginPath) return 'critical'
  if (LOW.some((p) => p.test(url))) return 'low'
  return 'normal'
}

const LAG_SAMPLE_MS = 10
const LAG_WINDOW = 5

/**
 * The 503, written straight to the response in the error shape, bypassing Fastify's error
 * handler and send hooks: shedding must cost far less than serving, or shedding is the overload.
 */
function shedRaw(res: ServerResponse, why: string, close: boolean, requestId: string = randomUUID()): void {
  if (res.destroyed || res.headersSent) return
  const err = new OverloadedError(`${why}: retry in 1 s`, 1)
  const body = JSON.stringify(errorBody(err.code, err.message, requestId))
  res.writeHead(err.status, {
    'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(body), 'retry-after': String(err.retryAfterS),
    'cache-control': 'no-store', 'x-request-id': requestId, ...(close ? { connection: 'close' } : {}),
  })
  res.end(body)
}

/** Who a request is from, for fair shedding: its API key's ID (never the secret), else the socket's address. */
function clientOf(req: IncomingMessage): string {
  const key = req.headers['x-api-key']
  if (typeof key === 'string' && key.startsWith('kns_')) return key.slice(0, 20)
  return req.socket.remoteAddress ?? ''
}

/** Connections over a cap, with why: their first request is refused. */
const refused = new WeakMap<Socket, string>()

interface Waiter {
  priority: Exclude<Priority, 'ops'>
  admit(): void
  timer: ReturnType<typeof setTimeout>
}

export class Admission {
  readonly #limits: AdmissionLimits
  readonly #loginPath: string
  readonly #trustedPeer: (address: string) => boolean
  #inFlight = 0
  readonly #queues: Record<Exclude<Priority, 'ops'>, Waiter[]> = { critical: [], normal: [], low: [] }
  #connections = 0
  readonly #perAddress = new Map<string, number>()
  #busy = false
  #lastReclaim = 0
  #metricsRendering = false
  #rejected?: Counter<'reason' | 'priority'>

  constructor(limits: AdmissionLimits, options: { loginPath: string; trustedPeer: (address: string) => boolean }) {
    this.#limits = limits
    this.#loginPath = options.loginPath
    this.#trustedPeer = options.trustedPeer
  }

  get inFlight(): number { return this.#inFlight }
  get connections(): number { return this.#connections }
  get queued(): number { return ORDER.reduce((n, p) => n + this.#queues[p].length, 0) }

  /** Connection counting and caps on `server` (the app's HTTP server). */
  watch(server: Server): void {
    server.on('connection', (socket: Socket) => this.#onConnection(server, socket))
  }

  #onConnection(server: Server, socket: Socket): void {
    const address = socket.remoteAddress ?? ''
    const capped = !this.#trustedPeer(address)
    const mine = this.#perAddress.get(address) ?? 0
    let refusal: string | null = null
    if (this.#connections >= this.#limits.maxConnections) refusal = 'the server has too many connections open'
    else if (capped && mine >= this.#limits.maxConnectionsPerIp) refusal = 'too many connections from this address'
    if (refusal !== null) {
      this.#rejected?.inc({ reason: capped && mine >= this.#limits.maxConnectionsPerIp ? 'connections_per_ip' : 'connections', priority: 'none' })
      // Its first request is answered 503 and the connection closed (onRequest, before anything
      // is parsed beyond the headers); one that sends nothing within a second is dropped.
      refused.set(socket, refusal)
      socket.setTimeout(1000, () => socket.destroy())
      this.#reclaim(server)
      return
    }
    this.#connections++
    this.#perAddress.set(address, mine + 1)
    this.#pressure(server)
    socket.once('close', () => {
      this.#connections--
      const left = (this.#perAddress.get(address) ?? 1) - 1
      if (left <= 0) this.#perAddress.delete(address)
      else this.#perAddress.set(address, left)
      this.#pressure(server)
    })
  }

  /** Past half the cap idle keep-alive is short; below 40 % it is back to KEEP_ALIVE_TIMEOUT_MS. */
  #pressure(server: Server): void {
    const load = this.#connections / this.#limits.maxConnections
    if (!this.#busy && load > 0.5) {
      this.#busy = true
      server.keepAliveTimeout = Math.min(this.#limits.busyKeepAliveMs, this.#limits.keepAliveMs)
    } else if (this.#busy && load < 0.4) {
      this.#busy = false
      server.keepAliveTimeout = this.#limits.keepAliveMs
    }
    if (load > 0.9) this.#reclaim(server)
  }

  /** Near the cap: close the connections idle between requests (at most ten times a second). */
  #reclaim(server: Server): void {
    const now = performance.now()
    if (now - this.#lastReclaim < 100) return
    this.#lastReclaim = now
    server.closeIdleConnections()
  }

  #lag = 0
  #lagTimer: ReturnType<typeof setInterval> | undefined

  /** The event loop's recent lag (ms): how long a request that arrives now waits before any code of ours runs. */
  get lagMs(): number { return this.#lag }

  /**
   * Samples the event loop every 10 ms. The lag is the smallest delay of the last five samples:
   * a sustained backlog, which a single pause (a GC, a slow synchronous query) is not. At 0.8 x
   * capacity the soak's loop had pauses of 60-80 ms every minute, and a lag taken as the worst
   * recent delay shed 1 % of its requests; a flood keeps every sample late.
   */
  startLagMonitor(): void {
    if (this.#lagTimer !== undefined || this.#limits.lagLimitMs === 0) return
    let expected = performance.now() + LAG_SAMPLE_MS
    const recent: number[] = []
    this.#lagTimer = setInterval(() => {
      const now = performance.now()
      recent.push(Math.max(0, now - expected))
      if (recent.length > LAG_WINDOW) recent.shift()
      this.#lag = Math.min(...recent)
      expected = now + LAG_SAMPLE_MS
      if (++this.#ticks % 10 === 0) this.#rotateWindow()
    }, LAG_SAMPLE_MS)
    this.#lagTimer.unref()
  }

  stopLagMonitor(): void {
    clearInterval(this.#lagTimer)
    this.#lagTimer = undefined
  }

  /** Requests per client (API key, else address) in the current and the previous 100 ms window. */
  #seen = new Map<string, number>()
  #seenBefore = new Map<string, number>()
  #seenTotal = 0
  #seenBeforeTotal = 0
  /** Distinct clients in the two windows (kept as requests are counted: no set built per request). */
  #clients = 0
  #ticks = 0

  /** Whether `client` sent no more than an equal share of the recent requests (always, while nothing is counted). */
  #isLight(client: string): boolean {
    const total = this.#seenTotal + this.#seenBeforeTotal
    if (total === 0) return true
    return (this.#seen.get(client) ?? 0) + (this.#seenBefore.get(client) ?? 0) <= total / Math.max(1, this.#clients)
  }

  #rotateWindow(): void {
    this.#seenBefore = this.#seen
    this.#seenBeforeTotal = this.#seenTotal
    this.#seen = new Map()
    this.#seenTotal = 0
    this.#clients = this.#seenBefore.size
  }

  /**
   * Before Fastify: a request on a refused connection, or one that arrives while the loop lags
   * past SHED_LAG_MS with a quarter of MAX_IN_FLIGHT busy, is answered 503 here, for the price of Node's parse only. Shedding is
   * fair between clients (an API key, else a client address): while the loop lags, a client
   * sending no more than an equal share of the recent requests is still served, so one
   * flooding client is what gets shed, not its neighbours. Past the limit, a heavy client's
   * `normal` and `low` work is shed, and its `critical` work in proportion to how far past (all
   * at twice the limit); past four times the limit everything of heavy clients but the probes.
   * True when the request was answered.
   */
  gate(req: IncomingMessage, res: ServerResponse): boolean {
    const refusal = refused.get(req.socket)
    if (refusal !== undefined) {
      shedRaw(res, `${refusal}: close idle connections and retry`, true)
      this.#rejected?.inc({ reason: 'connections', priority: 'none' })
      return true
    }
    const limit = this.#limits.lagLimitMs
    if (limit === 0) return false
    const client = clientOf(req)
    const mine = this.#seen.get(client)
    if (mine === undefined && !this.#seenBefore.has(client)) this.#clients++
    this.#seen.set(client, (mine ?? 0) + 1)
    this.#seenTotal++
    // Lag alone is not overload: another process, a GC pause or a slow disk lags the loop too.
    // Shed only while this server is also busy with requests of its own.
    if (this.#lag <= limit || this.#inFlight + this.queued < Math.max(4, this.#limits.maxInFlight / 4)) return false
    const priority = priorityOf(req.url ?? '/', this.#loginPath)
    if (priority === 'ops') return false
    if (this.#isLight(client)) return false
    if (this.#lag <= 4 * limit) {
      if (priority === 'critical' && Math.random() >= (this.#lag - limit) / limit) return false
    }
    this.#rejected?.inc({ reason: 'lag', priority })
    shedRaw(res, 'the service is busy', false)
    return true
  }

  /** The onRequest hook: admits the request now, after a wait in the queue, or answers 503. */
  readonly onRequest = async (request: FastifyRequest, reply: FastifyReply): Promise<void> => {
    const url = request.raw.url ?? '/'
    const priority = priorityOf(url, this.#loginPath)
    if (url === '/metrics' || url.startsWith('/metrics?')) {
      // One render at a time: a flood of scrapes does not become the flood.
      if (this.#metricsRendering) return this.#shed(request, reply, 'metrics are being rendered for another request', 'ops')
      this.#metricsRendering = true
      reply.raw.once('close', () => { this.#metricsRendering = false })
      return
    }
    // A held wait costs nothing while it waits, and has its own bound.
    if (/[?&]wait=[1-9]/.test(url)) return
    if (priority === 'ops') return
    // A client sending no more than an equal share of the recent requests (the light one
    // beside a flood) is not held back by the bound: what it adds is at most its share. Nobody
    // else overtakes those already waiting.
    if ((this.#fits(priority) && !this.#waitingAtOrAbove(priority)) || (this.#limits.lagLimitMs > 0 && this.#isLight(clientOf(request.raw)))) {
      this.#inFlight++
      return this.#release(request, reply)
    }
    if (this.queued >= this.#limits.maxInFlight * QUEUE_FACTOR || this.#limits.queueBudgetMs === 0) return this.#shed(request, reply, 'the service is busy', priority)
    const admitted = await new Promise<boolean>((resolve) => {
      const waiter: Waiter = {
        priority,
        // The slot is taken when the waiter is chosen, so no newcomer can take it in between.
        admit: () => {
          clearTimeout(waiter.timer)
          this.#inFlight++
          resolve(true)
        },
        timer: setTimeout(() => {
          this.#remove(waiter)
          resolve(false)
        }, this.#limits.queueBudgetMs),
      }
      this.#queues[priority].push(waiter)
      // A client that goes away while it waits gives its place up.
      request.raw.once('close', () => {
        if (this.#remove(waiter)) {
          clearTimeout(waiter.timer)
          resolve(false)
        }
      })
    })
    if (!admitted) return this.#shed(request, reply, 'the service is busy', priority)
    this.#release(request, reply)
  }

  #waitingAtOrAbove(priority: Exclude<Priority, 'ops'>): boolean {
    for (const p of ORDER) {
      if (this.#queues[p].length > 0) return true
      if (p === priority) return false
    }
    return false
  }

  /** Gives the slot back when the answer is done or the connection is gone, exactly once. */
  #release(request: FastifyRequest, reply: FastifyReply): void {
    let released = false
    const release = () => {
      if (released) return
      released = true
      this.#inFlight--
      this.#next()
    }
    if (reply.raw.destroyed || request.raw.destroyed) return release()
    reply.raw.once('close', release)
  }

  #fits(priority: Exclude<Priority, 'ops'>): boolean {
    return this.#inFlight < Math.max(1, Math.floor(this.#limits.maxInFlight * SHARE[priority]))
  }

  /** Admits the first waiter, highest priority first, that fits in the slots now free. */
  #next(): void {
    for (const priority of ORDER) {
      const queue = this.#queues[priority]
      if (queue.length > 0 && this.#fits(priority)) {
        queue.shift()!.admit()
        return
      }
    }
  }

  #remove(waiter: Waiter): boolean {
    const queue = this.#queues[waiter.priority]
    const at = queue.indexOf(waiter)
    if (at < 0) return false
    queue.splice(at, 1)
    return true
  }

  #shed(request: FastifyRequest, reply: FastifyReply, why: string, priority: Priority): void {
    this.#rejected?.inc({ reason: 'in_flight', priority })
    reply.hijack()
    shedRaw(reply.raw, why, false, String(request.id))
  }

  /** Its gauges and counter, in the service's registry (/metrics). */
  register(registry: Registry): void {
    this.#rejected = new Counter({
      name: 'kns_admission_rejected_total', help: 'Connections and requests answered 503 by admission control, by reason and priority',
      labelNames: ['reason', 'priority'] as const, registers: [registry],
    })
    const admission = this
    new Gauge({ name: 'kns_connections', help: 'Open client connections', registers: [registry], collect() { this.set(admission.connections) } })
    new Gauge({ name: 'kns_requests_in_flight', help: 'Requests being worked on (admitted)', registers: [registry], collect() { this.set(admission.inFlight) } })
    new Gauge({ name: 'kns_requests_queued', help: 'Requests waiting for a slot', registers: [registry], collect() { this.set(admission.queued) } })
  }
}

/** The hook and the connection watch on `app`. */
export function useAdmission(app: FastifyInstance, admission: Admission): void {
  admission.watch(app.server)
  // The gate runs before Fastify builds anything for the request.
  const handlers = app.server.listeners('request') as Array<(req: IncomingMessage, res: ServerResponse) => void>
  app.server.removeAllListeners('request')
  app.server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    if (!admission.gate(req, res)) for (const handler of handlers) handler(req, res)
  })
  app.addHook('onRequest', admission.onRequest)
  app.addHook('onListen', (done) => { admission.startLagMonitor(); done() })
  app.addHook('onClose', (_instance, done) => { admission.stopLagMonitor(); done() })
}
