import { createSocket, type RemoteInfo, type Socket as UdpSocket } from 'node:dgram'
import { randomBytes } from 'node:crypto'
import { createServer, isIPv6, type Server as TcpServer, type Socket } from 'node:net'
import { addressMatcher } from '../lib/address-ranges.ts'
import { Counter, Gauge, type Registry } from 'prom-client'
import { findApiKey, type SigningBinding } from '../keys/api-keys.ts'
import type { SipSettings } from '../lib/sip-settings.ts'
import { activeSpan, inSpan, markFailed, tracingOn } from '../lib/tracing.ts'
import type { Service } from '../service.ts'
import {
  declaredLength, echoTooLarge, headerEnd, MAX_MESSAGE_BYTES, parseRequest, renderBounded, single, SipParseError, toTagOf, transactionKey, type SipRequest,
  type SipResponse,
} from './message.ts'
import { redirect, type RedirectPolicy } from './redirect.ts'
import { UdpSources } from './sources.ts'
import { InviteTransactions } from './transactions.ts'

/**
 * The SIP redirect server (docs/sip.md): UDP and TCP on SIP_LISTEN, serving only the SBCs of
 * SIP_TRUSTED_SOURCES (anyone else is dropped without an answer: no reflection, nothing
 * learnt). INVITE -> 302/603/4xx (src/sip/redirect.ts); OPTIONS -> 200 (SBC keep-alive);
 * CANCEL -> 200 and 487 for an INVITE not yet answered; ACK absorbed; other methods 405.
 * Over UDP the INVITE's final response is retransmitted until its ACK (RFC 3261 17.2.1) when a
 * 100 Trying went out; what a UDP source that has not proved it receives our answers is sent
 * is bounded (src/sip/sources.ts); no answer is larger than MAX_ANSWER_BYTES (message.ts).
 */
const ALLOW = 'INVITE, ACK, CANCEL, OPTIONS'
/** INVITEs being worked on at once; past it, 503 with Retry-After (an SBC then tries another server). */
const MAX_IN_FLIGHT = 512
const MAX_TCP_CONNECTIONS = 1024
const TCP_IDLE_MS = 5 * 60_000
const SIGNING_BINDING_TTL_MS = 1000
const UDP_RECEIVE_BUFFER = 4 * 1024 * 1024
/** Responses a TCP peer has not read yet, at most. */
const MAX_TCP_UNREAD = 1024 * 1024

type Reply = (bytes: Buffer) => void

export class SipServer {
  readonly #service: Service
  readonly #settings: SipSettings
  readonly #isTrusted: (address: string) => boolean
  readonly #transactions: InviteTransactions
  readonly #sources = new UdpSources()
  readonly #policy: RedirectPolicy
  #udp: UdpSocket | undefined
  #tcp: TcpServer | undefined
  readonly #connections = new Set<Socket>()
  #inFlight = 0
  #binding: { value: SigningBinding | null; until: number } | undefined
  #requests: Counter<'method' | 'status' | 'transport'> | undefined
  #dropped: Counter<'reason'> | undefined

  constructor(service: Service, settings: SipSettings) {
    this.#service = service
    this.#settings = settings
    this.#isTrusted = addressMatcher(settings.trustedSources)
    this.#transactions = new InviteTransactions()
    this.#policy = { block: new Set(settings.block), redress: settings.redress, signingBinding: () => this.#signingBinding() }
  }

