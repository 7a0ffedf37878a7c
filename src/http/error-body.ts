/** The service's one error shape (ErrorBody in the OpenAPI document), for every error answer. */
import { randomUUID } from 'node:crypto'
import { STATUS_CODES } from 'node:http'
import type { ErrorCode, KnsError } from '../errors.ts'

export interface ErrorBody { success: false; code: ErrorCode; error: string; message: string; field?: string; requestId: string }

/** What an `x-request-id` header may be to be taken as the request's ID (else one is made). */
const REQUEST_ID = /^[A-Za-z0-9._:-]{1,64}$/

/** The request's ID: the client's (or its proxy's) `x-request-id` when it is a fit one, else a new one. */
export function requestIdFrom(header: string | string[] | undefined): string {
  return typeof header === 'string' && REQUEST_ID.test(header) ? header : randomUUID()
}

export function errorBody(code: ErrorCode, text: string, requestId: string, field?: string): ErrorBody {
  const body: ErrorBody = { success: false, code, error: text, message: text, requestId }
  if (field !== undefined) body.field = field
  return body
}

/**
 * A whole HTTP/1.1 response in the error shape, for a socket that has no request object to
 * answer through (a parser error, a slow client); it closes the connection.
 */
export function rawErrorResponse(err: KnsError): string {
  const body = JSON.stringify(errorBody(err.code, err.message, randomUUID()))
  return `HTTP/1.1 ${err.status} ${STATUS_CODES[err.status]}\r\nContent-Type: application/json; charset=utf-8\r\n` +
    `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`
}
