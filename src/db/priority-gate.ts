import { currentPriority, WORK_PRIORITIES, type WorkPriority } from '../lib/work-priority.ts'

/** The message of pg.Pool's own connection timeout, which isDatabaseUnavailable maps to 503 DATABASE_UNAVAILABLE. */
const TIMEOUT_MESSAGE = 'timeout exceeded when trying to connect'

interface Waiter { grant(): void; timer: ReturnType<typeof setTimeout> | undefined }

/**
 * Permits for a pool's connections, handed out by priority (src/lib/work-priority.ts), in
 * arrival order within one. pg.Pool queues those waiting for a connection first come first
 * served: under a flood of registrations some forty of them waited for its ten connections,
 * and a call verification's or an approval poll's every query waited behind them all, though
 * admission had let it in ahead. With as many permits as the pool has connections, the pool
 * never queues; the wait happens here, and `critical` work takes the next free connection.
 * `normal` and `low` work hold at most four fifths of them, so a critical query usually finds
 * one free at once instead of waiting for a registration's transaction to end.
 */
export class PriorityGate {
  readonly #size: number
  /** Permits `normal` and `low` work never takes: a critical query finds a connection free, not only next in line. */
  readonly #reserve: number
  readonly #waitMs: number
  #free: number
  readonly #waiting = new Map<WorkPriority, Waiter[]>(WORK_PRIORITIES.map((p) => [p, []]))

  /** `waitMs`: how long a caller waits for a permit before it fails as pg.Pool's connection timeout does (0: no limit). */
  constructor(size: number, waitMs: number) {
    this.#size = size
    this.#reserve = Math.floor(size / 5)
    this.#free = size
    this.#waitMs = waitMs
  }

  get waiting(): number {
    let n = 0
    for (const queue of this.#waiting.values()) n += queue.length
    return n
  }

  /** Runs `fn` holding one permit, taken at the current work's priority. */
  async with<T>(fn: () => Promise<T>): Promise<T> {
    await this.#acquire(currentPriority())
    try {
      return await fn()
    } finally {
      this.#release()
    }
  }

  #acquire(priority: WorkPriority): Promise<void> {
    if (this.#free > this.#reserveFor(priority) && !this.#waitingAtOrAbove(priority)) {
      this.#free--
      return Promise.resolve()
    }
    return new Promise<void>((resolve, reject) => {
      const queue = this.#waiting.get(priority)!
      const waiter: Waiter = {
        grant: () => { clearTimeout(waiter.timer); resolve() },
        timer: this.#waitMs > 0
          ? setTimeout(() => {
            queue.splice(queue.indexOf(waiter), 1)
            reject(new Error(TIMEOUT_MESSAGE))
          }, this.#waitMs)
          : undefined,
      }
      queue.push(waiter)
    })
  }

  /** Nobody overtakes a waiter of the same or a higher priority. */
  #waitingAtOrAbove(priority: WorkPriority): boolean {
    for (const p of WORK_PRIORITIES) {
      if (this.#waiting.get(p)!.length > 0) return true
      if (p === priority) return false
    }
    return false
  }

  #reserveFor(priority: WorkPriority): number {
    return priority === 'ops' || priority === 'critical' ? 0 : this.#reserve
  }

  /** The permit goes to the first waiter of the highest priority that may take it, else back to the free ones. */
  #release(): void {
    this.#free = Math.min(this.#size, this.#free + 1)
    for (const priority of WORK_PRIORITIES) {
      const queue = this.#waiting.get(priority)!
      if (queue.length === 0) continue
      if (this.#free <= this.#reserveFor(priority)) return
      this.#free--
      return queue.shift()!.grant()
    }
  }
}
