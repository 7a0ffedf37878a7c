/**
 * One error hierarchy for the whole service. Every error carries a stable `code`
 * (part of the public API, documented in the OpenAPI) and the HTTP status it maps to.
 */
export class KnsError extends Error {
  readonly code: ErrorCode = 'INTERNAL'
  readonly status: number = 500
  /** JSON pointer-ish name of the offending field, when one field is to blame. */
  field?: string

  constructor(message: string, options?: { field?: string; cause?: unknown }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause })
    this.name = new.target.name
    if (options?.field !== undefined) this.field = options.field
  }
}

export class ValidationError extends KnsError {
  override readonly code = 'INVALID_REQUEST'
  override readonly status = 400
}

export class UnauthorizedError extends KnsError {
  override readonly code = 'UNAUTHORIZED'
  override readonly status = 401
}

export class ForbiddenError extends KnsError {
  override readonly code = 'FORBIDDEN'
  override readonly status = 403
}

export class NotFoundError extends KnsError {
  override readonly code = 'NOT_FOUND'
  override readonly status = 404
}

export class ConflictError extends KnsError {
  override readonly code = 'CONFLICT'
  override readonly status = 409
}

/**
 * The request is well formed, but storing it would carry a stored total past what the database
 * can hold exactly (a statistics bucket past 2^63 - 1 bytes): nothing of it is stored.
 */
export class ValueOutOfRangeError extends KnsError {
  override readonly code = 'VALUE_OUT_OF_RANGE'
  override readonly status = 422
}

export class PayloadTooLargeError extends KnsError {
  override readonly code = 'PAYLOAD_TOO_LARGE'
  override readonly status = 413
}

export class UnsupportedMediaTypeError extends KnsError {
  override readonly code = 'UNSUPPORTED_MEDIA_TYPE'
  override readonly status = 415
}

export class RateLimitedError extends KnsError {
  override readonly code = 'RATE_LIMITED'
  override readonly status = 429
  readonly retryAfterS: number
  constructor(message: string, retryAfterS: number) {
    super(message)
    this.retryAfterS = retryAfterS
  }
}

/** The ledger could not be reached or answered garbage: not the caller's fault. */
export class LedgerUnavailableError extends KnsError {
  override readonly code = 'LEDGER_UNAVAILABLE'
  override readonly status = 503
}

/** The database cannot be reached (restarting, down, out of connections): retry later. */
export class DatabaseUnavailableError extends KnsError {
  override readonly code = 'DATABASE_UNAVAILABLE'
  override readonly status = 503
}

/** The route exists, but not for this method; the answer carries `Allow`. */
export class MethodNotAllowedError extends KnsError {
  override readonly code = 'METHOD_NOT_ALLOWED'
  override readonly status = 405
  readonly allow: readonly string[]
  constructor(message: string, allow: readonly string[]) {
    super(message)
    this.allow = allow
  }
}

/** The client was too slow to send its request, or its headers were too large (Node's HTTP server). */
export class RequestTimeoutError extends KnsError {
  override readonly code = 'REQUEST_TIMEOUT'
  override readonly status = 408
}

export class HeadersTooLargeError extends KnsError {
  override readonly code = 'HEADERS_TOO_LARGE'
  override readonly status = 431
}

/** An operation the configured ledger cannot perform (e.g. minting on Sui). */
export class LedgerUnsupportedError extends KnsError {
  override readonly code = 'LEDGER_UNSUPPORTED'
  override readonly status = 501
}

export class ConfigError extends KnsError {
  override readonly code = 'INVALID_CONFIG'
}

/**
 * Every code of the service's one error shape, with the HTTP status it comes with and what it
 * means: the error classes above can carry only these (their `code` is typed by this list),
 * and the OpenAPI document and docs/failure-codes.md are generated from it. `http: false`
 * marks a code only the CLI reports.
 */
export const ERROR_CODES = {
  INVALID_REQUEST: { status: 400, meaning: 'the request is malformed or a value is not valid; `field` names it' },
  UNAUTHORIZED: { status: 401, meaning: 'no API key, or an unknown or revoked one' },
  FORBIDDEN: { status: 403, meaning: 'the key lacks the scope, or the signer may not do this' },
  NOT_FOUND: { status: 404, meaning: 'no such route, approval, number or token' },
  METHOD_NOT_ALLOWED: { status: 405, meaning: 'the route exists for other methods (see `Allow`)' },
  NOT_ACCEPTABLE: { status: 406, meaning: 'the Accept header excludes JSON' },
  REQUEST_TIMEOUT: { status: 408, meaning: 'the request did not arrive within REQUEST_TIMEOUT_MS / HEADERS_TIMEOUT_MS' },
  CONFLICT: { status: 409, meaning: 'the request conflicts with what is stored (e.g. a referenceNumber reused with another body)' },
  VALUE_OUT_OF_RANGE: { status: 422, meaning: 'storing it would carry a statistics bucket past 2^63 - 1 bytes; nothing was stored' },
  PAYLOAD_TOO_LARGE: { status: 413, meaning: 'the body is over the route\'s limit' },
  UNSUPPORTED_MEDIA_TYPE: { status: 415, meaning: 'the Content-Type is not one the route takes' },
  HEADERS_TOO_LARGE: { status: 431, meaning: 'the request headers are too large' },
  RATE_LIMITED: { status: 429, meaning: 'over the key\'s or the client IP\'s rate (see `Retry-After`)' },
  INTERNAL: { status: 500, meaning: 'a fault of the service (logged with the request ID)' },
  LEDGER_UNSUPPORTED: { status: 501, meaning: 'the configured ledger cannot do this (e.g. mint on Sui)' },
  LEDGER_UNAVAILABLE: { status: 503, meaning: 'the ledger did not answer, answered an error, or not in time: retry' },
  DATABASE_UNAVAILABLE: { status: 503, meaning: 'the database cannot be reached: retry (see `Retry-After`)' },
  INVALID_CONFIG: { status: 500, meaning: 'CLI and start-up: a configuration value is not valid (the variable is named)', http: false },
} as const satisfies Record<string, { status: number; meaning: string; http?: false }>

export type ErrorCode = keyof typeof ERROR_CODES

/** The codes an HTTP answer can carry, in the list's order. */
export const HTTP_ERROR_CODES = (Object.keys(ERROR_CODES) as ErrorCode[]).filter((code) => !('http' in ERROR_CODES[code]))
