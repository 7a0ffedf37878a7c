import { describeOutboundFailure, outboundRequest, OutboundRefusedError, type OutboundOptions } from '../../lib/outbound-http.ts'
import { SingleFlight } from '../../lib/single-flight.ts'

/**
 * Documents fetched from URLs that calls name (x5u certificates, CRLs), cached as HTTP says:
 * - `Cache-Control: max-age` honoured within [minTtl, maxTtl] (5 min, 24 h); without one, 1 h;
 * - past that, still served for the `stale-while-revalidate` window (at least as long again,
 *   at most 24 h) while one refresh runs in the background;
 * - one fetch in flight per URL, however many calls want it (single-flight);
 * - a failure is remembered for `failureTtl` (30 s), so a dead URL costs one fetch, not one
 *   per call;
 * - at most `maxEntries` URLs (least recently used dropped).
 * Every fetch goes through the guarded outbound client (src/lib/outbound-http.ts).
 */
export interface FetchCacheOptions {
  outbound: OutboundOptions
  /** What the documents are (x5u, crl, jcard): the fetches' trace spans say it. */
  purpose?: string
  minTtlMs?: number
  maxTtlMs?: number
  defaultTtlMs?: number
  failureTtlMs?: number
  maxEntries?: number
  now?: () => number
  /** When the document itself says it is out of date (a CRL's nextUpdate): no longer fresh from then. */
  expiresAt?: (value: unknown) => number | null
}

export type FetchFailure = 'refused' | 'unreachable' | 'status' | 'too_large' | 'unparsable'

export class FetchFailed extends Error {
  readonly reason: FetchFailure
  constructor(reason: FetchFailure, message: string) {
    super(message)
    this.name = 'FetchFailed'
    this.reason = reason
  }
}

interface Entry<T> { value?: T; error?: FetchFailed; freshUntil: number; staleUntil: number }

const MINUTE = 60_000

function cacheControl(header: string | string[] | undefined): { maxAgeS: number | null; swrS: number | null; noStore: boolean } {
  const text = (Array.isArray(header) ? header.join(',') : header ?? '').toLowerCase()
  const seconds = (name: string) => {
    const match = new RegExp(`(?:^|,)\\s*${name}\\s*=\\s*"?(\\d{1,10})"?`).exec(text)
    return match ? Number(match[1]) : null
  }
  return { maxAgeS: seconds('max-age'), swrS: seconds('stale-while-revalidate'), noStore: /(?:^|,)\s*(no-store|no-cache)\b/.test(text) }
}

export class FetchCache<T> {
  readonly #parse: (body: Buffer) => T
  readonly #options: Required<Omit<FetchCacheOptions, 'outbound'>> & { outbound: OutboundOptions }
  readonly #entries = new Map<string, Entry<T>>()
  readonly #inflight = new SingleFlight<string, Entry<T>>()
  /** Fetches made (not cache hits): what the single-flight test counts. */
  fetches = 0

  constructor(parse: (body: Buffer) => T, options: FetchCacheOptions) {
    this.#parse = parse
    this.#options = {
      purpose: 'document', minTtlMs: 5 * MINUTE, maxTtlMs: 24 * 60 * MINUTE, defaultTtlMs: 60 * MINUTE, failureTtlMs: 30_000, maxEntries: 10_000, now: Date.now,
      expiresAt: () => null,
      ...options,
    }
  }

  /** The document at `url`, from the cache when it may be; throws FetchFailed. */
  async get(url: string): Promise<T> {
    const now = this.#options.now()
    const entry = this.#entries.get(url)
    if (entry !== undefined && now < entry.staleUntil) {
      this.#touch(url, entry)
      if (now >= entry.freshUntil) void this.#inflight.run(url, () => this.#fetch(url)).catch(() => {})
      return unwrap(entry)
    }
    return unwrap(await this.#inflight.run(url, () => this.#fetch(url)))
  }

  #touch(url: string, entry: Entry<T>): void {
    this.#entries.delete(url)
    this.#entries.set(url, entry)
  }

  async #fetch(url: string): Promise<Entry<T>> {
    this.fetches++
    let entry: Entry<T>
    try {
      const response = await outboundRequest(url, { method: 'GET', headers: { accept: 'application/pkix-cert, application/x-pem-file, application/pkix-crl, */*' }, purpose: this.#options.purpose }, this.#options.outbound)
      if (response.status !== 200) throw new FetchFailed('status', `answered HTTP ${response.status}`)
      if (response.truncated) throw new FetchFailed('too_large', `larger than ${this.#options.outbound.maxResponseBytes} bytes`)
      let value: T
      try {
        value = this.#parse(response.body)
      } catch (err) {
        throw new FetchFailed('unparsable', `not a certificate or CRL: ${err instanceof Error ? err.message : 'unreadable'}`)
      }
      const { maxAgeS, swrS, noStore } = cacheControl(response.headers['cache-control'])
      const o = this.#options
      const ttl = Math.min(o.maxTtlMs, Math.max(o.minTtlMs, noStore ? 0 : maxAgeS === null ? o.defaultTtlMs : maxAgeS * 1000))
      const stale = Math.min(o.maxTtlMs, Math.max(ttl, (swrS ?? 0) * 1000))
      const now = o.now()
      entry = { value, freshUntil: now + ttl, staleUntil: now + ttl + stale }
      // A document past its own expiry is fetched again at once rather than served stale.
      const expires = o.expiresAt(value)
      if (expires !== null) {
        entry.freshUntil = Math.max(now + Math.min(o.failureTtlMs, ttl), Math.min(entry.freshUntil, expires))
        entry.staleUntil = Math.max(entry.freshUntil, Math.min(entry.staleUntil, expires))
      }
    } catch (err) {
      const failure = err instanceof FetchFailed ? err : new FetchFailed(err instanceof OutboundRefusedError ? 'refused' : 'unreachable', describeOutboundFailure(err))
      const now = this.#options.now()
      // A refresh that failed keeps a good value while it may still be served, and is not
      // tried again by every call meanwhile.
      const previous = this.#entries.get(url)
      if (previous?.value !== undefined && now < previous.staleUntil) {
        previous.freshUntil = Math.min(previous.staleUntil, now + this.#options.failureTtlMs)
        return previous
      }
      entry = { error: failure, freshUntil: now + this.#options.failureTtlMs, staleUntil: now + this.#options.failureTtlMs }
    }
    this.#entries.delete(url)
    this.#entries.set(url, entry)
    if (this.#entries.size > this.#options.maxEntries) this.#entries.delete(this.#entries.keys().next().value!)
    return entry
  }
}

function unwrap<T>(entry: Entry<T>): T {
  if (entry.error !== undefined) throw entry.error
  return entry.value!
}
