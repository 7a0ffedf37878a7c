/**
 * Waiting items per client, served round-robin: each turn takes the oldest item of the next
 * client in line, so a client with a thousand waiting gets the same turns as one with one
 * (fair queuing with equal quanta, every item costing one). A client whose queue was empty
 * goes ahead of those already in the round (FQ-CoDel's new flows): a client sending one
 * request at a time is served at the next turn, not after a round. Also remembers since when each
 * client's queue has stood without emptying: a standing queue is one that arrives faster than
 * it is served (CoDel's signal), and its items may be given a shorter wait.
 */
export class FairQueue<T> {
  /** Clients in turn order (a Map keeps insertion order): the first is served next. */
  readonly #clients = new Map<string, { items: T[]; since: number }>()
  /** Clients whose queue was empty until now, served before #clients, each once. */
  readonly #fresh = new Set<string>()
  #size = 0

  get size(): number { return this.#size }

  /** Waiting items of `client`. */
  count(client: string): number { return this.#clients.get(client)?.items.length ?? 0 }

  push(client: string, item: T, now: number): void {
    const queue = this.#clients.get(client)
    if (queue === undefined) {
      this.#clients.set(client, { items: [item], since: now })
      this.#fresh.add(client)
    } else queue.items.push(item)
    this.#size++
  }

  /**
   * The next client's oldest item, since when that client's queue stood, and how many of its
   * items are left; the client goes to the back of the line. With `eligible`, the next client
   * it allows (those it passes over keep their place).
   */
  shift(eligible: (client: string) => boolean = () => true): { client: string; item: T; since: number; left: number } | undefined {
    for (const fresh of this.#fresh) if (eligible(fresh)) return this.#serve(fresh, this.#clients.get(fresh)!)
    for (const [client, queue] of this.#clients) if (eligible(client)) return this.#serve(client, queue)
    return undefined
  }

  #serve(client: string, queue: { items: T[]; since: number }): { client: string; item: T; since: number; left: number } {
    this.#fresh.delete(client)
    const item = queue.items.shift()!
    this.#size--
    this.#clients.delete(client)
    if (queue.items.length > 0) this.#clients.set(client, queue)
    return { client, item, since: queue.since, left: queue.items.length }
  }

  /** Removes `item` of `client` (it went away or waited too long); false when it is not queued. */
  remove(client: string, item: T): boolean {
    const queue = this.#clients.get(client)
    const at = queue?.items.indexOf(item) ?? -1
    if (queue === undefined || at < 0) return false
    queue.items.splice(at, 1)
    this.#size--
    if (queue.items.length === 0) this.#forget(client)
    return true
  }

  /** The client with the most waiting items, and how many (for making room in a full queue). */
  longest(): { client: string; count: number } | undefined {
    let best: { client: string; count: number } | undefined
    for (const [client, queue] of this.#clients) if (best === undefined || queue.items.length > best.count) best = { client, count: queue.items.length }
    return best
  }

  /** The newest item of `client`, removed. */
  pop(client: string): T | undefined {
    const queue = this.#clients.get(client)
    if (queue === undefined) return undefined
    const item = queue.items.pop()
    this.#size--
    if (queue.items.length === 0) this.#forget(client)
    return item
  }

  #forget(client: string): void {
    this.#clients.delete(client)
    this.#fresh.delete(client)
  }
}
