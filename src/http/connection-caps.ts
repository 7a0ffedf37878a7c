/**
 * The connection half of admission control (src/http/admission.ts): a cap below the process's
 * descriptor limit (MAX_CONNECTIONS) and one per client address (MAX_CONNECTIONS_PER_IP; a
 * trusted proxy's own connections are not capped, it carries many clients). A connection past
 * either has its first request answered 503 and is closed. Past half the cap, idle keep-alive
 * is cut to KEEP_ALIVE_BUSY_MS; near the cap, idle keep-alive connections are closed to make room.
 */
import type { Server } from 'node:http'
import type { Socket } from 'node:net'
import { addressGroup } from '../lib/client-address.ts'
import { KeyCounts } from '../lib/key-counts.ts'

export interface ConnectionLimits {
  maxConnections: number
  maxConnectionsPerIp: number
  busyKeepAliveMs: number
  keepAliveMs: number
}

export class ConnectionCaps {
  readonly #limits: ConnectionLimits
  readonly #trustedPeer: (address: string) => boolean
  /** Counts a refusal (kns_admission_rejected_total). */
  readonly #count: (reason: 'connections' | 'connections_per_ip') => void
  /** Connections over a cap, with why. */
  readonly #refused = new WeakMap<Socket, string>()
  #connections = 0
  readonly #perAddress = new KeyCounts()
  #busy = false
  #lastReclaim = 0

  constructor(limits: ConnectionLimits, trustedPeer: (address: string) => boolean, count: (reason: 'connections' | 'connections_per_ip') => void) {
    this.#limits = limits
    this.#trustedPeer = trustedPeer
    this.#count = count
  }

  /** Connection counting and caps on `server` (the app's HTTP server). */
  watch(server: Server): void {
    server.on('connection', (socket: Socket) => this.#onConnection(server, socket))
  }

  get connections(): number { return this.#connections }

  /** Why a connection is refused (its first request is answered 503 and it is closed); undefined for one within the caps. */
  refusalOf(socket: Socket): string | undefined { return this.#refused.get(socket) }

  #onConnection(server: Server, socket: Socket): void {
    const peer = socket.remoteAddress ?? ''
    const capped = !this.#trustedPeer(peer)
    // Counted by address group: the addresses of one IPv6 /64 are one client's.
    const address = addressGroup(peer)
    const mine = this.#perAddress.get(address)
    let refusal: string | null = null
    if (this.#connections >= this.#limits.maxConnections) refusal = 'the server has too many connections open'
    else if (capped && mine >= this.#limits.maxConnectionsPerIp) refusal = 'too many connections from this address'
    if (refusal !== null) {
      const perAddress = capped && mine >= this.#limits.maxConnectionsPerIp && this.#connections < this.#limits.maxConnections
      this.#count(perAddress ? 'connections_per_ip' : 'connections')
      // Its first request is answered 503 and the connection closed (onRequest, before anything
      // is parsed beyond the headers); one that sends nothing within a second is dropped.
      this.#refused.set(socket, refusal)
      socket.setTimeout(1000, () => socket.destroy())
      // Only a full server makes room by closing idle connections: a client over its own cap
      // gains nothing by it, and a flood's refused connections closed every other client's
      // idle keep-alive connection ten times a second (each reconnect then waited in the
      // kernel's accept queue behind the flood: the light client's 0.5-0.8 s answers).
      if (!perAddress) this.#reclaim(server)
      return
    }
    this.#connections++
    this.#perAddress.add(address)
    this.#pressure(server)
    socket.once('close', () => {
      this.#connections--
      this.#perAddress.remove(address)
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
}
