import type { Database } from '../db/engine.ts'
import { listChanges } from './list-changes.ts'
import type { RecordedChange } from './parse-change.ts'
import { pruneChanges } from './prune-changes.ts'
import { recordChanges, type ChangeListener, type RecordResult } from './record-changes.ts'

/** How often a server applies the monitored period (as the retention prune: src/events/events.ts). */
const PRUNE_EVERY_MS = 3600_000

/**
 * The SIM and device change records of one process (`service.swaps`): recording with the
 * listeners that must see each new change in its transaction (the SIM Swap subscriptions),
 * listing, and the monitored period's prune (hourly in servers: `start()`).
 */
export class SwapRecords {
  readonly #db: Database
  readonly #monitoredDays: number
  readonly #listeners: ChangeListener[] = []
  #pruning: ReturnType<typeof setInterval> | undefined

  constructor(db: Database, monitoredDays: number) {
    this.#db = db
    this.#monitoredDays = monitoredDays
  }

  /** SIM_SWAP_MONITORED_DAYS. */
  get monitoredDays(): number {
    return this.#monitoredDays
  }

  /** `listener` is called with every batch's newly recorded changes, inside its transaction; returns its removal. */
  onRecorded(listener: ChangeListener): () => void {
    this.#listeners.push(listener)
    return () => {
      const at = this.#listeners.indexOf(listener)
      if (at >= 0) this.#listeners.splice(at, 1)
    }
  }

  /** Records a batch (see recordChanges): all or none, idempotent by eventId. */
  record(changes: readonly unknown[], recordedBy: string, now = Date.now()): Promise<RecordResult> {
    return recordChanges(this.#db, changes, { recordedBy, now, monitoredDays: this.#monitoredDays, listeners: this.#listeners })
  }

  /** A number's kept records, newest first. */
  list(phone: string, limit = 100): Promise<RecordedChange[]> {
    return listChanges(this.#db, phone, limit)
  }

  /** Deletes the records older than the monitored period now (`kns prune`, `kns sim-changes prune`); how many. */
  prune(now = Date.now()): Promise<number> {
    return pruneChanges(this.#db, this.#monitoredDays, now)
  }

  /** Servers: the prune every hour (every process: the deletes are idempotent and cheap when nothing is old). */
  start(): void {
    if (this.#pruning !== undefined) return
    this.#pruning = setInterval(() => { void this.prune().catch(() => { /* the database is down: next hour */ }) }, PRUNE_EVERY_MS)
    this.#pruning.unref()
  }

  stop(): void {
    clearInterval(this.#pruning)
    this.#pruning = undefined
  }
}
