import { lookup as dnsLookup, type LookupAddress } from 'node:dns'
import http from 'node:http'
import https from 'node:https'
import { BlockList, isIP, type LookupFunction } from 'node:net'
import tls from 'node:tls'
import { inSpan, markFailed, tracingOn, withTraceHeaders } from './tracing.ts'

/**
 * The one client for outbound requests to URLs a caller influences (webhook endpoints now;
 * x5u certificates and CRLs next). Such a URL is an attacker's way into our network, so:
 * - https only;
 * - no loopback, private, shared, link-local (cloud metadata), multicast or reserved address,
 *   checked on every address the name resolves to *at connect time*, in the socket's own DNS
 *   lookup (a name that resolved to a public address when the URL was saved and to 127.0.0.1
 *   now is refused: no DNS rebinding), and on literal addresses before connecting;
 * - a deadline for the whole exchange, a cap on the response body, and no redirect followed
 *   unless the caller allows a few (x5u: 2), each hop checked as the first.
 * `allowPrivate` and `allowHttp` lift the first two rules for development and tests
 * (WEBHOOK_ALLOW_PRIVATE, X5U_ALLOW_PRIVATE, X5U_ALLOW_HTTP).
 */
export interface OutboundOptions {
  /** Loopback/private/... addresses allowed (development and tests). */
  allowPrivate: boolean
  /** `http:` URLs allowed besides `https:` (development and tests); default: as allowPrivate. */
  allowHttp?: boolean
  /** Redirects followed (each hop checked like the first); default 0: a 3xx is the answer. */
  maxRedirects?: number
  /** Extra trusted TLS roots (PEM), e.g. a test PKI's; the system's roots otherwise. */
  ca?: string
  /** Deadline of the whole exchange, redirects included. */
  timeoutMs: number
  /** Bytes of the response body kept; the rest is not read (the connection is dropped). */
  maxResponseBytes: number
  /** The resolver (tests give a fake one to exercise the connect-time check). */
  lookup?: typeof dnsLookup
  /**
   * Which resolved or literal addresses may be reached; default isPublicAddress. Tests narrow
   * it (e.g. one loopback address allowed, another not) to watch a redirect hop refused.
   */
  addressAllowed?: (address: string) => boolean
}

export interface OutboundResponse {
  status: number
  headers: http.IncomingHttpHeaders
  body: Buffer
  /** The body was longer than maxResponseBytes. */
  truncated: boolean
}

export type OutboundRefusal = 'URL_NOT_ALLOWED' | 'ADDRESS_NOT_ALLOWED'

/**
 * A short reason for a failed outbound request, never the URL (it may carry a token) nor a raw
 * stack: the refusal's own message, the timeout's, or the network error's code.
 */
export function describeOutboundFailure(err: unknown): string {
  if (err instanceof OutboundRefusedError || (err instanceof Error && err.name === 'TimeoutError')) return err.message
  const code = (err as NodeJS.ErrnoException | undefined)?.code
  return typeof code === 'string' ? `network error (${code})` : 'network error'
}

/** The request was not sent: the URL or the address it resolves to is not allowed. */
export class OutboundRefusedError extends Error {
  readonly code: OutboundRefusal
  constructor(code: OutboundRefusal, message: string) {
    super(message)
    this.name = 'OutboundRefusedError'
    this.code = code
  }
}

/** Addresses no outbound request may reach (RFC 6890 special-purpose registries, roughly). */
const BLOCKED = new BlockList()
for (const [net, prefix] of [
  ['0.0.0.0', 8], ['10.0.0.0', 8], ['100.64.0.0', 10], ['127.0.0.0', 8], ['169.254.0.0', 16], ['172.16.0.0', 12],
  ['192.0.0.0', 24], ['192.0.2.0', 24], ['192.88.99.0', 24], ['192.168.0.0', 16], ['198.18.0.0', 15], ['198.51.100.0', 24],
  ['203.0.113.0', 24], ['224.0.0.0', 4], ['240.0.0.0', 4],
] as const) BLOCKED.addSubnet(net, prefix, 'ipv4')
for (const [net, prefix] of [
  // Not ::ffff:0:0/96 or 64:ff9b::/96 here: BlockList would apply them to every IPv4 address;
  // the IPv4 inside such an address is checked as IPv4 instead (embeddedIpv4).
  // ::/96: the deprecated IPv4-compatible form (::a.b.c.d), which includes :: and ::1.
  ['::', 96], ['64:ff9b:1::', 48], ['100::', 64], ['2001::', 23],
  ['2001:db8::', 32], ['2002::', 16], ['fc00::', 7], ['fe80::', 10], ['fec0::', 10], ['ff00::', 8],
] as const) BLOCKED.addSubnet(net, prefix, 'ipv6')