  /** Its counters, in the service's registry (/metrics). */
  register(registry: Registry): void {
    this.#requests = new Counter({
      name: 'kns_sip_requests_total', help: 'SIP requests answered, by method, response status and transport',
      labelNames: ['method', 'status', 'transport'] as const, registers: [registry],
    })
    this.#dropped = new Counter({ name: 'kns_sip_dropped_total', help: 'SIP messages dropped unanswered, by reason', labelNames: ['reason'] as const, registers: [registry] })
    const sip = this
    new Gauge({ name: 'kns_sip_in_flight', help: 'SIP INVITEs being worked on', registers: [registry], collect() { this.set(sip.#inFlight) } })
  }

  get address(): { udp: number | undefined; tcp: number | undefined } {
    const tcp = this.#tcp?.address()
    return { udp: this.#udp?.address().port, tcp: typeof tcp === 'object' && tcp !== null ? tcp.port : undefined }
  }

  /**
   * `ownSocket`: this process binds sockets of its own with SO_REUSEPORT beside the other
   * workers' (src/cli/workers.ts `ownSockets`), rather than node:cluster's shared one.
   */
  async listen(options: { ownSocket?: boolean } = {}): Promise<void> {
    // SIP_LISTEN with port 0 (tests): UDP takes a free port, TCP the same number, which may be
    // taken for TCP: then both try another.
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.#bind(options.ownSocket === true)
      } catch (err) {
        if (this.#settings.port !== 0 || attempt >= 5 || (err as NodeJS.ErrnoException).code !== 'EADDRINUSE') throw err
      }
    }
  }

  async #bind(ownSocket: boolean): Promise<void> {
    const { host, port } = this.#settings
    const udp = createSocket({ type: isIPv6(host) ? 'udp6' : 'udp4', reuseAddr: false, reusePort: ownSocket })
    udp.on('message', (message, remote) => this.#onDatagram(message, remote))
    udp.on('error', () => {}) // an ICMP error for one peer must not stop the socket
    await new Promise<void>((resolve, reject) => {
      udp.once('error', reject)
      udp.bind({ port, address: host, exclusive: ownSocket }, () => resolve())
    })
    // A burst of INVITEs while the event loop is busy (a GC pause) must wait in the socket, not
    // be dropped by the kernel: 4 MiB (the system's net.core.rmem_max may cap it lower).
    try {
      udp.setRecvBufferSize(UDP_RECEIVE_BUFFER)
    } catch {
      // kept at the system default
    }
    const tcp = createServer((socket) => this.#onConnection(socket))
    tcp.maxConnections = MAX_TCP_CONNECTIONS
    try {
      await new Promise<void>((resolve, reject) => {
        tcp.once('error', reject)
        tcp.listen({ port: udp.address().port, host, exclusive: ownSocket, reusePort: ownSocket }, () => resolve())
      })
    } catch (err) {
      await new Promise<void>((resolve) => udp.close(() => resolve()))
      throw err
    }
    // Accept errors (EMFILE, ...) must not become uncaught exceptions.
    tcp.on('error', (err) => this.#failed(err))
    this.#udp = udp
    this.#tcp = tcp
  }

  async close(): Promise<void> {
    this.#transactions.clear()
    for (const socket of this.#connections) socket.destroy()
    await Promise.all([
      new Promise<void>((resolve) => (this.#udp === undefined ? resolve() : this.#udp.close(() => resolve()))),
      new Promise<void>((resolve) => (this.#tcp === undefined ? resolve() : this.#tcp.close(() => resolve()))),
    ])
  }

  #drop(reason: string): void {
    this.#dropped?.inc({ reason })
  }

  #onDatagram(message: Buffer, remote: RemoteInfo): void {
    if (!this.#isTrusted(remote.address)) return this.#drop('untrusted_source')
    // No answer can go to port 0 (a forged source): dgram would throw, so nothing is done.
    if (remote.port === 0) return this.#drop('bad_source_port')
    // Keep-alive (RFC 5626 4.4.1): a bare CRLF datagram needs no answer over UDP.
    if (message.length <= 4 && message.toString('latin1').trim() === '') return
    const reply: Reply = (bytes) => {
      // A source that has not proved it receives our answers may be a forged one: its budget.
      if (!this.#sources.allow(remote.address, bytes.length)) return this.#drop('unconfirmed_source_budget')
      try {
        this.#udp?.send(bytes, remote.port, remote.address)
      } catch {
        this.#drop('send_failed')
      }
    }
    this.#handle(message, { address: remote.address, port: remote.port }, reply, 'udp').catch((err: unknown) => this.#failed(err))
  }

  #onConnection(socket: Socket): void {
    const address = socket.remoteAddress ?? ''
    if (!this.#isTrusted(address)) {
      this.#drop('untrusted_source')
      socket.destroy()
      return
    }
    this.#connections.add(socket)
    socket.setTimeout(TCP_IDLE_MS, () => socket.destroy())
    socket.on('close', () => this.#connections.delete(socket))
    socket.on('error', () => socket.destroy())
    const source = { address, port: socket.remotePort ?? 0 }
    // A peer that sends without reading gets its connection closed, not our memory filled.
    const reply: Reply = (bytes) => {
      if (socket.destroyed) return
      if (socket.writableLength > MAX_TCP_UNREAD) {
        this.#drop('peer_not_reading')
        socket.destroy()
        return
      }
      socket.write(bytes)
    }
    let buffer: Buffer = Buffer.alloc(0)
    socket.on('data', (chunk: Buffer) => {
      buffer = buffer.length === 0 ? chunk : Buffer.concat([buffer, chunk])
      for (;;) {
        // RFC 5626 keep-alive: a double CRLF is answered with one CRLF; stray CRLFs are skipped.
        let skip = 0
        while (skip + 1 < buffer.length && buffer[skip] === 13 && buffer[skip + 1] === 10) skip += 2
        if (skip >= 4) reply(Buffer.from('\r\n'))
        if (skip > 0) buffer = buffer.subarray(skip)
        const end = headerEnd(buffer)
        if (end === -1) {
          if (buffer.length > MAX_MESSAGE_BYTES) {
            this.#drop('oversized')
            socket.destroy()
          }
          return
        }
        const length = declaredLength(buffer.subarray(0, end).toString('latin1'))
        if (length === null || end + 4 + length > MAX_MESSAGE_BYTES) {
          // No framing over a stream without Content-Length (RFC 3261 18.3): the connection cannot go on.
          this.#drop(length === null ? 'no_content_length' : 'oversized')
          socket.destroy()
          return
        }
        if (buffer.length < end + 4 + length) return
        const message = buffer.subarray(0, end + 4 + length)
        buffer = buffer.subarray(end + 4 + length)
        this.#handle(Buffer.from(message), source, reply, 'tcp').catch((err: unknown) => this.#failed(err))
      }
    })
  }

  /** A bug, not a verdict on the message: counted and reported, the server goes on. */
  #failed(err: unknown): void {
    this.#drop('internal_error')
    process.emitWarning(`SIP message handling failed: ${err instanceof Error ? err.message : String(err)}`)
  }

  #count(method: string, status: number, transport: string): void {
    this.#requests?.inc({ method: ['INVITE', 'ACK', 'CANCEL', 'OPTIONS'].includes(method) ? method : 'other', status: String(status), transport })
  }

  async #handle(message: Buffer, source: { address: string; port: number }, reply: Reply, transport: 'udp' | 'tcp'): Promise<void> {
    let request: SipRequest | null
    try {
      request = parseRequest(message)
    } catch (err) {
      if (!(err instanceof SipParseError)) throw err
      return this.#drop('unparsable')
    }
    if (request === null) return this.#drop('response')
    const toTag = randomBytes(6).toString('hex')
    const send = (response: SipResponse, topViaOnly = false) => {
      const bytes = renderBounded(request, response, source, toTag, topViaOnly)
      if (bytes === null) return this.#drop('oversized_answer')
      reply(bytes)
      this.#count(request.method, response.status, transport)
    }
    const key = transactionKey(request, source.address)
    // What a response must copy. Without a Via no response can be addressed (dropped); an ACK gets none.
    const addressable = (request.headers.get('via')?.length ?? 0) > 0
    let complete = addressable
    try {
      for (const name of ['from', 'to', 'call-id', 'cseq']) single(request, name)
    } catch {
      complete = false
    }
    if (!complete) {
      if (request.method === 'ACK' || !addressable) return this.#drop('unaddressable')
      return send({ status: 400, reason: 'Bad Request', headers: [['Warning', '399 kns "Via, From, To, Call-ID and CSeq must each appear once"']] })
    }
    // An answer echoes the request's Via, From, To, Call-ID and CSeq: one that would echo more
    // than an answer may is refused, echoing only its top Via (a 513 would be a 5xx).
    const tooLarge = echoTooLarge(request)
    if (tooLarge !== null) {
      if (request.method === 'ACK') return this.#drop('oversized_answer')
      return send({ status: 400, reason: 'Bad Request', headers: [['Warning', `399 kns "${tooLarge}"`]] }, true)
    }
    switch (request.method) {
      case 'ACK':
        // Our To tag in it: its source received our answer, so it is no forged one.
        if (key !== null && this.#transactions.acknowledged(key, toTagOf(request)) && transport === 'udp') this.#sources.confirm(source.address)
        return
      case 'OPTIONS':
        return send({ status: 200, reason: 'OK', headers: [['Allow', ALLOW], ['Accept', 'application/sdp']] })
      case 'CANCEL': {
        // RFC 3261 9.2: 481 when no INVITE of that transaction is known.
        if (key === null || !this.#transactions.has(key)) return send({ status: 481, reason: 'Call/Transaction Does Not Exist', headers: [] })
        send({ status: 200, reason: 'OK', headers: [] })
        const pending = this.#transactions.cancel(key)
        const terminated = pending === undefined ? null : renderBounded(pending.request, { status: 487, reason: 'Request Terminated', headers: [] }, pending.source, pending.toTag)
        if (terminated !== null && pending?.finish(terminated) === true) this.#count('INVITE', 487, transport)
        return
      }
      case 'INVITE':
        if (!tracingOn()) return this.#invite(request, key, source, reply, transport, send, toTag, message.length)
        // A server span per INVITE transaction: the transport and the final status, never a number or a URI.
        return inSpan('SIP INVITE', { kind: 'server', attributes: { 'sip.method': 'INVITE', 'network.transport': transport } },
          () => this.#invite(request, key, source, reply, transport, send, toTag, message.length))
      default:
        return send({ status: 405, reason: 'Method Not Allowed', headers: [['Allow', ALLOW]] })
    }
  }

  async #invite(request: SipRequest, key: string | null, source: { address: string; port: number }, reply: Reply, transport: 'udp' | 'tcp',
    send: (response: SipResponse) => void, toTag: string, size: number): Promise<void> {
    // A retransmitted INVITE (UDP): the answer again, or nothing while it is being worked on.
    if (key !== null && this.#transactions.retransmitted(key)) return
    if (this.#inFlight >= MAX_IN_FLIGHT) {
      return send({ status: 503, reason: 'Service Unavailable', headers: [['Retry-After', '1']] })
    }
    // No 100 Trying to a UDP source not confirmed yet: without one, the final response is not
    // retransmitted (the client's INVITE retransmissions get it), so a forged INVITE gets one answer.
    const confirmed = transport === 'tcp' || this.#sources.isConfirmed(source.address)
    const trying = confirmed ? () => {
      const bytes = renderBounded(request, { status: 100, reason: 'Trying', headers: [] }, source, '')
      if (bytes !== null) reply(bytes)
    } : undefined
    const tracked = key === null ? undefined : this.#transactions.begin(key, request, source, size, reply, transport === 'udp', trying, toTag)
    this.#inFlight++
    let response: SipResponse
    try {
      response = await redirect(this.#service, this.#policy, request, source.address)
    } catch (err) {
      if (err instanceof SipParseError) response = { status: 400, reason: 'Bad Request', headers: [['Warning', `399 kns "${err.message.replace(/"/g, "'")}"`]] }
      else {
        // A database or ledger outage: the SBC tries another server (or routes without us).
        response = { status: 503, reason: 'Service Unavailable', headers: [['Retry-After', '5']] }
        process.emitWarning(`SIP INVITE failed: ${err instanceof Error ? err.message : String(err)}`)
      }
    } finally {
      this.#inFlight--
    }
    const span = activeSpan().setAttribute('sip.response.status_code', response.status)
    if (response.status >= 500) markFailed(span, String(response.status))
    if (tracked !== undefined) {
      const bytes = renderBounded(request, response, source, toTag)
      if (bytes === null) return this.#drop('oversized_answer')
      // Cancelled meanwhile: the 487 went out instead.
      if (!tracked.finish(bytes)) return
      this.#count(request.method, response.status, transport)
      return
    }
    send(response)
  }

  async #signingBinding(): Promise<SigningBinding | null> {
    const id = this.#settings.signingKeyId
    if (id === null) return null
    const now = Date.now()
    if (this.#binding !== undefined && now < this.#binding.until) return this.#binding.value
    const key = await findApiKey(this.#service.db, id)
    const value = key === null || key.revokedAt !== null || !key.scopes.includes('signing') ? null : key.signing
    this.#binding = { value, until: now + SIGNING_BINDING_TTL_MS }
    return value
  }
}
