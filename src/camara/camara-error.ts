/**
 * An error of the CAMARA APIs, answered in CAMARA's shape (Commonalities 0.6:
 * `{ status, code, message }`) by the CAMARA routes' own error handler; the rest of the
 * API keeps the service's shape (src/http/error-body.ts).
 */
export type CamaraCode =
  | 'INVALID_ARGUMENT' | 'OUT_OF_RANGE' | 'INVALID_PROTOCOL' | 'INVALID_CREDENTIAL' | 'INVALID_TOKEN' | 'INVALID_SINK'
  | 'UNAUTHENTICATED'
  | 'PERMISSION_DENIED'
  | 'NOT_FOUND' | 'IDENTIFIER_NOT_FOUND'
  | 'METHOD_NOT_ALLOWED'
  | 'CONFLICT' | 'ALREADY_EXISTS'
  | 'UNSUPPORTED_MEDIA_TYPE'
  | 'SERVICE_NOT_APPLICABLE' | 'MISSING_IDENTIFIER' | 'UNNECESSARY_IDENTIFIER'
  | 'TOO_MANY_REQUESTS' | 'QUOTA_EXCEEDED'
  | 'INTERNAL' | 'UNAVAILABLE'

export class CamaraError extends Error {
  readonly status: number
  readonly code: CamaraCode
  /** Seconds, for a 429 or 503 (the Retry-After header). */
  readonly retryAfterS: number | undefined

  constructor(status: number, code: CamaraCode, message: string, retryAfterS?: number) {
    super(message)
    this.name = 'CamaraError'
    this.status = status
    this.code = code
    this.retryAfterS = retryAfterS
  }
}
