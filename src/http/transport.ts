/**
 * What happens below the routes, in the service's one error shape: errors of Node's HTTP
 * parser (malformed requests, oversized headers, slow clients), Fastify's own (a URL that does
 * not decode), a known path asked with the wrong method (405 with Allow), and the server's
 * timeouts, which end slow clients within seconds instead of Node's minutes.
 */
import type { Socket } from 'node:net'
import type { FastifyInstance, FastifyRequest, FastifyReply, FastifyServerOptions } from 'fastify'
import { HeadersTooLargeError, KnsError, MethodNotAllowedError, RateLimitedError, RequestTimeoutError, ValidationError } from '../errors.ts'
import { errorBody, rawErrorResponse } from './error-body.ts'

export interface TransportLimits {
  /** Whole request, headers and body, from its first byte (Node's requestTimeout). */
  requestTimeoutMs: number
  /** Headers of a request, and a new connection's first request (Node's headersTimeout). */
  headersTimeoutMs: number
  /** An idle keep-alive connection between requests. */
  keepAliveTimeoutMs: number
}

/** How often Node looks for requests past their timeouts (its default, 30 s, is the slack measured as 64 s for 60 s). */
const TIMEOUT_CHECK_INTERVAL_MS = 1000

/** Node's HTTP parser failed on a request, or a client was too slow: answer in our shape, then close. */
function onClientError(err: NodeJS.ErrnoException, socket: Socket): void {
  if (err.code === 'ECONNRESET' || socket.destroyed) return
  let response: string
  if (err.code === 'ERR_HTTP_REQUEST_TIMEOUT') response = rawErrorResponse(new RequestTimeoutError('the request was not received in time'))
  else if (err.code === 'HPE_HEADER_OVERFLOW') response = rawErrorResponse(new HeadersTooLargeError('request headers are too large'))
  else response = rawErrorResponse(new ValidationError('malformed HTTP request'))
  // A response already under way on this socket cannot be followed by another.
  const inFlight = (socket as Socket & { _httpMessage?: { headersSent?: boolean } })._httpMessage
  if (socket.writable && inFlight?.headersSent !== true) socket.end(response)
  else socket.destroy()
}

/**
 * The guard (onRequest hooks) of the route whose pattern an undecodable URL still matches
 * (`/api/v1/admin/webhooks/whk_...%ZZ`), so that its key is checked before its URL is judged:
 * a caller without a valid key learns nothing about what the route accepts.
 */
export type GuardOf = (path: string, method: string) => ((request: FastifyRequest, reply: FastifyReply) => Promise<void>) | undefined

/** Fastify-level server options for the transport (merged into the app's). */
/**
 * The answer to a framework error in another shape than the service's, on the paths that have
 * one (the CAMARA routes, src/http/camara/): its status, headers and body; undefined elsewhere.
 */
export type OtherErrorShape = (request: FastifyRequest, path: string, failure: unknown) => { status: number; headers: Record<string, string>; body: unknown } | undefined

export function transportOptions(limits: TransportLimits, guardOf: GuardOf = () => undefined, otherShape: OtherErrorShape = () => undefined): Partial<FastifyServerOptions> {
  return {
    requestTimeout: limits.requestTimeoutMs,
    keepAliveTimeout: limits.keepAliveTimeoutMs,
    clientErrorHandler: onClientError,
    http: {
      headersTimeout: Math.min(limits.headersTimeoutMs, limits.requestTimeoutMs),
      connectionsCheckingInterval: TIMEOUT_CHECK_INTERVAL_MS,
      // A request without Host is refused by our own hook, in our shape (Node's own 400 has no body).
      requireHostHeader: false,
    },
    frameworkErrors: (err: Error, request: FastifyRequest, reply: FastifyReply) => {
      // FST_ERR_BAD_URL and the like: the URL could not be decoded. No route matched, so the
      // app's error handler is not in reach: the body is written here.
      const malformed = new ValidationError(`the request URL is malformed (${err.message})`)
      const path = (request.raw.url ?? '').split('?', 1)[0]!
      const send = (caught: unknown) => {
        reply.type('application/json; charset=utf-8').header('x-request-id', String(request.id))
        const other = otherShape(request, path, caught)
        if (other !== undefined) return reply.status(other.status).headers(other.headers).send(JSON.stringify(other.body))
        const failure = caught instanceof KnsError ? caught : malformed
        reply.status(failure.status)
        if (failure instanceof RateLimitedError) reply.header('retry-after', String(failure.retryAfterS))
        if (failure instanceof MethodNotAllowedError) reply.header('allow', failure.allow.join(', '))
        reply.send(JSON.stringify(errorBody(failure.code, failure.message, String(request.id))))
      }
      const guard = guardOf(path, request.method)
      if (guard === undefined) return send(malformed)
      guard(request, reply).then(() => send(malformed), send)
    },
  } as Partial<FastifyServerOptions>
}

