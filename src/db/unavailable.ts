/**
 * Errors that mean "the database cannot be reached right now", as opposed to a bad statement
 * or a constraint: the request is answered 503 DATABASE_UNAVAILABLE (retry later), not 500.
 */

/** SQLSTATE codes of an unreachable or unwilling server (PostgreSQL appendix A); class 08 is matched whole. */
const UNAVAILABLE_SQLSTATES = new Set([
  '57P01', // admin_shutdown (a fast stop terminates every session)
  '57P02', // crash_shutdown
  '57P03', // cannot_connect_now (starting up, shutting down, in recovery)
  '53000', // insufficient_resources
  '53100', // disk_full
  '53200', // out_of_memory
  '53300', // too_many_connections
  '25006', // read_only_sql_transaction: a write reached a standby (failover in progress)
])

/** Socket-level failures of the client. */
const UNAVAILABLE_ERRNOS = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN', 'ENOTFOUND'])

/** node-postgres reports a lost or timed-out connection only in its message. */
const UNAVAILABLE_MESSAGES = [
  'Connection terminated', // ... unexpectedly; ... due to connection timeout (the pool's connectionTimeoutMillis)
  'timeout exceeded when trying to connect', // no free pooled connection within connectionTimeoutMillis
  'Query read timeout', // no answer within query_timeout (DATABASE_QUERY_TIMEOUT_MS)
  'Client has encountered a connection error and is not queryable',
  'Client was closed and is not queryable',
  'Cannot use a pool after calling end on the pool',
]

/** node:sqlite: SQLITE_BUSY (primary result code 5), another process held the write lock past busy_timeout. */
const SQLITE_BUSY = 5

/** Wrapped errors: the pool's connection timeout carries the socket error as `cause`; a connection tried on several addresses fails as an AggregateError. */
const MAX_DEPTH = 3

export function isDatabaseUnavailable(err: unknown, depth = 0): boolean {
  if (typeof err !== 'object' || err === null || depth > MAX_DEPTH) return false
  const e = err as { code?: unknown; message?: unknown; errcode?: unknown; cause?: unknown; errors?: unknown }
  if (typeof e.code === 'string') {
    if (UNAVAILABLE_SQLSTATES.has(e.code) || (e.code.startsWith('08') && e.code.length === 5)) return true
    if (UNAVAILABLE_ERRNOS.has(e.code)) return true
    if (e.code === 'ERR_SQLITE_ERROR' && typeof e.errcode === 'number' && (e.errcode & 0xff) === SQLITE_BUSY) return true
  }
  const message = typeof e.message === 'string' ? e.message : ''
  if (UNAVAILABLE_MESSAGES.some((m) => message.includes(m))) return true
  if (Array.isArray(e.errors) && e.errors.some((inner) => isDatabaseUnavailable(inner, depth + 1))) return true
  return e.cause !== undefined && isDatabaseUnavailable(e.cause, depth + 1)
}
