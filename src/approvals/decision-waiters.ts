/**
 * `transaction_details?wait=`: requests waiting for an approval to be decided. A waiter is a
 * promise and a timer, no database connection: thousands cost little. Decisions wake them
 * through the change signal (topic `approvals`, tag `approval:<number>`), so a decision taken
 * by another process wakes this one's waiters too; the caller then reads the approval again.
 */
import type { ChangeWatcher } from '../db/change-signal.ts'
import { APPROVAL_TOPIC, tagged } from '../db/change-topics.ts'

/** One wait: `done` resolves on a wake-up, the time limit or `cancel()`; `settled` says it has. */
export interface Waiter { done: Promise<void>; cancel: () => void; readonly settled: boolean }

/** Waiting requests one process holds at most; past it, `wait` is answered at once. */
export const MAX_WAITERS = 20_000

export class DecisionWaiters {
  readonly #waiting = new Map<string, Set<() => void>>()
  #count = 0
  readonly #max: number

  constructor(max = MAX_WAITERS) {
    this.#max = max
  }

  #closed = false

  get full(): boolean { return this.#count >= this.#max }
  /** Shutting down: every wait answers now, and none begins. */
  get closed(): boolean { return this.#closed }

  /** How many requests are waiting now (for /metrics and tests). */
  get size(): number { return this.#count }

  subscribe(changes: ChangeWatcher): void {
    changes.on('change', (topic, subject) => {
      if (topic !== APPROVAL_TOPIC) return
      if (subject === null) return this.#wakeEveryone() // changes were missed: let everyone re-read
      const approvalNumber = tagged('approval', subject)
      if (approvalNumber !== undefined) this.wake(approvalNumber)
    })
  }

  /**
   * Resolves when `approvalNumber` is signalled as decided, or after `ms`, whichever comes
   * first. Register before reading the approval, so a decision between the read and the wait
   * is not missed; `cancel()` when the read shows it decided already.
   */
  waitFor(approvalNumber: string, ms: number): Waiter {
    let release!: () => void
    const done = new Promise<void>((resolve) => { release = resolve })
    let settled = false
    if (this.#closed) return { done: Promise.resolve(), cancel: () => {}, get settled() { return true } }
    let set = this.#waiting.get(approvalNumber)
    if (set === undefined) this.#waiting.set(approvalNumber, set = new Set())
    const waiters = set
    const finish = () => {
      settled = true
      clearTimeout(timer)
      if (waiters.delete(finish)) this.#count--
      if (waiters.size === 0 && this.#waiting.get(approvalNumber) === waiters) this.#waiting.delete(approvalNumber)
      release()
    }
    const timer = setTimeout(finish, Math.max(0, ms))
    waiters.add(finish)
    this.#count++
    return { done, cancel: finish, get settled() { return settled } }
  }

  wake(approvalNumber: string): void {
    const set = this.#waiting.get(approvalNumber)
    if (set === undefined) return
    for (const finish of [...set]) finish()
  }

  /** On shutdown: every wait answers now (with what it reads next), and none begins. */
  close(): void {
    this.#closed = true
    this.#wakeEveryone()
  }

  #wakeEveryone(): void {
    for (const set of [...this.#waiting.values()]) for (const finish of [...set]) finish()
  }
}