/** Every route's URL pattern as a regular expression, for the 405 check. */
function patternOf(url: string): RegExp {
  const escaped = url.split('/').map((part) => {
    if (part === '*') return '.*'
    if (part.startsWith(':')) return '[^/]+'
    return part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
  }).join('/')
  return new RegExp(`^${escaped}$`)
}

/**
 * Records every route's guard (its onRequest hooks), by pattern and method, for GuardOf.
 * Returns the lookup; routes registered later are found too.
 */
export function trackRouteGuards(app: FastifyInstance): GuardOf {
  const guards: Array<{ pattern: RegExp; methods: Set<string>; hooks: Array<(request: FastifyRequest, reply: FastifyReply) => Promise<void>> }> = []
  app.addHook('onRoute', (route) => {
    const hooks = [route.onRequest ?? []].flat() as unknown as Array<(request: FastifyRequest, reply: FastifyReply) => Promise<void>>
    if (hooks.length > 0) guards.push({ pattern: patternOf(route.url), methods: new Set([route.method].flat()), hooks })
  })
  return (path, method) => {
    const found = guards.find((g) => g.methods.has(method) && g.pattern.test(path))
    if (found !== undefined) return async (request, reply) => { for (const hook of found.hooks) await hook(request, reply) }
    // A known path asked with another method: 405, as for a URL that decodes.
    const allowed = new Set(guards.filter((g) => g.pattern.test(path)).flatMap((g) => [...g.methods]))
    if (allowed.size === 0) return undefined
    if (allowed.has('GET')) allowed.add('HEAD')
    const allow = [...allowed].sort()
    return async () => { throw new MethodNotAllowedError(`${method} is not allowed here (allowed: ${allow.join(', ')})`, allow) }
  }
}

/**
 * Records every route's methods, so that a request the router does not match can be told
 * apart: a known path with another method (405 + Allow) from an unknown path (404).
 */
export function trackRouteMethods(app: FastifyInstance): (path: string) => string[] {
  const routes = new Map<string, { pattern: RegExp; methods: Set<string> }>()
  app.addHook('onRoute', (route) => {
    let entry = routes.get(route.url)
    if (entry === undefined) routes.set(route.url, entry = { pattern: patternOf(route.url), methods: new Set() })
    for (const method of [route.method].flat()) entry.methods.add(method)
  })
  return (path) => {
    const allowed = new Set<string>()
    for (const { pattern, methods } of routes.values()) if (pattern.test(path)) for (const m of methods) allowed.add(m)
    if (allowed.has('GET')) allowed.add('HEAD')
    return [...allowed].sort()
  }
}

/** 405 for a known path asked with a method it does not take; undefined when the path is unknown. */
export function methodNotAllowed(allowedFor: (path: string) => string[], request: FastifyRequest): MethodNotAllowedError | undefined {
  const path = request.url.split('?', 1)[0]!
  const allow = allowedFor(path)
  if (allow.length === 0) return undefined
  return new MethodNotAllowedError(`${request.method} is not allowed on ${path}; use ${allow.join(', ')}`, allow)
}

/** HTTP/1.1 requests without a Host header (RFC 9112 requires one; HTTP/1.0 may omit it): refused before anything else runs. */
export function requireHost(request: FastifyRequest, _reply: FastifyReply, done: (err?: Error) => void): void {
  const missing = request.headers.host === undefined || request.headers.host === ''
  if (missing && request.raw.httpVersion !== '1.0') done(new ValidationError('the Host header is required'))
  else done()
}
