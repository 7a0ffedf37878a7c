import type { LeaderLock } from './leader-lock.ts'

/**
 * A job run every `intervalMs` by one process at a time: the holder of `lock` (every process
 * when there is none). A run still going when the next is due is not doubled; stop() waits for
 * it and gives the lock up.
 */
export class LeaderInterval {
  readonly #intervalMs: number
  readonly #lock: LeaderLock | undefined
  readonly #run: () => Promise<unknown>
  #timer: NodeJS.Timeout | undefined
  #running: Promise<void> | undefined

  constructor(intervalMs: number, lock: LeaderLock | undefined, run: () => Promise<unknown>) {
    this.#intervalMs = intervalMs
    this.#lock = lock
    this.#run = run
  }

  /** Whether this process runs the job now (holds the lock; always without one). */
  get leading(): boolean {
    return this.#lock?.held ?? true
  }

  start(): void {
    this.#timer = setInterval(() => {
      if (this.#running === undefined) this.#running = this.#tick().then(() => {}, () => {}).finally(() => { this.#running = undefined })
    }, this.#intervalMs)
    this.#timer.unref()
  }

  async #tick(): Promise<void> {
    if (this.#lock !== undefined && !(await this.#lock.acquire())) return
    await this.#run()
  }

  async stop(): Promise<void> {
    clearInterval(this.#timer)
    await this.#running
    await this.#lock?.close()
  }
}