/** The IPv4 address inside an IPv4-mapped (::ffff:0:0/96), IPv4-translated (::ffff:0:0:0/96) or NAT64 (64:ff9b::/96) address, else null. */
function embeddedIpv4(address: string): string | null {
  const match = /^(?:::ffff:0:|::ffff:|64:ff9b::)(.+)$/i.exec(address.toLowerCase())
  if (match === null) return null
  const tail = match[1]!
  if (isIP(tail) === 4) return tail
  const hextets = /^([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(tail)
  if (hextets === null) return null
  const high = parseInt(hextets[1]!, 16)
  const low = parseInt(hextets[2]!, 16)
  return `${high >> 8}.${high & 255}.${low >> 8}.${low & 255}`
}

/** Whether an outbound request may connect to `address` (an IP literal). */
export function isPublicAddress(address: string): boolean {
  const family = isIP(address)
  if (family === 0) return false
  if (family === 4) return !BLOCKED.check(address, 'ipv4')
  const v4 = embeddedIpv4(address)
  if (v4 !== null) return isPublicAddress(v4)
  return !BLOCKED.check(address, 'ipv6')
}

/**
 * The URL's static rules, for saving it (a webhook subscription) and again before each
 * request: an absolute https URL without credentials, and not a literal address that is
 * never allowed. A name is checked when it is resolved, at connect time.
 */
export function checkOutboundUrl(raw: string, allowPrivate: boolean, allowHttp = allowPrivate, addressAllowed: (address: string) => boolean = isPublicAddress): URL {
  let url: URL
  try {
    url = new URL(raw)
  } catch {
    throw new OutboundRefusedError('URL_NOT_ALLOWED', 'not an absolute URL')
  }
  if (url.protocol !== 'https:' && !(allowHttp && url.protocol === 'http:')) {
    throw new OutboundRefusedError('URL_NOT_ALLOWED', 'only https URLs are allowed')
  }
  if (url.username !== '' || url.password !== '') throw new OutboundRefusedError('URL_NOT_ALLOWED', 'URLs with credentials are not allowed')
  const host = literalHost(url)
  if (!allowPrivate && host !== null && !addressAllowed(host)) {
    throw new OutboundRefusedError('ADDRESS_NOT_ALLOWED', `${host} is a loopback, private, link-local or reserved address`)
  }
  return url
}

/** The URL's host when it is an IP literal (IPv6 without its brackets), else null. */
function literalHost(url: URL): string | null {
  const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname
  return isIP(host) === 0 ? null : host
}

/** The refusal for a name that resolved to `addresses`, or null when every one may be reached. */
function refusalOfResolved(hostname: string, addresses: readonly LookupAddress[], allowed: (address: string) => boolean): OutboundRefusedError | null {
  const refused = addresses.find((a) => !allowed(a.address))
  if (refused === undefined && addresses.length > 0) return null
  // The address itself stays out of the message: it reaches callers (debug reports, the
  // webhook test), and would tell them what an internal name resolves to.
  return new OutboundRefusedError('ADDRESS_NOT_ALLOWED',
    refused === undefined ? `${hostname} resolves to no address` : `the address of ${hostname} is not allowed (only public addresses are)`)
}

/** How long saving a URL waits for its name to resolve before giving up the early check. */
const SAVE_LOOKUP_TIMEOUT_MS = 3000

/**
 * The check made when a URL is saved (a webhook subscription): the static rules, then, for a
 * name, the addresses it resolves to now, under the same rule the connect-time lookup applies
 * (`https://localhost` is refused here, not at every delivery). The connect-time check stays
 * the guard (a name may resolve elsewhere later); a name that does not resolve now (not yet
 * published, or no DNS where the check runs) is accepted, and refused at connect time if it
 * ever resolves to a refused address.
 */
export async function checkOutboundUrlResolved(
  raw: string, options: { allowPrivate: boolean; allowHttp?: boolean; lookup?: typeof dnsLookup; addressAllowed?: (address: string) => boolean },
): Promise<URL> {
  const allowed = options.addressAllowed ?? isPublicAddress
  const url = checkOutboundUrl(raw, options.allowPrivate, options.allowHttp ?? options.allowPrivate, allowed)
  if (options.allowPrivate || literalHost(url) !== null) return url
  const addresses = await resolveAll(options.lookup ?? dnsLookup, url.hostname)
  const refusal = addresses === null ? null : refusalOfResolved(url.hostname, addresses, allowed)
  if (refusal !== null) throw refusal
  return url
}

/** Every address of `hostname`, or null when it does not resolve within SAVE_LOOKUP_TIMEOUT_MS. */
function resolveAll(resolve: typeof dnsLookup, hostname: string): Promise<LookupAddress[] | null> {
  return new Promise((done) => {
    const timer = setTimeout(() => done(null), SAVE_LOOKUP_TIMEOUT_MS)
    timer.unref()
    resolve(hostname, { all: true }, (err, addresses: LookupAddress[]) => {
      clearTimeout(timer)
      done(err ? null : addresses)
    })
  })
}

/** A socket lookup that refuses the name when any address it resolves to is not public. */
function guardedLookup(resolve: typeof dnsLookup, allowed: (address: string) => boolean): LookupFunction {
  return (hostname, options, callback) => {
    resolve(hostname, { all: true, family: options.family ?? 0, hints: options.hints ?? 0 }, (err, addresses: LookupAddress[]) => {
      if (err) return callback(err, '', 0)
      const error = refusalOfResolved(hostname, addresses, allowed)
      if (error !== null) return callback(error as NodeJS.ErrnoException, '', 0)
      if (options.all === true) return (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, addresses)
      callback(null, addresses[0]!.address, addresses[0]!.family)
    })
  }
}

/**
 * Keep-alive pools: a busy endpoint (hundreds of deliveries a second) reuses its connections.
 * One per protocol and set of extra roots. A pooled socket only ever reaches an address that
 * was checked when it connected.
 */
const agents = new Map<string, http.Agent>()
function agentFor(protocol: string, ca: string | undefined): http.Agent {
  const key = `${protocol}|${ca ?? ''}`
  let agent = agents.get(key)
  if (agent === undefined) {
    agent = protocol === 'https:'
      ? new https.Agent({ keepAlive: true, maxSockets: 64, ...(ca === undefined ? {} : { ca: [...tls.rootCertificates, ca] }) })
      : new http.Agent({ keepAlive: true, maxSockets: 64 })
    agents.set(key, agent)
  }
  return agent
}

const REDIRECTS = new Set([301, 302, 303, 307, 308])

export interface OutboundInit {
  method: string
  headers: Record<string, string>
  body?: string | Buffer
  /**
   * What the request is for, in its trace span's name and `kns.outbound.purpose` (x5u, crl,
   * jcard, webhook, sms). A purpose of PUBLIC_URL_PURPOSES adds the URL's path to the span:
   * those URLs are published (in calls and certificates); any other may carry a token in its path.
   */
  purpose?: string
}

const PUBLIC_URL_PURPOSES = new Set(['x5u', 'crl', 'jcard'])

/**
 * One request under the rules above; with `maxRedirects`, the redirects it names (each a new
 * request under the same rules, within the same deadline; 303 turns into GET). Throws
 * OutboundRefusedError (not sent), or a network or timeout error.
 */
export async function outboundRequest(
  raw: string, init: OutboundInit, options: OutboundOptions,
): Promise<OutboundResponse & { url: string }> {
  const deadline = Date.now() + options.timeoutMs
  let url = raw
  let request = init
  for (let hop = 0; ; hop++) {
    const left = deadline - Date.now()
    if (left <= 0) throw timeoutError(options.timeoutMs)
    const response = tracingOn() ? await tracedRequest(url, request, options, deadline) : await requestOnFreshSocket(url, request, options, deadline)
    const location = response.headers.location
    if (!REDIRECTS.has(response.status) || typeof location !== 'string' || hop >= (options.maxRedirects ?? 0)) return { ...response, url }
    url = new URL(location, url).href
    if (response.status === 303) request = { method: 'GET', headers: init.headers, ...(init.purpose === undefined ? {} : { purpose: init.purpose }) }
  }
}

/**
 * One hop as a client span, its `traceparent` sent: the host and port, the method, the status
 * and the purpose; the path only for published URLs, never the query.
 */
function tracedRequest(url: string, init: OutboundInit, options: OutboundOptions, deadline: number): Promise<OutboundResponse> {
  const purpose = init.purpose ?? 'http'
  let where: URL | undefined
  try {
    where = new URL(url)
  } catch {
    // refused below, in the span
  }
  return inSpan(`${init.method} ${purpose}`, {
    kind: 'client',
    attributes: {
      'http.request.method': init.method, 'kns.outbound.purpose': purpose,
      'server.address': where?.hostname, 'server.port': where === undefined ? undefined : Number(where.port || (where.protocol === 'https:' ? 443 : 80)),
      'url.scheme': where?.protocol.slice(0, -1), 'url.path': where !== undefined && PUBLIC_URL_PURPOSES.has(purpose) ? where.pathname : undefined,
    },
  }, async (span) => {
    const response = await requestOnFreshSocket(url, { ...init, headers: withTraceHeaders(init.headers) }, options, deadline)
    span.setAttribute('http.response.status_code', response.status)
    if (response.status >= 400) markFailed(span, String(response.status))
    return response
  })
}

/**
 * A pooled keep-alive connection that the other side closed just as it was reused (its idle
 * timeout, e.g. 5 s for a Node server, racing our next request) fails with ECONNRESET before
 * any answer. The request goes again (on the next connection: a new one once the pool's stale
 * ones are used up, at most MAX_STALE_SOCKETS tries), as Node's documentation of
 * `request.reusedSocket` advises: a login code to an SMS gateway was lost this way in the
 * cluster test (nothing retries a code; a webhook would have been late by a retry interval).
 * The peer may have read the request before closing, so a repeat is possible: an SMS
 * gateway may send the same code twice, a webhook may arrive twice (same webhook-id).
 */
async function requestOnFreshSocket(
  url: string, init: { method: string; headers: Record<string, string>; body?: string | Buffer }, options: OutboundOptions, deadline: number,
): Promise<OutboundResponse> {
  // Several pooled connections may have been closed together: each try uses one up (a failed socket leaves the pool).
  for (let attempt = 1; ; attempt++) {
    const left = deadline - Date.now()
    if (left <= 0) throw timeoutError(options.timeoutMs)
    try {
      return await requestOnce(url, init, { ...options, timeoutMs: left })
    } catch (err) {
      if (!(err instanceof StaleSocketError)) throw err
      if (attempt >= MAX_STALE_SOCKETS) throw err.cause
    }
  }
}

const MAX_STALE_SOCKETS = 4

/** The reused connection was reset before an answer: see requestOnFreshSocket. `cause` is the socket's error. */
class StaleSocketError extends Error {
  constructor(cause: Error) {
    super(cause.message, { cause })
  }
}

const STALE_SOCKET_CODES = new Set(['ECONNRESET', 'EPIPE'])

function timeoutError(ms: number): Error {
  const error = new Error(`no complete answer within ${ms} ms`)
  error.name = 'TimeoutError'
  return error
}

function requestOnce(
  raw: string, init: { method: string; headers: Record<string, string>; body?: string | Buffer }, options: OutboundOptions,
): Promise<OutboundResponse> {
  const url = checkOutboundUrl(raw, options.allowPrivate, options.allowHttp ?? options.allowPrivate, options.addressAllowed)
  const transport = url.protocol === 'https:' ? https : http
  return new Promise<OutboundResponse>((resolve, reject) => {
    let settled = false
    let answered = false
    const finish = (error: Error | null, response?: OutboundResponse) => {
      if (settled) return
      settled = true
      clearTimeout(deadline)
      if (error !== null) reject(error)
      else resolve(response!)
    }
    const request = transport.request(url, {
      method: init.method,
      headers: init.headers,
      agent: agentFor(url.protocol, options.ca),
      ...(options.allowPrivate ? {} : { lookup: guardedLookup(options.lookup ?? dnsLookup, options.addressAllowed ?? isPublicAddress) }),
    }, (response) => {
      answered = true
      const chunks: Buffer[] = []
      let size = 0
      let truncated = false
      const done = () => finish(null, { status: response.statusCode ?? 0, headers: response.headers, body: Buffer.concat(chunks), truncated })
      response.on('data', (chunk: Buffer) => {
        if (truncated) return
        const room = options.maxResponseBytes - size
        if (chunk.length > room) {
          chunks.push(chunk.subarray(0, Math.max(0, room)))
          size = options.maxResponseBytes
          truncated = true
          // The answer is known (its status); the rest of the body is not read.
          request.destroy()
          done()
          return
        }
        chunks.push(chunk)
        size += chunk.length
      })
      response.on('end', done)
      response.on('error', (error) => finish(error))
    })
    const deadline = setTimeout(() => {
      const error = timeoutError(options.timeoutMs)
      request.destroy(error)
      finish(error)
    }, options.timeoutMs)
    request.on('error', (error: NodeJS.ErrnoException) => {
      const stale = request.reusedSocket && !answered && STALE_SOCKET_CODES.has(error.code ?? '')
      finish(stale ? new StaleSocketError(error) : error)
    })
    request.end(init.body)
  })
}
