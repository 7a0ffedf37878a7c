import { setTimeout as sleep } from 'node:timers/promises'

export interface AnswerFloorOptions {
  /** The floor never goes below this (also the whole floor before any slow answer was seen). */
  minMs: number
  /** Nor above this: a stalled database must not hold every answer for long. */
  maxMs: number
  /** How many of the latest slow answers' times it follows. */
  window: number
  /** Which of them: the floor is this quantile of the window (0.95: all but the slowest 5 %). */
  quantile: number
  /** Monotonic milliseconds (tests give their own). */
  now?: () => number
  /** Waits that long (tests give their own). */
  wait?: (ms: number) => Promise<unknown>
}

/**
 * A floor under the answer time of a call whose work depends on something the caller must not
 * learn (register-user-login: whether the number was registered before). Every answer, fast
 * or slow, is held until `floorMs` after its start; the floor follows how long the slow kind
 * took lately (a high quantile of its last times, never below `minMs`), so a fast answer
 * comes when a slow one would. What still shows is only the slow kind's tail beyond the
 * quantile, and a fast answer delayed as much by the machine looks the same.
 */
export class AnswerFloor {
  readonly #options: Required<AnswerFloorOptions>
  /** The latest slow answers' times, a ring of `window` entries. */
  readonly #recent: number[] = []
  #next = 0
  #floor: number

  constructor(options: AnswerFloorOptions) {
    if (!(options.minMs >= 0 && options.maxMs >= options.minMs)) throw new RangeError('AnswerFloor: need 0 <= minMs <= maxMs')
    if (!(Number.isInteger(options.window) && options.window > 0)) throw new RangeError('AnswerFloor: window must be a positive integer')
    if (!(options.quantile > 0 && options.quantile <= 1)) throw new RangeError('AnswerFloor: quantile must be in (0, 1]')
    this.#options = { now: () => performance.now(), wait: sleep, ...options }
    this.#floor = options.minMs
  }

  /** The time since `startedAt` before which no answer goes out, ms. */
  get floorMs(): number {
    return this.#floor
  }

  /** Starts timing one call (pass the result to `slow` and `hold`). */
  start(): number {
    return this.#options.now()
  }

  /** The call that started at `startedAt` did the slow kind of work, which has just ended. */
  slow(startedAt: number): void {
    const { window, quantile, minMs, maxMs } = this.#options
    this.#recent[this.#next] = this.#options.now() - startedAt
    this.#next = (this.#next + 1) % window
    const sorted = [...this.#recent].sort((a, b) => a - b)
    const at = sorted[Math.min(sorted.length - 1, Math.ceil(quantile * sorted.length) - 1)]!
    this.#floor = Math.min(maxMs, Math.max(minMs, at))
  }

  /** Resolves once the floor has passed since `startedAt` (at once if it has). */
  async hold(startedAt: number): Promise<void> {
    const left = startedAt + this.#floor - this.#options.now()
    if (left > 0) await this.#options.wait(Math.ceil(left))
  }
}
