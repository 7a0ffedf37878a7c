/**
 * Admission control: what the server takes on when more arrives than it can serve.
 *
 * Connections: MAX_CONNECTIONS and MAX_CONNECTIONS_PER_IP (src/http/connection-caps.ts); a
 * connection past either is answered 503 in the service's error shape and closed at once, so a
 * flood of idle connections cannot starve the database pool or the ledger watcher of descriptors.
 *
 * Requests. At most MAX_IN_FLIGHT requests are worked on at once. One that finds no slot
 * waits in a queue, by priority and then per client, clients served in turn
 * (src/lib/fair-queue.ts), at most QUEUE_BUDGET_MS, and at most STANDING_BUDGET_MS for a
 * client whose queue has not emptied for STANDING_MS: past that it is answered 503 with
 * Retry-After (cheap: nothing was parsed). A client is its authenticated API key, else its address (the same
 * address the rest of the app uses: TRUST_PROXY applies; IPv6 grouped by /64); an `x-api-key` that was never
 * verified is no identity of its own. Requests are started in a turn of the event loop only
 * until TURN_BUDGET_MS of it have passed, the rest from the queue in later turns: Node accepts
 * one connection per turn, and turns that ran a queue of synchronous work (a registration is
 * 5 ms of CPU) left new clients in the kernel's accept queue for seconds. The in-flight bound
 * holds for every client. Priorities, highest first (docs/operations.md):
 * `critical` (call verification and signing, approval decisions, the state of a request, the
 * login in progress) may use every slot; `normal` (new approvals, registration, lookups, the
 * pages) three quarters; `low` (statistics, administration, the reference) half, so a flood
 * of low work always leaves room above it. /healthz and /readyz are never queued; /metrics
 * renders one at a time. A `transaction_details?wait=` that is held waits outside the bound
 * (it has its own, WAIT_MAX_*): it costs no CPU while it waits.
 */
import { randomUUID } from 'node:crypto'
import type { IncomingMessage, Server, ServerResponse } from 'node:http'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { OverloadedError } from '../errors.ts'
import { addressGroup } from '../lib/client-address.ts'
import { FairQueue } from '../lib/fair-queue.ts'
import { KeyCounts } from '../lib/key-counts.ts'
import { runWithPriority, type WorkPriority } from '../lib/work-priority.ts'
import { ConnectionCaps } from './connection-caps.ts'
import { errorBody, requestIdFrom } from './error-body.ts'
import { Counter, Gauge, type Registry } from 'prom-client'

export type Priority = WorkPriority

