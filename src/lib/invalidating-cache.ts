/**
 * An in-process cache whose entries a change signal drops: by key, by tag (an entry names the
 * things it was derived from), or all at once. It guards the race every such cache has: a
 * read that began before an invalidation and ends after it must not store what it read, or
 * the cache would keep a value the change already made stale. So a reader takes `begin()`
 * before reading from the source and passes it to `set`, which stores only if nothing was
 * invalidated in between. Bounded: past `maxEntries` it starts over (a bound, not an LRU).
 */
export type ReadStamp = number & { readonly brand: unique symbol }

export class InvalidatingCache<K, V> {
  readonly #entries = new Map<K, { value: V; tags: readonly string[] }>()
  readonly #byTag = new Map<string, Set<K>>()
  readonly #maxEntries: number
  #generation = 0

  constructor(maxEntries: number) {
    this.#maxEntries = maxEntries
  }

  get size(): number { return this.#entries.size }

  get(key: K): V | undefined {
    return this.#entries.get(key)?.value
  }

  /** Taken before reading the source: `set` then stores only if no invalidation came in between. */
  begin(): ReadStamp {
    return this.#generation as ReadStamp
  }

  /** Stores `value` (derived from `tags`) unless an invalidation happened since `stamp`. Returns whether it did. */
  set(key: K, value: V, stamp: ReadStamp, tags: readonly string[] = []): boolean {
    if (stamp !== this.#generation) return false
    if (this.#entries.size >= this.#maxEntries && !this.#entries.has(key)) this.#clearEntries()
    this.#drop(key)
    this.#entries.set(key, { value, tags })
    for (const t of tags) {
      let keys = this.#byTag.get(t)
      if (keys === undefined) this.#byTag.set(t, keys = new Set())
      keys.add(key)
    }
    return true
  }

  /** Drops one entry (e.g. one that expired or proved stale). */
  delete(key: K): void {
    this.#generation++
    this.#drop(key)
  }

  /** Drops every entry derived from `tag`; null drops everything. */
  invalidate(tag: string | null): void {
    this.#generation++
    if (tag === null) return this.#clearEntries()
    const keys = this.#byTag.get(tag)
    if (keys === undefined) return
    for (const key of [...keys]) this.#drop(key)
  }

  #clearEntries(): void {
    this.#entries.clear()
    this.#byTag.clear()
  }

  #drop(key: K): void {
    const entry = this.#entries.get(key)
    if (entry === undefined) return
    this.#entries.delete(key)
    for (const t of entry.tags) {
      const keys = this.#byTag.get(t)
      keys?.delete(key)
      if (keys?.size === 0) this.#byTag.delete(t)
    }
  }
}
