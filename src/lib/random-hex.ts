import { randomFillSync } from 'node:crypto'

const POOL_SIZE = 4096
const pool = Buffer.alloc(POOL_SIZE)
let offset = POOL_SIZE

/**
 * `bytes` bytes from the CSPRNG as lowercase hex. Drawn from a pool refilled 4 KiB at a
 * time: one call into the CSPRNG per few hundred identifiers instead of one each (a hot
 * path creates one per request). Each byte of the pool is handed out once.
 */
export function randomHex(bytes: number): string {
  if (bytes > POOL_SIZE) throw new RangeError(`at most ${POOL_SIZE} bytes`)
  if (offset + bytes > POOL_SIZE) {
    randomFillSync(pool)
    offset = 0
  }
  const hex = pool.toString('hex', offset, offset + bytes)
  // Wipe what was handed out, so the pool never holds an identifier already in use.
  pool.fill(0, offset, offset + bytes)
  offset += bytes
  return hex
}
