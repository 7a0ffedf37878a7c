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
import type { Server } from 'node:http'
import type { Socket } from 'node:net'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { Counter, Gauge, type Registry } from 'prom-client'
import { OverloadedError } from '../errors.ts'
import { rawErrorResponse } from './error-body.ts'

export type Priority = 'critical' | 'normal' | 'low' | 'ops'

export interface AdmissionLimits {
  maxConnections: number
  maxConnectionsPerIp: number
  maxInFlight: number
  queueBudgetMs: number
  busyKeepAliveMs: number
  keepAliveMs: number
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
      // Answered before any request is read: the client learns why, and the descriptor is freed at once.
      socket.on('error', () => {})
      socket.end(rawErrorResponse(new OverloadedError(`${refusal}: close idle connections and retry`, 1)))
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

  /** The onRequest hook: admits the request now, after a wait in the queue, or answers 503. */
  readonly onRequest = async (request: FastifyRequest, reply: FastifyReply): Promise<void> => {
    const url = request.raw.url ?? '/'
    const priority = priorityOf(url, this.#loginPath)
    if (url === '/metrics' || url.startsWith('/metrics?')) {
      // One render at a time: a flood of scrapes does not become the flood.
      if (this.#metricsRendering) throw this.#refuse('metrics are being rendered for another request', 'ops')
      this.#metricsRendering = true
      reply.raw.once('close', () => { this.#metricsRendering = false })
      return
    }
    // A held wait costs nothing while it waits, and has its own bound.
    if (/[?&]wait=[1-9]/.test(url)) return
    if (priority === 'ops') return
    // Nobody overtakes those already waiting at this priority or above.
    if (this.#fits(priority) && !this.#waitingAtOrAbove(priority)) {
      this.#inFlight++
      return this.#release(request, reply)
    }
    if (this.queued >= this.#limits.maxInFlight * QUEUE_FACTOR || this.#limits.queueBudgetMs === 0) throw this.#refuse('the service is busy', priority)
    await new Promise<void>((resolve, reject) => {
      const waiter: Waiter = {
        priority,
        // The slot is taken when the waiter is chosen, so no newcomer can take it in between.
        admit: () => {
          clearTimeout(waiter.timer)
          this.#inFlight++
          resolve()
        },
        timer: setTimeout(() => {
          this.#remove(waiter)
          reject(this.#refuse('the service is busy', priority))
        }, this.#limits.queueBudgetMs),
      }
      this.#queues[priority].push(waiter)
      // A client that goes away while it waits gives its place up.
      request.raw.once('close', () => {
        if (this.#remove(waiter)) {
          clearTimeout(waiter.timer)
          reject(this.#refuse('the client went away', priority))
        }
      })
    })
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

  #refuse(why: string, priority: Priority): OverloadedError {
    this.#rejected?.inc({ reason: 'in_flight', priority })
    return new OverloadedError(`${why}: retry in 1 s`, 1)
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
  app.addHook('onRequest', admission.onRequest)
}
