import type { ChangeWatcher } from '../db/change-signal.ts'
import type { Database } from '../db/engine.ts'
import { CALLER_TOPIC, tagged } from '../db/change-topics.ts'
import { InvalidatingCache } from '../lib/invalidating-cache.ts'
import { findByPhone, type NumberLink } from './numbers.ts'

/** Past this many cached links the cache starts over (a bound on memory, not an LRU). */
const MAX_ENTRIES = 100_000

/**
 * Phone number -> its link, cached for the approval path (a PostgreSQL round trip saved per
 * request batch). Only while subscribed to the change signal, which every link change in any
 * process raises (`phone:<number>`); and even a stale entry cannot produce a wrong approval:
 * the approval insert re-checks the link in the same statement (see insertApproval), and the
 * caller then forgets the entry and resolves afresh. Numbers without a link are not cached,
 * so a number registered a moment ago in another process is found at once.
 */
export class PhoneLinks {
  readonly #db: Database
  /** undefined while not subscribed: every find reads the database. */
  #links: InvalidatingCache<string, NumberLink> | undefined

  constructor(db: Database) {
    this.#db = db
  }

  subscribe(changes: ChangeWatcher): void {
    this.#links = new InvalidatingCache(MAX_ENTRIES)
    changes.on('change', (topic, subject) => {
      if (topic !== CALLER_TOPIC) return
      if (subject === null) return this.#links?.invalidate(null)
      const phone = tagged('phone', subject)
      if (phone !== undefined) this.forget(phone)
    })
  }

  async find(phone: string): Promise<NumberLink | null> {
    const hit = this.#links?.get(phone)
    if (hit !== undefined) return hit
    const stamp = this.#links?.begin()
    const link = await findByPhone(this.#db, phone)
    if (link !== null && stamp !== undefined) this.#links?.set(phone, link, stamp)
    return link
  }

  forget(phone: string): void {
    this.#links?.delete(phone)
  }
}
