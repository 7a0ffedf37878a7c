/**
 * One error hierarchy for the whole service. Every error carries a stable `code`
 * (part of the public API, documented in the OpenAPI) and the HTTP status it maps to.
 */
export class KnsError extends Error {
  readonly code: string = 'KNS_ERROR'
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

/** An operation the configured ledger cannot perform (e.g. minting on Sui). */
export class LedgerUnsupportedError extends KnsError {
  override readonly code = 'LEDGER_UNSUPPORTED'
  override readonly status = 501
}

export class ConfigError extends KnsError {
  override readonly code = 'INVALID_CONFIG'
}

/** All codes, for the OpenAPI document. */
export const ERROR_CODES = [
  'INVALID_REQUEST', 'UNAUTHORIZED', 'FORBIDDEN', 'NOT_FOUND', 'CONFLICT', 'PAYLOAD_TOO_LARGE',
  'UNSUPPORTED_MEDIA_TYPE', 'RATE_LIMITED', 'LEDGER_UNAVAILABLE', 'LEDGER_UNSUPPORTED', 'INTERNAL',
] as const
