/**
 * A ledger read behind an indexer can lag the chain by seconds: a transaction executed a
 * moment ago is "not found", a token transferred a moment ago shows its previous owner. Where
 * the service decides on such a read, it re-reads for a bounded window before it concludes.
 */

/** Pauses between re-reads (ms): quick at first (most lags are short), then once a second. */
const BACKOFF_MS = [250, 500, 1000]

export interface FreshRead<T> {
  value: T
  /** How long the re-reading went on (0: the first read was accepted, or no window). */
  waitedMs: number
}

/**
 * Reads until `accept` says the value is final or `windowMs` has passed, and returns the
 * last value read. `read` must ask the ledger itself, not a cache.
 */
export async function readUntilAccepted<T>(
  read: () => Promise<T>,
  accept: (value: T) => boolean,
  windowMs: number,
  sleep: (ms: number) => Promise<void> = (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
): Promise<FreshRead<T>> {
  const started = performance.now()
  let value = await read()
  for (let attempt = 0; !accept(value); attempt++) {
    const elapsed = performance.now() - started
    if (elapsed >= windowMs) return { value, waitedMs: Math.round(elapsed) }
    await sleep(Math.min(BACKOFF_MS[Math.min(attempt, BACKOFF_MS.length - 1)]!, windowMs - elapsed))
    value = await read()
  }
  return { value, waitedMs: Math.round(performance.now() - started) }
}

/** " (still so after re-reading the ledger for 3.0 s)", or "" when nothing was re-read. */
export function reReadNote(waitedMs: number): string {
  return waitedMs > 0 ? ` (still so after re-reading the ledger for ${(waitedMs / 1000).toFixed(1)} s)` : ''
}
