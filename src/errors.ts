import type { ErrorCode } from './contract/error-codes.ts'

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

/** Admission control refused the connection or request: the server is at its limit (src/http/admission.ts). */
export class OverloadedError extends KnsError {
  override readonly code = 'OVERLOADED'
  override readonly status = 503
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

/** An id_token given to the salt service or the prover step is not one of this provider's, or no longer valid. */
export class InvalidIdTokenError extends KnsError {
  override readonly code = 'INVALID_ID_TOKEN'
  override readonly status = 400
}

/** A wrong one-time login code; the code stays usable while it has tries left. */
export class LoginCodeInvalidError extends KnsError {
  override readonly code = 'LOGIN_CODE_INVALID'
  override readonly status = 400
  readonly attemptsLeft: number
  constructor(message: string, attemptsLeft: number) {
    super(message, { field: 'code' })
    this.attemptsLeft = attemptsLeft
  }
}

/** The login code expired, was used, or ran out of tries: only a new code helps. */
export class LoginCodeExpiredError extends KnsError {
  override readonly code = 'LOGIN_CODE_EXPIRED'
  override readonly status = 400
}

/** The zkLogin prover said no to the inputs: not retryable with the same ones. */
export class ProofRefusedError extends KnsError {
  override readonly code = 'PROOF_REFUSED'
  override readonly status = 422
}

/** The zkLogin prover could not be asked (down, timed out, answered a fault of its own): retry. */
export class ProverUnavailableError extends KnsError {
  override readonly code = 'PROVER_UNAVAILABLE'
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

export { ERROR_CODES, HTTP_ERROR_CODES, type ErrorCode } from './contract/error-codes.ts'
