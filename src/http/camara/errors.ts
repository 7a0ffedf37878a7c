/**
 * The CAMARA routes' error handler: every error on them, whatever raised it (our hooks, the
 * app's hooks before routing, Fastify's parser and validator, the database), answered in
 * CAMARA's shape `{ status, code, message }` with a Commonalities 0.6 code. Encapsulated: the
 * rest of the API keeps the service's shape (src/http/errors.ts).
 */
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { CamaraError } from '../../camara/camara-error.ts'
import { isDatabaseUnavailable } from '../../db/unavailable.ts'
import { KnsError, MethodNotAllowedError, OverloadedError, RateLimitedError } from '../../errors.ts'
import { OutageLog } from '../errors.ts'

const INTERNAL = new CamaraError(500, 'INTERNAL', 'Unknown server error.')

/**
 * The service's errors (from the app's own hooks: admission, rate limits, the 404/405 hook) as
 * CAMARA's. A body over the route's limit has no Commonalities code (its list has no 413): it
 * is an invalid request body, 400 INVALID_ARGUMENT.
 */
function fromServiceError(err: KnsError): CamaraError {
  if (err instanceof RateLimitedError) return new CamaraError(429, 'TOO_MANY_REQUESTS', 'Rejected due to request rate limit overpassed.', err.retryAfterS)
  if (err instanceof OverloadedError) return new CamaraError(503, 'UNAVAILABLE', 'Service Unavailable: retry shortly.', err.retryAfterS)
  switch (err.status) {
    case 401: return new CamaraError(401, 'UNAUTHENTICATED', 'Request not authenticated due to missing, invalid, or expired credentials.')
    case 403: return new CamaraError(403, 'PERMISSION_DENIED', 'Client does not have sufficient permissions to perform this action.')
    case 404: return new CamaraError(404, 'NOT_FOUND', err.message)
    case 405: return new CamaraError(405, 'METHOD_NOT_ALLOWED', err.message)
    case 415: return new CamaraError(415, 'UNSUPPORTED_MEDIA_TYPE', err.message)
    case 503: return new CamaraError(503, 'UNAVAILABLE', 'Service Unavailable: retry shortly.', 1)
    default: return err.status < 500 ? new CamaraError(400, 'INVALID_ARGUMENT', err.message) : INTERNAL
  }
}

/** Fastify's own errors: its validator's, its body parser's (malformed JSON, media type, size). */
function fromFastifyError(err: FastifyError): CamaraError | undefined {
  if (err.validation !== undefined) {
    const first = err.validation[0]
    const where = `${err.validationContext ?? 'request'}${first?.instancePath ?? ''}`
    const text = `${where} ${first?.message ?? 'is invalid'}`.trim()
    // A number outside its declared range (maxAge 1-2400) is OUT_OF_RANGE, as the .feature files
    // ask; any other departure from the schema (a string for maxAge, a bad phoneNumber) INVALID_ARGUMENT.
    const ranged = first?.keyword === 'minimum' || first?.keyword === 'maximum'
    return ranged ? new CamaraError(400, 'OUT_OF_RANGE', `Client specified an invalid range: ${text}.`) : new CamaraError(400, 'INVALID_ARGUMENT', `Client specified an invalid argument: ${text}.`)
  }
  const status = err.statusCode
  if (status === undefined || status < 400 || status >= 500) return undefined
  if (status === 415) return new CamaraError(415, 'UNSUPPORTED_MEDIA_TYPE', 'The request body must be application/json.')
  if (status === 413) return new CamaraError(400, 'INVALID_ARGUMENT', 'The request body is too large.')
  if (status === 404) return new CamaraError(404, 'NOT_FOUND', 'The specified resource is not found.')
  if (status === 429) return new CamaraError(429, 'TOO_MANY_REQUESTS', 'Rejected due to request rate limit overpassed.', 1)
  return new CamaraError(400, 'INVALID_ARGUMENT', status === 400 ? `Client specified an invalid argument: ${err.message}` : 'Client specified an invalid argument, request body or query param.')
}

/** Sends `err` in CAMARA's shape, with the headers its status calls for. */
export function sendCamaraError(reply: FastifyReply, err: CamaraError, allow?: readonly string[]): FastifyReply {
  if (err.retryAfterS !== undefined) reply.header('retry-after', String(err.retryAfterS))
  // As the rest of the API: a client refused for its token or its rate gets its connection closed.
  if (err.status === 401 || err.status === 403 || err.status === 429) reply.header('connection', 'close')
  if (allow !== undefined) reply.header('allow', allow.join(', '))
  return reply.status(err.status).send({ status: err.status, code: err.code, message: err.message })
}

export function useCamaraErrors(app: FastifyInstance): void {
  const outageLog = new OutageLog()
  app.setErrorHandler((caught: FastifyError | CamaraError | KnsError, request: FastifyRequest, reply) => {
    if (caught instanceof CamaraError) return sendCamaraError(reply, caught)
    if (caught instanceof KnsError) {
      if (caught.status >= 500 && !(caught instanceof OverloadedError) && caught.status !== 503) request.log.error({ err: caught }, 'request failed')
      return sendCamaraError(reply, fromServiceError(caught), caught instanceof MethodNotAllowedError ? caught.allow : undefined)
    }
    if (isDatabaseUnavailable(caught)) {
      outageLog.report(request, caught)
      return sendCamaraError(reply, new CamaraError(503, 'UNAVAILABLE', 'Service Unavailable: retry shortly.', 1))
    }
    const known = fromFastifyError(caught)
    if (known !== undefined) return sendCamaraError(reply, known)
    request.log.error({ err: caught }, 'unhandled error')
    return sendCamaraError(reply, INTERNAL)
  })
}
