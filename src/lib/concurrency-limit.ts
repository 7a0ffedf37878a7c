/**
 * How many requests to work on at once, adapted to measured latency (the gradient design of
 * Netflix's concurrency-limits and Envoy's adaptive concurrency filter): while requests take
 * about as long as they do unloaded, the limit grows by its square root per window; when they
 * take longer than TOLERANCE times the unloaded minimum, it shrinks by that ratio (at most by
 * half per window). More in flight than the work can overlap only lengthens every request's
 * time: on one core, 48 registrations of 5 ms of CPU each take 240 ms apiece, 2 take 10 ms, for
 * the same throughput. Bounded by [MIN_LIMIT, ceiling]; it starts at the ceiling.
 */

/** Latency up to this many times the unloaded minimum counts as unloaded. */
const TOLERANCE = 2
/** A window closes after this long, with at least MIN_SAMPLES answers in it. */
const WINDOW_MS = 100
const MIN_SAMPLES = 5
/** The new limit's weight against the old one: damps oscillation. */
const SMOOTHING = 0.2
const MIN_LIMIT = 2
/**
 * The unloaded time is measured again this often, Envoy's way: for one window at most
 * MIN_LIMIT are admitted, and that window's average is the new minimum. Taking it from a
 * loaded window instead would let the limit ratchet up; never measuring it again would keep a
 * server whose work became slower for good (a larger database) at the floor.
 */
const MIN_RESET_MS = 30_000

export class ConcurrencyLimit {
  readonly #ceiling: number
  #limit: number
  #minRtt = Infinity
  #minSetAt = 0
  #probing = false
  #windowStart = 0
  #windowSum = 0
  #windowCount = 0

  constructor(ceiling: number) {
    this.#ceiling = ceiling
    this.#limit = ceiling
  }

  /** The current limit (whole requests, at least 1). */
  get limit(): number { return this.#probing ? Math.min(MIN_LIMIT, this.#ceiling) : Math.max(1, Math.floor(this.#limit)) }

  /** The least window average seen (ms): the unloaded time of a request; Infinity before any. */
  get minRttMs(): number { return this.#minRtt }

  /** One answered request's time in service (ms), at `now`. */
  sample(ms: number, now: number): void {
    if (this.#windowCount === 0) this.#windowStart = now
    this.#windowSum += ms
    this.#windowCount++
    if (now - this.#windowStart < WINDOW_MS || this.#windowCount < MIN_SAMPLES) return
    const rtt = this.#windowSum / this.#windowCount
    this.#windowSum = 0
    this.#windowCount = 0
    if (this.#probing || rtt < this.#minRtt) {
      this.#probing = false
      this.#minRtt = rtt
      this.#minSetAt = now
    } else if (now - this.#minSetAt > MIN_RESET_MS) {
      this.#probing = true
      return
    }
    const gradient = Math.max(0.5, Math.min(1, TOLERANCE * this.#minRtt / rtt))
    const next = this.#limit * gradient + Math.sqrt(this.#limit)
    this.#limit = Math.min(this.#ceiling, Math.max(MIN_LIMIT, (1 - SMOOTHING) * this.#limit + SMOOTHING * next))
  }
}
