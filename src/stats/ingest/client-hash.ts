import { createHmac, createSecretKey } from 'node:crypto'

/** How many clientId -> hash results a hasher remembers by default (devices repeat across sessions; about 100 bytes each). */
const CACHE_SIZE = 200_000

/**
 * clientId is an opaque device identifier: only a keyed hash of it is stored. The key is
 * derived from the server secret, so the hashes cannot be recomputed from a guessed
 * identifier without it, and they stay the same across restarts (distinct counts need that).
 * 96 bits (16 base64url characters): collisions are negligible even for billions of clients.
 */
export function createClientHasher(secret: Buffer, cacheSize = CACHE_SIZE): (clientId: string) => string {
  // A KeyObject, not a Buffer: createHmac imports a Buffer key anew on every call (4x the cost).
  const key = createSecretKey(createHmac('sha256', secret).update('kns/stats-client-id/v1').digest())
  const cache = new Map<string, string>()
  return (clientId) => {
    let hash = cache.get(clientId)
    if (hash === undefined) {
      hash = createHmac('sha256', key).update(clientId).digest('base64url').slice(0, 16)
      // Bounded: start over when full (cheaper than LRU bookkeeping on the hot path).
      if (cache.size >= cacheSize) cache.clear()
      cache.set(clientId, hash)
    }
    return hash
  }
}
