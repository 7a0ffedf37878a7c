import { expireDue } from '../approvals/approval.ts'
import type { Database } from '../db/engine.ts'

/** Approvals expired per transaction: a backlog (after downtime) goes in bounded steps. */
const BATCH = 500

/**
 * Emits `approval.expired` for every approval whose time is up, within `intervalMs` of its
 * expiry, whether or not anyone asks about it: each is stored as expired with its event, once
 * (expireDue). Every server process runs one; they never expire a row twice.
 */
export class ExpirySweeper {
  readonly #db: Database
  readonly #intervalMs: number
  #timer: NodeJS.Timeout | undefined
  #running: Promise<void> | undefined
  #stopped = false
  expired = 0

  constructor(db: Database, options: { intervalMs: number }) {
    this.#db = db
    this.#intervalMs = options.intervalMs
  }

  start(): void {
    this.#timer = setInterval(() => {
      if (this.#running === undefined) this.#running = this.sweep().then(() => {}, () => {}).finally(() => { this.#running = undefined })
    }, this.#intervalMs)
    this.#timer.unref()
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
    clearInterval(this.#timer)
    await this.#running
  }
}
