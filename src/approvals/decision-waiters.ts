/**
 * `transaction_details?wait=`: requests waiting for an approval to be decided. A waiter is a
 * promise and a timer, no database connection: thousands cost little. Decisions wake them
 * through the change signal (topic `approvals`, tag `approval:<number>`), so a decision taken
 * by another process wakes this one's waiters too; the caller then reads the approval again.
 */
import type { ChangeWatcher } from '../db/change-signal.ts'
import { APPROVAL_TOPIC, tagged } from '../db/change-topics.ts'

export class DecisionWaiters {
  readonly #waiting = new Map<string, Set<() => void>>()

  /** How many requests are waiting now (for /metrics and tests). */
  get size(): number {
    let n = 0
    for (const set of this.#waiting.values()) n += set.size
    return n
  }

  subscribe(changes: ChangeWatcher): void {
    changes.on('change', (topic, subject) => {
      if (topic !== APPROVAL_TOPIC) return
      if (subject === null) return this.#wakeAll() // changes were missed: let everyone re-read
      const approvalNumber = tagged('approval', subject)
      if (approvalNumber !== undefined) this.wake(approvalNumber)
    })
  }

  /**
   * Resolves when `approvalNumber` is signalled as decided, or after `ms`, whichever comes
   * first. Register before reading the approval, so a decision between the read and the wait
   * is not missed; `cancel()` when the read shows it decided already.
   */
  waitFor(approvalNumber: string, ms: number): { done: Promise<void>; cancel: () => void } {
    let release!: () => void
    const done = new Promise<void>((resolve) => { release = resolve })
    let set = this.#waiting.get(approvalNumber)
    if (set === undefined) this.#waiting.set(approvalNumber, set = new Set())
    const waiters = set
    const finish = () => {
      clearTimeout(timer)
      waiters.delete(finish)
      if (waiters.size === 0 && this.#waiting.get(approvalNumber) === waiters) this.#waiting.delete(approvalNumber)
      release()
    }
    const timer = setTimeout(finish, Math.max(0, ms))
    waiters.add(finish)
    return { done, cancel: finish }
  }

  wake(approvalNumber: string): void {
    const set = this.#waiting.get(approvalNumber)
    if (set === undefined) return
    for (const finish of [...set]) finish()
  }

  #wakeAll(): void {
    for (const set of [...this.#waiting.values()]) for (const finish of [...set]) finish()
  }
}
