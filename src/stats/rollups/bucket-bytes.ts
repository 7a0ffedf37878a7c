/**
 * A statistics bucket's byte total is a BIGINT on both engines. Sessions are bounded (10^15
 * bytes each), their sum in a bucket is not: a batch or an import that would carry a bucket
 * past 2^63 - 1 is refused whole (422 VALUE_OUT_OF_RANGE) instead of failing in the database
 * (PostgreSQL: 22003, a 500) or, worse, being kept as a float (SQLite turns an overflowing
 * integer sum into a REAL, and every statistics answer after it would be wrong).
 *
 * Two guards: the sums this process adds up are checked before they are written, and a sum
 * the database adds to a stored total is checked by the database (PostgreSQL's BIGINT
 * arithmetic raises 22003; on SQLite a trigger refuses a non-integer total), read back by
 * `isValueOutOfRange`.
 */
import { ValueOutOfRangeError } from '../../errors.ts'
import { fitsInt64, type ExactSum } from '../../lib/exact-sum.ts'

/** The message the SQLite trigger raises; matched by `isValueOutOfRange`. */
export const SQLITE_OUT_OF_RANGE = 'KNS_VALUE_OUT_OF_RANGE'

export const OUT_OF_RANGE_MESSAGE = 'a statistics bucket would hold more than 2^63 - 1 bytes; nothing of this request was stored'

export function checkBucketBytes(bytes: ExactSum): void {
  if (!fitsInt64(bytes)) throw new ValueOutOfRangeError(OUT_OF_RANGE_MESSAGE)
}

/** SQLite only: no total of stats_buckets.bytes may leave the integers (see above). */
export const BUCKET_BYTES_TRIGGER = `CREATE TRIGGER stats_buckets_integer_bytes BEFORE UPDATE OF bytes ON stats_buckets
  WHEN typeof(NEW.bytes) <> 'integer'
  BEGIN SELECT RAISE(ABORT, '${SQLITE_OUT_OF_RANGE}'); END`

/** Runs a rollup write, turning the database's "total out of range" into ValueOutOfRangeError (the transaction then rolls back). */
export async function refusingOverflow<T>(write: () => Promise<T>): Promise<T> {
  try {
    return await write()
  } catch (err) {
    throw isValueOutOfRange(err) ? new ValueOutOfRangeError(OUT_OF_RANGE_MESSAGE, { cause: err }) : err
  }
}

/** A database error that says a stored total left the BIGINT range (see above). */
function isValueOutOfRange(err: unknown): boolean {
  if (typeof err !== 'object' || err === null) return false
  const e = err as { code?: unknown; message?: unknown }
  if (e.code === '22003') return true // PostgreSQL numeric_value_out_of_range
  return typeof e.message === 'string' && e.message.includes(SQLITE_OUT_OF_RANGE)
}
