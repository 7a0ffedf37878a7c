/**
 * Concurrent calls for the same key share one run of `load`; once it settles, the next call
 * runs it again. For reads that many requests want at once (a cache miss, a refresh).
 */
export class SingleFlight<K, V> {
  readonly #running = new Map<K, Promise<V>>()

  run(key: K, load: () => Promise<V>): Promise<V> {
    let pending = this.#running.get(key)
    if (pending === undefined) {
      pending = load().finally(() => this.#running.delete(key))
      this.#running.set(key, pending)
    }
    return pending
  }
}
