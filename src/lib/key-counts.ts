/**
 * How many of something each key holds (slots per client, connections per address,
 * registrations per client), a key dropped when its count returns to 0 so that `size` is the
 * number of keys holding any.
 */
export class KeyCounts {
  readonly #counts = new Map<string, number>()

  /** Keys holding at least one. */
  get size(): number {
    return this.#counts.size
  }

  get(key: string): number {
    return this.#counts.get(key) ?? 0
  }

  add(key: string): void {
    this.#counts.set(key, this.get(key) + 1)
  }

  /** One fewer for `key` (never below 0; the key forgotten at 0). */
  remove(key: string): void {
    const left = this.get(key) - 1
    if (left <= 0) this.#counts.delete(key)
    else this.#counts.set(key, left)
  }
}
