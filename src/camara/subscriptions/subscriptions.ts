import type { Config } from '../../config.ts'
import type { Database, Executor } from '../../db/engine.ts'
import { LeaderLock } from '../../db/leader-lock.ts'
import type { Events } from '../../events/events.ts'
import type { CamaraAccess } from '../access.ts'
import { CamaraError } from '../camara-error.ts'
import { createSubscription, type SubscriptionRequest } from './create-subscription.ts'
import { deleteSubscription } from './delete-subscription.ts'
import { listSubscriptions } from './list-subscriptions.ts'
import { notifySwapped, type RecordedChange } from './notify-swapped.ts'
import { findOwnSubscription, type StoredSubscription } from './subscription.ts'
import { SubscriptionSweeper } from './subscription-sweeper.ts'
import { pruneSubscriptions } from './prune-subscriptions.ts'

/** How often subscriptions past their expiry (or their sink token's) are looked for. */
const SWEEP_MS = 1000
/** How often servers apply RETENTION_DAYS to ended subscriptions (as the events' prune). */
const PRUNE_EVERY_MS = 3600_000

/**
 * SIM Swap Subscriptions 0.3 for one process: the operations the routes call, the listener
 * the change records call in their transaction, and the sweeper that ends subscriptions on
 * time (started by servers only). Events go out through the webhook delivery worker.
 */
export class CamaraSubscriptions {
  readonly sweeper: SubscriptionSweeper
  readonly #config: Config
  readonly #db: Database
  readonly #events: Events
  #pruning: ReturnType<typeof setInterval> | undefined

  constructor(config: Config, db: Database, events: Events) {
    this.#config = config
    this.#db = db
    this.#events = events
    this.sweeper = new SubscriptionSweeper(db, { publicBaseUrl: () => config.publicBaseUrl, intervalMs: SWEEP_MS, lock: new LeaderLock(db, 'camara-subscriptions') })
    this.sweeper.onEnded = () => events.decided()
  }

  async create(access: CamaraAccess, request: SubscriptionRequest): Promise<StoredSubscription> {
    return createSubscription(access, request, {
      db: this.#db, box: this.#events.box, publicBaseUrl: this.#config.publicBaseUrl, allowPrivate: this.#events.outbound.allowPrivate,
    })
  }

  list(access: CamaraAccess): Promise<StoredSubscription[]> {
    return listSubscriptions(this.#db, ownerOf(access))
  }

  async get(access: CamaraAccess, id: string): Promise<StoredSubscription> {
    const found = await findOwnSubscription(this.#db, id, ownerOf(access))
    if (found === null) throw new CamaraError(404, 'NOT_FOUND', 'The specified resource is not found.')
    return found
  }

  async delete(access: CamaraAccess, id: string): Promise<void> {
    await deleteSubscription(this.#db, id, ownerOf(access), this.#config.publicBaseUrl)
    this.#events.decided()
  }

  /** The change records' listener: runs in the transaction that records them (the outbox); the worker is woken after commit by the caller. */
  async changesRecorded(tx: Executor, changes: readonly RecordedChange[]): Promise<number> {
    return notifySwapped(tx, changes, this.#config.publicBaseUrl, Date.now())
  }

  /** Ended subscriptions past RETENTION_DAYS removed now (`kns prune`; servers hourly); how many. */
  prune(olderThanMs = this.#config.retentionDays * 86_400_000): Promise<number> {
    return pruneSubscriptions(this.#db, olderThanMs)
  }

  start(): void {
    this.sweeper.start()
    if (this.#config.retentionDays > 0 && this.#pruning === undefined) {
      this.#pruning = setInterval(() => { void this.prune().catch(() => { /* the database is down: next hour */ }) }, PRUNE_EVERY_MS)
      this.#pruning.unref()
    }
  }

  stop(): Promise<void> {
    clearInterval(this.#pruning)
    this.#pruning = undefined
    return this.sweeper.stop()
  }
}

/** Whose subscriptions a caller may see: its client's, and for a three-legged token its number's only. */
function ownerOf(access: CamaraAccess): { clientId: string; phone: string | null } {
  return { clientId: access.clientId, phone: access.phoneNumber }
}
