/**
 * In-process reuse of computed answers. Identical requests in flight share one computation
 * (coalescing). Answers tagged with the statistics version are also kept (a few hundred at
 * most): the version is read from the database on every request, so a kept answer is never
 * served after any process changed the data.
 */
import { SingleFlight } from '../../lib/single-flight.ts'

const KEPT = 256

export class AnswerCache {
  readonly #inFlight = new SingleFlight<string, unknown>()
  readonly #kept = new Map<string, unknown>()

  /** The answer for `key`, computing it at most once at a time. `keep`: the key names immutable data (it includes a version). */
  async get<T>(key: string, compute: () => Promise<T>, keep: boolean): Promise<T> {
    if (keep && this.#kept.has(key)) return this.#kept.get(key) as T
    return this.#inFlight.run(key, async () => {
      const value = await compute()
      if (keep) {
        if (this.#kept.size >= KEPT) this.#kept.delete(this.#kept.keys().next().value!)
        this.#kept.set(key, value)
      }
      return value
    }) as Promise<T>
  }
}