export interface AdmissionLimits {
  maxConnections: number
  maxConnectionsPerIp: number
  maxInFlight: number
  /** Slots one client may hold (default: maxInFlight, no cap of its own; app.ts sets MAX_IN_FLIGHT_PER_CLIENT's). */
  maxInFlightPerClient?: number
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
/**
 * A client with more than one request waiting, whose queue has not emptied for STANDING_MS,
 * sends faster than it is served: its waiters get STANDING_BUDGET_MS instead of
 * QUEUE_BUDGET_MS (CoDel's rule, per client). What cannot be served soon is answered 503 then
 * rather than after a long wait that every one of its admitted requests would also pay; a
 * client with one request at a time is never standing.
 */
const STANDING_MS = 100
const STANDING_BUDGET_MS = 50
/**
 * Requests are started in one turn of the event loop until this much of it has passed; later
 * ones wait for the next turn. A request's synchronous work runs in the turn that admits it
 * (a registration: 5 ms of CPU; on SQLite every query is synchronous), and in a turn that
 * started a few hundred, nothing was accepted or read for seconds: the light client's requests
 * lay in the kernel's accept queue.
 */
const TURN_BUDGET_MS = 5

const CRITICAL = [
  /^\/numsys\/(call-signature-verification|verify_signature|verify_transaction|approval-cancel|transaction_details)(\?|$)/,
  /^\/stir\/v1\//, /^\/ledger\/v1\//, /^\/zklogin\/v1\//,
]
/** `transaction_details?wait=` with a wait: held outside the in-flight bound. */
const HELD_WAIT = /^\/numsys\/transaction_details\?(?:[^#]*&)?wait=[1-9]/
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

/** What every shed answer says: the code and status of OverloadedError, retry in RETRY_AFTER_S. */
const RETRY_AFTER_S = 1
const OVERLOADED = new OverloadedError('', RETRY_AFTER_S)

/**
 * The 503, written straight to the response in the error shape, bypassing Fastify's error
 * handler and send hooks: shedding must cost far less than serving, or shedding is the overload.
 * No error object is made per answer (capturing its stack was a fifth of a shed's cost).
 */
function shedRaw(res: ServerResponse, why: string, close: boolean, requestId: string = randomUUID(), shape: OtherShedShape = noOtherShape): void {
  if (res.destroyed || res.headersSent) return
  const message = `${why}: retry in ${RETRY_AFTER_S} s`
  const other = shape(res.req, OVERLOADED.status, message)
  const body = other?.body ?? JSON.stringify(errorBody(OVERLOADED.code, message, requestId))
  res.writeHead(OVERLOADED.status, {
    'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(body), 'retry-after': String(RETRY_AFTER_S),
    'cache-control': 'no-store', 'x-request-id': requestId, ...(close ? { connection: 'close' } : {}), ...other?.headers,
  })
  res.end(body)
}

/**
 * A shed request's 503 in another error shape than the service's, on the paths that have one
 * (the CAMARA routes, src/http/camara/): its body and extra headers; undefined elsewhere.
 */
export type OtherShedShape = (req: IncomingMessage, status: number, message: string) => { body: string; headers: Record<string, string> } | undefined
const noOtherShape: OtherShedShape = () => undefined

/** Who a request is from, by default: its client address group (Fastify's `request.ip`, so TRUST_PROXY applies; IPv6 by /64). */
const byAddress = (request: FastifyRequest): string => `ip:${addressGroup(request.ip)}`


interface Waiter {
  priority: Exclude<Priority, 'ops'>
  client: string
  queuedAt: number
  admit(): void
  /** Answers 503 (it waited too long, or made room for another client's request). */
  shed(): void
  timer: ReturnType<typeof setTimeout>
}

export class Admission {
  readonly #limits: AdmissionLimits
  readonly #loginPath: string
  readonly #caps: ConnectionCaps
  readonly #clientOf: (request: FastifyRequest) => string
  #inFlight = 0
  /** Slots held, per client. */
  readonly #holding = new KeyCounts()
  readonly #queues: Record<Exclude<Priority, 'ops'>, FairQueue<Waiter>> = { critical: new FairQueue(), normal: new FairQueue(), low: new FairQueue() }
  #grantsPending = 0
  #turnOpen = false
  #turnStart = 0
  #metricsRendering = false
  #rejected?: Counter<'reason' | 'priority'>
  /** The server is closing: every request that still arrives is refused (see gate). */
  #closing = false

  /** The error shape of a shed request's 503 where the service's is not the path's. */
  readonly #shape: OtherShedShape

  /**
   * `clientOf`: who a request is from, for fairness (app.ts: its verified API key, else its
   * address); by default its address. `otherShape`: the 503's body on paths with an error
   * shape of their own (the CAMARA routes); by default the service's everywhere.
   */
  constructor(limits: AdmissionLimits, options: { loginPath: string; trustedPeer: (address: string) => boolean; clientOf?: (request: FastifyRequest) => string; otherShape?: OtherShedShape }) {
    this.#limits = limits
    this.#loginPath = options.loginPath
    this.#caps = new ConnectionCaps(limits, options.trustedPeer, (reason) => this.#rejected?.inc({ reason, priority: 'none' }))
    this.#clientOf = options.clientOf ?? byAddress
    this.#shape = options.otherShape ?? noOtherShape
  }

  /** The priority of a request to `url` on this server. */
  priorityOf(url: string): Priority { return priorityOf(url, this.#loginPath) }

  get inFlight(): number { return this.#inFlight }
  get connections(): number { return this.#caps.connections }
  get queued(): number { return ORDER.reduce((n, p) => n + this.#queues[p].size, 0) }

  /** Connection counting and caps on `server` (the app's HTTP server). */
  watch(server: Server): void {
    this.#caps.watch(server)
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
    }, LAG_SAMPLE_MS)
    this.#lagTimer.unref()
  }

  stopLagMonitor(): void {
    clearInterval(this.#lagTimer)
    this.#lagTimer = undefined
  }

  /** From now on every request is refused (503, Retry-After, the connection closed): the server is closing. */
  refuseNew(): void {
    this.#closing = true
  }

  /**
   * Before Fastify: a request on a refused connection, or while the server closes, is answered
   * 503 here, for the price of Node's parse only. True when the request was answered.
   */
  gate(req: IncomingMessage, res: ServerResponse): boolean {
    if (this.#closing) {
      // A request on a keep-alive connection (a balancer's) while the server closes: the balancer
      // has not seen /readyz fail yet. Told to go elsewhere, in the error shape, and the
      // connection closed. Fastify's own answer here had no Retry-After and another shape.
      shedRaw(res, 'this server is shutting down: another one will answer', true, requestIdFrom(req.headers['x-request-id']), this.#shape)
      this.#rejected?.inc({ reason: 'closing', priority: 'none' })
      return true
    }
    const refusal = this.#caps.refusalOf(req.socket)
    if (refusal === undefined) return false
    shedRaw(res, `${refusal}: close idle connections and retry`, true, undefined, this.#shape)
    this.#rejected?.inc({ reason: 'connections', priority: 'none' })
    return true
  }

  /**
   * Whether `client` takes more than its turn: it has requests waiting already, or holds at
   * least an equal share of the slots among the clients holding any.
   */
  #isHeavy(client: string, priority: Exclude<Priority, 'ops'>): boolean {
    if (this.#queues[priority].count(client) > 0) return true
    return this.#holding.get(client) >= Math.max(1, this.#limits.maxInFlight / Math.max(1, this.#holding.size))
  }

  /**
   * While the event loop lags past SHED_LAG_MS and the server is busy with requests of its own
   * (lag alone is not overload: another process, a GC pause or a slow disk lags the loop too),
   * a heavy client's `normal` and `low` work is shed at once, its `critical` work in proportion
   * to how far past the limit (all of it at twice the limit); past four times the limit
   * everything of heavy clients but the probes. A client within its share is not shed here.
   */
  #shedForLag(client: string, priority: Exclude<Priority, 'ops'>): boolean {
    const limit = this.#limits.lagLimitMs
    if (limit === 0 || this.#lag <= limit || this.#inFlight + this.queued < Math.max(4, this.#limits.maxInFlight / 4)) return false
    if (!this.#isHeavy(client, priority)) return false
    if (this.#lag <= 4 * limit && priority === 'critical' && Math.random() >= (this.#lag - limit) / limit) return false
    return true
  }

  /** The onRequest hook: admits the request now, after a wait in the queue, or answers 503. */
  readonly onRequest = async (request: FastifyRequest, reply: FastifyReply): Promise<void> => {
    const url = request.raw.url ?? '/'
    const priority = priorityOf(url, this.#loginPath)
    if (url === '/metrics' || url.startsWith('/metrics?')) {
      // One render at a time: a flood of scrapes does not become the flood.
      if (this.#metricsRendering) return this.#shed(request, reply, 'metrics are being rendered for another request', 'ops', 'in_flight')
      this.#metricsRendering = true
      reply.raw.once('close', () => { this.#metricsRendering = false })
      return
    }
    // A held wait costs nothing while it waits, and has its own bound (transaction_details
    // only: on any other path the parameter means nothing, and it let any request past the
    // bound; review of issue 31's work).
    if (HELD_WAIT.test(url)) return
    if (priority === 'ops') return
    const client = this.#clientOf(request)
    if (this.#shedForLag(client, priority)) return this.#shed(request, reply, 'the service is busy', priority, 'lag')
    // Nobody overtakes those already waiting; past the turn's budget the request waits for the next turn.
    if (this.#fits(priority) && this.#withinClientCap(client) && !this.#waitingAtOrAbove(priority) && this.#withinTurn(performance.now())) {
      this.#take(client)
      return this.#release(request, reply, client)
    }
    if (this.#limits.queueBudgetMs === 0 || !this.#makeRoom(client)) return this.#shed(request, reply, 'the service is busy', priority, 'in_flight')
    const admitted = await new Promise<boolean>((resolve) => {
      const waiter: Waiter = {
        priority, client, queuedAt: performance.now(),
        // The slot is taken when the waiter is chosen, so no newcomer can take it in between.
        admit: () => {
          clearTimeout(waiter.timer)
          this.#take(client)
          resolve(true)
        },
        shed: () => {
          clearTimeout(waiter.timer)
          resolve(false)
        },
        timer: setTimeout(() => {
          this.#queues[priority].remove(client, waiter)
          resolve(false)
        }, this.#limits.queueBudgetMs),
      }
      this.#queues[priority].push(client, waiter, waiter.queuedAt)
      this.#scheduleGrant()
      // A client that goes away while it waits gives its place up.
      request.raw.once('close', () => {
        if (this.#queues[priority].remove(client, waiter)) waiter.shed()
      })
    })
    if (!admitted) return this.#shed(request, reply, 'the service is busy', priority, 'in_flight')
    this.#release(request, reply, client)
  }

  /**
   * Room in the queue for one more of `client`'s requests: below QUEUE_FACTOR x MAX_IN_FLIGHT
   * waiting, or by shedding the newest waiter of the client with the most waiting, when that is
   * another client with more than this one: a flood fills the queue, but cannot keep a lighter
   * client out of it.
   */
  #makeRoom(client: string): boolean {
    if (this.queued < this.#limits.maxInFlight * QUEUE_FACTOR) return true
    for (const priority of [...ORDER].reverse()) {
      const longest = this.#queues[priority].longest()
      if (longest === undefined || longest.client === client || longest.count <= this.#queues[priority].count(client) + 1) continue
      this.#queues[priority].pop(longest.client)!.shed()
      return true
    }
    return false
  }

  #waitingAtOrAbove(priority: Exclude<Priority, 'ops'>): boolean {
    for (const p of ORDER) {
      if (this.#queues[p].size > 0) return true
      if (p === priority) return false
    }
    return false
  }

  #take(client: string): void {
    this.#inFlight++
    this.#holding.add(client)
  }

  /** Gives the slot back when the answer is done or the connection is gone, exactly once. */
  #release(request: FastifyRequest, reply: FastifyReply, client: string): void {
    let released = false
    const release = () => {
      if (released) return
      released = true
      this.#inFlight--
      this.#holding.remove(client)
      this.#scheduleGrant()
    }
    if (reply.raw.destroyed || request.raw.destroyed) return release()
    reply.raw.once('close', release)
  }

  /**
   * Whether `client` holds fewer slots than one client may (MAX_IN_FLIGHT_PER_CLIENT). A request
   * holds its slot from its headers on, while its body arrives: a client sending bodies slowly
   * held every slot (re-attacking issue 31: 64 half-sent verify_signature bodies from one
   * address, and every other client's transaction_details was refused for as long as they
   * were held). Past its cap a client's requests wait in the queue, in turn, like any others.
   */
  readonly #withinClientCap = (client: string): boolean =>
    this.#holding.get(client) < (this.#limits.maxInFlightPerClient ?? this.#limits.maxInFlight)

  #fits(priority: Exclude<Priority, 'ops'>): boolean {
    return this.#inFlight < Math.max(1, Math.floor(this.#limits.maxInFlight * SHARE[priority]))
  }

  /**
   * Whether a request may start in this turn of the event loop: true until TURN_BUDGET_MS have
   * passed since the first one started in it. A turn ends at the loop's next check phase (the
   * setImmediate queued when it began).
   */
  #withinTurn(now: number): boolean {
    if (!this.#turnOpen) {
      this.#turnOpen = true
      this.#turnStart = now
      setImmediate(this.#endTurn)
    }
    return now - this.#turnStart < TURN_BUDGET_MS
  }

  readonly #endTurn = (): void => { this.#turnOpen = false }

  /**
   * One grant per slot that can be given, each in its own setImmediate: Node runs the
   * immediates queued before a check phase together, and a request's synchronous work between
   * two of them, so each grant sees how much of the turn the previous ones used.
   */
  #scheduleGrant(): void {
    const wanted = Math.min(this.queued, Math.max(0, this.#limits.maxInFlight - this.#inFlight)) - this.#grantsPending
    // The grants start a turn of their own: what the poll phase before them spent parsing and
    // shedding is not work they started.
    if (wanted > 0) setImmediate(this.#endTurn)
    for (let i = 0; i < wanted; i++) {
      this.#grantsPending++
      setImmediate(this.#grant)
    }
  }

  /**
   * Admits the next waiter that fits, highest priority first, clients in turn, unless this turn
   * of the loop is used up (then it tries again on the next). One that waited past its budget
   * (timers run late on a busy loop) is answered 503 instead.
   */
  readonly #grant = (): void => {
    this.#grantsPending--
    const now = performance.now()
    if (!this.#withinTurn(now)) return this.#scheduleGrant()
    for (const priority of ORDER) {
      const queue = this.#queues[priority]
      while (queue.size > 0 && this.#fits(priority)) {
        const next = queue.shift(this.#withinClientCap)
        // Every client waiting here holds its cap: a slot of its own frees it.
        if (next === undefined) break
        const { item: waiter, since, left } = next
        if (now - waiter.queuedAt > this.#budgetOf(since, left, now)) {
          waiter.shed()
          continue
        }
        waiter.admit()
        return
      }
    }
  }

  /** QUEUE_BUDGET_MS, or STANDING_BUDGET_MS for a client with others still waiting whose queue has stood since `since`. */
  #budgetOf(since: number, left: number, now: number): number {
    const standing = left > 0 && now - since >= STANDING_MS
    return standing ? Math.min(this.#limits.queueBudgetMs, STANDING_BUDGET_MS) : this.#limits.queueBudgetMs
  }


  #shed(request: FastifyRequest, reply: FastifyReply, why: string, priority: Priority, reason: 'in_flight' | 'lag'): void {
    this.#rejected?.inc({ reason, priority })
    reply.hijack()
    shedRaw(reply.raw, why, false, String(request.id), this.#shape)
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
  // Each request runs as work of its priority: the PostgreSQL pool serves its waiters in that
  // order too (src/db/priority-gate.ts), or a FIFO wait for a connection would undo admission's.
  app.server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    if (admission.gate(req, res)) return
    runWithPriority(admission.priorityOf(req.url ?? '/'), () => { for (const handler of handlers) handler(req, res) })
  })
  app.addHook('onRequest', admission.onRequest)
  app.addHook('onListen', (done) => { admission.startLagMonitor(); done() })
  app.addHook('preClose', (done) => { admission.refuseNew(); done() })
  app.addHook('onClose', (_instance, done) => { admission.stopLagMonitor(); done() })
}
