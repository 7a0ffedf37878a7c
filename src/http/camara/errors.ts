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
  if (typeof err !== 'object' || err === null) return undefined
  if (err.validation !== undefined) {
    const first = err.validation[0]
    const where = `${err.validationContext ?? 'request'}${first?.instancePath ?? ''}`
    // Worded as the validator says it (`body/maxAge must be <= 2400`): the field and the rule.
    const text = `${where} ${first?.message ?? 'is invalid'}`.trim()
    // A number outside its declared range (maxAge 1-2400) is OUT_OF_RANGE, as the .feature files
    // ask; any other departure from the schema (a string for maxAge, a bad phoneNumber) INVALID_ARGUMENT.
    const ranged = first?.keyword === 'minimum' || first?.keyword === 'maximum'
    return new CamaraError(400, ranged ? 'OUT_OF_RANGE' : 'INVALID_ARGUMENT', text)
  }
  const status = err.statusCode
  if (status === undefined || status < 400 || status >= 500) return undefined
  if (status === 415) return new CamaraError(415, 'UNSUPPORTED_MEDIA_TYPE', 'The request body must be application/json.')
  if (status === 413) return new CamaraError(400, 'INVALID_ARGUMENT', 'The request body is too large.')
  if (status === 404) return new CamaraError(404, 'NOT_FOUND', 'The specified resource is not found.')
  if (status === 429) return new CamaraError(429, 'TOO_MANY_REQUESTS', 'Rejected due to request rate limit overpassed.', 1)
  return new CamaraError(400, 'INVALID_ARGUMENT', status === 400 ? `Client specified an invalid argument: ${err.message}` : 'Client specified an invalid argument, request body or query param.')
}

/** The headers of a CAMARA error answer: Retry-After, Allow, and a closed connection for a refused client (as the rest of the API). */
export function camaraErrorHeaders(err: CamaraError, allow?: readonly string[]): Record<string, string> {
  const headers: Record<string, string> = {}
  if (err.retryAfterS !== undefined) headers['retry-after'] = String(err.retryAfterS)
  if (err.status === 401 || err.status === 403 || err.status === 429) headers.connection = 'close'
  // RFC 6750 3: what authentication a 401 wants (a bearer token from the provider), and a 403's why.
  if (err.status === 401) headers['www-authenticate'] = 'Bearer realm="camara"'
  if (err.status === 403) headers['www-authenticate'] = 'Bearer realm="camara", error="insufficient_scope"'
  if (allow !== undefined) headers.allow = allow.join(', ')
  return headers
}

export const camaraErrorBody = (err: CamaraError) => ({ status: err.status, code: err.code, message: err.message })

/** Whatever was thrown on a CAMARA route, as the CAMARA error it is answered with (and the Allow of a 405); faults logged. */
export function asCamaraError(caught: unknown, request: FastifyRequest, outageLog?: OutageLog): { error: CamaraError; allow?: readonly string[] } {
  if (caught instanceof CamaraError) return { error: caught }
  if (caught instanceof KnsError) {
    if (caught.status >= 500 && caught.status !== 503) request.log.error({ err: caught }, 'request failed')
    return { error: fromServiceError(caught), ...(caught instanceof MethodNotAllowedError ? { allow: caught.allow } : {}) }
  }
  if (isDatabaseUnavailable(caught)) {
    outageLog?.report(request, caught)
    return { error: new CamaraError(503, 'UNAVAILABLE', 'Service Unavailable: retry shortly.', 1) }
  }
  const known = fromFastifyError(caught as FastifyError)
  if (known !== undefined) return { error: known }
  request.log.error({ err: caught }, 'unhandled error')
  return { error: INTERNAL }
}

export function useCamaraErrors(app: FastifyInstance): void {
  const outageLog = new OutageLog()
  app.setErrorHandler((caught: unknown, request: FastifyRequest, reply: FastifyReply) => {
    const { error, allow } = asCamaraError(caught, request, outageLog)
    return reply.status(error.status).headers(camaraErrorHeaders(error, allow)).send(camaraErrorBody(error))
  })
}
