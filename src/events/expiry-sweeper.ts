import { expireDue } from '../approvals/approval.ts'
import type { Database } from '../db/engine.ts'
import { LeaderInterval } from '../db/leader-interval.ts'
import type { LeaderLock } from '../db/leader-lock.ts'

/** Approvals expired per transaction: a backlog (after downtime) goes in bounded steps. */
const BATCH = 500

/**
 * Emits `approval.expired` for every approval whose time is up, within `intervalMs` of its
 * expiry, whether or not anyone asks about it: each is stored as expired with its event, once
 * (expireDue). One server process at a time sweeps, the one holding the sweeper's leader lock
 * (the others stand by and take over within seconds of its end, as the ledger watcher's do);
 * expireDue's row locks would keep several from expiring a row twice, but every process
 * scanning every second is work for nothing.
 */
export class ExpirySweeper {
  readonly #db: Database
  readonly #interval: LeaderInterval
  #stopped = false
  expired = 0

  constructor(db: Database, options: { intervalMs: number; lock?: LeaderLock }) {
    this.#db = db
    this.#interval = new LeaderInterval(options.intervalMs, options.lock, () => this.sweep())
  }

  /** Whether this process sweeps now (holds the lock; always without one). */
  get sweeping(): boolean {
    return !this.#stopped && this.#interval.leading
  }

  start(): void {
    this.#interval.start()
  }

  /** Expires everything due now; returns how many. */
  async sweep(now = Date.now()): Promise<number> {
    let total = 0
    for (;;) {
      if (this.#stopped) break
      const count = await expireDue(this.#db, now, BATCH)
      total += count
      if (count < BATCH) break
    }
    this.expired += total
    return total
  }

  async stop(): Promise<void> {
    this.#stopped = true
    await this.#interval.stop()
  }
}
