/**
 * `x-correlator` (Commonalities 0.6): a client's correlation ID, checked against CAMARA's
 * pattern and echoed on every answer of the CAMARA routes, errors included. An invalid one is
 * 400 INVALID_ARGUMENT, and is not echoed (it is not a value the header may carry).
 */
import type { IncomingHttpHeaders } from 'node:http'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { CamaraError } from '../../camara/camara-error.ts'
import { X_CORRELATOR_PATTERN } from '../../contract/camara-schemas.ts'

const X_CORRELATOR = new RegExp(X_CORRELATOR_PATTERN)

/** The request's correlator when it is a valid one; undefined when absent, or sent twice, or not valid. */
function validCorrelator(request: { headers: IncomingHttpHeaders }): string | undefined {
  const value = request.headers['x-correlator']
  return typeof value === 'string' && X_CORRELATOR.test(value) ? value : undefined
}

/**
 * In the route's guard, after the token and its scopes (a caller refused there learns nothing
 * of what the route accepts, as everywhere in the API): a correlator that is sent must be valid.
 */
export function checkCorrelator(request: FastifyRequest): void {
  const value = request.headers['x-correlator']
  if (value !== undefined && validCorrelator(request) === undefined) {
    throw new CamaraError(400, 'INVALID_ARGUMENT', 'The x-correlator header is not valid: up to 256 of letters, digits and - _ : ; . / < > { }.')
  }
}

/** The header that echoes the request's correlator: none when it sent none, an empty one or an invalid one. */
export function correlatorEcho(request: { headers: IncomingHttpHeaders }): Record<string, string> {
  const value = validCorrelator(request)
  return value === undefined || value === '' ? {} : { 'x-correlator': value }
}

/** onSend of every CAMARA answer: the correlator back, as sent. */
export function echoCorrelator(request: FastifyRequest, reply: FastifyReply, payload: unknown, done: (err: null, payload: unknown) => void): void {
  reply.headers(correlatorEcho(request))
  done(null, payload)
}
