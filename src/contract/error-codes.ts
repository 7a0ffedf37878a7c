/**
 * Every code of the service's one error shape, with the HTTP status it comes with and what it
 * means: the error classes (src/errors.ts) can carry only these (their `code` is typed by this list),
 * and the OpenAPI document and docs/failure-codes.md are generated from it. Part of the
 * contract (the pages may show them); src/errors.ts holds the classes. `http: false`
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
  INVALID_ID_TOKEN: { status: 400, meaning: 'the id_token is not a valid, unexpired token of this service\'s OpenID provider (signature, issuer, audience, expiry)' },
  LOGIN_CODE_INVALID: { status: 400, meaning: 'the one-time login code is wrong; the message says how many tries this code has left' },
  LOGIN_CODE_EXPIRED: { status: 400, meaning: 'the one-time login code has expired, was used, or has no tries left: ask for a new one' },
  PROOF_REFUSED: { status: 422, meaning: 'the zkLogin prover refused the inputs (token, nonce, key, epoch or salt do not fit together)' },
  RATE_LIMITED: { status: 429, meaning: 'over the key\'s or the client IP\'s rate (see `Retry-After`)' },
  INTERNAL: { status: 500, meaning: 'a fault of the service (logged with the request ID)' },
  LEDGER_UNSUPPORTED: { status: 501, meaning: 'the configured ledger cannot do this (e.g. mint on Sui)' },
  LEDGER_UNAVAILABLE: { status: 503, meaning: 'the ledger did not answer, answered an error, or not in time: retry' },
  PROVER_UNAVAILABLE: { status: 503, meaning: 'the zkLogin prover (ZKLOGIN_PROVER_URL) did not answer, answered an error, or not in time: retry' },
  OVERLOADED: { status: 503, meaning: 'the server is at its limit of connections or requests in flight (admission control): retry after `Retry-After`' },
  DATABASE_UNAVAILABLE: { status: 503, meaning: 'the database cannot be reached: retry (see `Retry-After`)' },
  INVALID_CONFIG: { status: 500, meaning: 'CLI and start-up: a configuration value is not valid (the variable is named)', http: false },
} as const satisfies Record<string, { status: number; meaning: string; http?: false }>

export type ErrorCode = keyof typeof ERROR_CODES

/** The codes an HTTP answer can carry, in the list's order. */
export const HTTP_ERROR_CODES = (Object.keys(ERROR_CODES) as ErrorCode[]).filter((code) => !('http' in ERROR_CODES[code]))
