import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { isDatabaseUnavailable } from '../db/unavailable.ts'
import { DatabaseUnavailableError, KnsError, type ErrorCode, MethodNotAllowedError, NotFoundError, OverloadedError, RateLimitedError } from '../errors.ts'
import { PATTERN_WORDS } from '../contract/text.ts'
import { errorBody } from './error-body.ts'
import { methodNotAllowed, trackRouteMethods, type OtherErrorShape } from './transport.ts'


/** Fastify's own 4xx errors, mapped to our stable codes. */
const FASTIFY_CODES: Record<number, ErrorCode> = {
  400: 'INVALID_REQUEST', 404: 'NOT_FOUND', 405: 'METHOD_NOT_ALLOWED', 406: 'NOT_ACCEPTABLE',
  413: 'PAYLOAD_TOO_LARGE', 415: 'UNSUPPORTED_MEDIA_TYPE', 429: 'RATE_LIMITED',
}

function send(reply: FastifyReply, request: FastifyRequest, status: number, code: ErrorCode, text: string, field?: string): FastifyReply {
  return reply.status(status).send(errorBody(code, text, String(request.id), field))
}

/** `body/phoneNumber must match pattern` -> field `phoneNumber`, readable message. */
function describeValidation(err: FastifyError): { field?: string; text: string } {
  const first = err.validation?.[0]
  if (first === undefined) return { text: err.message }
  const params = first.params as { missingProperty?: string; allowedValues?: unknown[]; pattern?: string }
  const path = first.instancePath.replace(/^\//, '').replace(/\//g, '.')
  const field = params.missingProperty !== undefined ? (path ? `${path}.${params.missingProperty}` : params.missingProperty) : path || undefined
  const where = err.validationContext ?? 'request'
  let text: string
  if (params.missingProperty !== undefined) text = `${where}: ${field} is required`
  else if (params.allowedValues !== undefined) text = `${where}: ${field} must be one of ${params.allowedValues.map(String).join(', ')}`
  else if (params.pattern !== undefined && PATTERN_WORDS[params.pattern] !== undefined) text = `${where}: ${field ?? 'value'} ${PATTERN_WORDS[params.pattern]}`
  else if (field === undefined) text = `${where} ${first.message ?? 'is invalid'}`
  else text = `${where}: ${field} ${first.message ?? 'is invalid'}`
  return field === undefined ? { text } : { field, text }
}

/**
 * One JSON error shape for every endpoint. The caller's mistakes get their 4xx; anything
 * else is logged with its stack and answered as a bare 500, never leaking internals.
 */
/**
 * While the database is down, every request fails the same way: one warning a second at
 * most, with how many failed since the last one, instead of a line (and a stack) per request.
 */
export class OutageLog {
  #lastAt = -Infinity
  #since = 0

  report(request: FastifyRequest, err: unknown): void {
    this.#since++
    const now = performance.now()
    if (now - this.#lastAt < 1000) return
    request.log.warn({ err, failedRequests: this.#since }, 'database unavailable: answering 503')
    this.#lastAt = now
    this.#since = 0
  }
}

/** `otherShape`: paths answered in another API's shape when no route matches (the CAMARA APIs: any version under their names). */
export function registerErrorHandling(app: FastifyInstance, otherShape: OtherErrorShape = () => undefined): void {
  const allowedMethods = trackRouteMethods(app)
  const outageLog = new OutageLog()
  app.setErrorHandler((caught: FastifyError, request, reply) => {
    let err = caught
    if (!(err instanceof KnsError) && isDatabaseUnavailable(err)) {
      outageLog.report(request, err)
      err = new DatabaseUnavailableError('the database is unavailable; retry shortly') as unknown as FastifyError
    }
    if (err instanceof KnsError) {
      if (err instanceof RateLimitedError) reply.header('retry-after', String(err.retryAfterS))
      // A client refused for its key or its rate gets its connection closed: held open, it is
      // how one keyless client pinned thousands of descriptors.
      if (err.status === 401 || err.status === 403 || err.status === 429) reply.header('connection', 'close')
      if (err instanceof MethodNotAllowedError) reply.header('allow', err.allow.join(', '))
      if (err instanceof DatabaseUnavailableError) reply.header('retry-after', '1')
      // Shed for load: expected under a flood, a line each would be the next flood.
      if (err instanceof OverloadedError) reply.header('retry-after', String(err.retryAfterS))
      if (err.status >= 500 && !(err instanceof DatabaseUnavailableError) && !(err instanceof OverloadedError)) request.log.error({ err }, 'request failed')
      return send(reply, request, err.status, err.code, err.message, err.field)
    }
    if (err.validation !== undefined) {
      const { field, text } = describeValidation(err)
      return send(reply, request, 400, 'INVALID_REQUEST', text, field)
    }
    const status = err.statusCode
    if (status !== undefined && status >= 400 && status < 500) {
      return send(reply, request, status, FASTIFY_CODES[status] ?? 'INVALID_REQUEST', err.message)
    }
    request.log.error({ err }, 'unhandled error')
    return send(reply, request, 500, 'INTERNAL', 'internal error')
  })

  // Through the error handler above, which sets Allow on a 405.
  const noRoute = (request: FastifyRequest, reply: FastifyReply) => {
    const path = request.url.split('?')[0]!
    const err = methodNotAllowed(allowedMethods, request) ?? new NotFoundError(`no route ${request.method} ${path}`)
    const other = otherShape(request, path, err)
    if (other === undefined) return reply.send(err)
    return reply.status(other.status).headers(other.headers).type('application/json; charset=utf-8').send(JSON.stringify(other.body))
  }
  // Answered before the body is read: no route means nothing to parse it for (a wrong method
  // with a malformed or huge body is still a 405, and costs nothing).
  app.addHook('onRequest', (request, reply, done) => {
    if (request.is404) noRoute(request, reply)
    else done()
  })
  app.setNotFoundHandler(noRoute)
}
