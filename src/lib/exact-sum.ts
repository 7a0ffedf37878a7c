/**
 * Sums of byte counts without losing a byte. A sum stays a plain number while it is a safe
 * integer (the fast, usual case) and becomes a bigint past 2^53, where a double would start
 * rounding: five sessions at the largest accepted size already pass it. Both database drivers
 * bind a bigint as an integer.
 */
export type ExactSum = number | bigint

export function addExact(sum: ExactSum, value: ExactSum): ExactSum {
  if (typeof sum === 'number' && typeof value === 'number') {
    const total = sum + value
    if (Number.isSafeInteger(total)) return total
  }
  return BigInt(sum) + BigInt(value)
}

/** The largest integer either database stores exactly (a signed 64-bit BIGINT). */
export const INT64_MAX = 9_223_372_036_854_775_807n

export function fitsInt64(sum: ExactSum): boolean {
  return typeof sum === 'number' || sum <= INT64_MAX
}

/**
 * An integer read from the database as text (exact at any size; see the statistics queries,
 * which cast byte sums to TEXT) as a bigint. A non-integer text (SQLite keeps a sum that left
 * the 64-bit range as a float) is read as the nearest integer.
 */
export function exactInteger(text: string | number | bigint | null | undefined): bigint {
  if (text === null || text === undefined) return 0n
  if (typeof text === 'bigint') return text
  if (typeof text === 'number') return BigInt(Math.round(text))
  return /^-?\d+$/.test(text) ? BigInt(text) : BigInt(Math.round(Number(text)))
}

/** `total / unit` as the nearest double, computed without first rounding `total` to a double. */
export function divideExact(total: bigint, unit: number): number {
  const u = BigInt(unit)
  return Number(total / u) + Number(total % u) / unit
}
