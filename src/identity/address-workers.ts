import { Piscina } from 'piscina'
import { OverloadedError } from '../errors.ts'
import type { AddressResult, AddressTask } from './zk-address-worker.ts'

export interface AddressWorkersOptions {
  /**
   * Threads deriving addresses (default 1: ~500 derivations a second on a free core, far more
   * than people register; more would not shorten the event loop's turns, only compete with it,
   * and `kns serve --workers N` starts N of these pools).
   */
  threads?: number
  /**
   * How long a new derivation may expect to wait for a thread before registrations are refused,
   * ms (default 8). Under a registration flood on SQLite (bench:overload) the registrations'
   * handler p99 was 60 ms with about 2 derivations allowed to wait, 93 ms with 4, 226 ms with 8;
   * on an idle core (1.6 ms each) 8 ms lets a burst of five wait.
   */
  waitBudgetMs?: number
}

/**
 * The wait budget applies once derivations have been waiting without a break this long: a
 * burst (a few people registering at once) drains in milliseconds and is never refused; a
 * flood keeps the queue standing.
 */
const STANDING_MS = 100
/** Once a registration was refused, the budget stays in force this long, even if the queue empties in between. */
const PRESSURE_MS = 1000
/** However short the queue has stood, no more than this many wait per thread (a flood's first 100 ms). */
const BURST_WAITING = 8
/** Until a derivation has been timed (the threads' first start), this many may wait. */
const COLD_WAITING = 32
/** Past this many waiting, piscina itself refuses (registrations admitted before the refusal took effect). */
const HARD_WAITING = 64
/** Weight of the latest derivation in the running estimate of one's time. */
const EWMA_WEIGHT = 0.2

/**
 * New registrations' zkLogin addresses, derived on worker threads (piscina). The derivation is
 * the Poseidon hash of the address seed: 1.6 ms of CPU on an idle core, 5-7 ms on a busy one,
 * and under a registration flood it was 43 % of the event loop's time (issue 31, item 4):
 * every other request, a call verification or an approval poll, waited behind the hashes
 * queued in the same turns. On a thread the loop keeps only the HTTP and database work, and
 * the hashes wait in a queue of their own whose wait can be estimated, so the registrations
 * that cannot be hashed soon are refused at the door (`saturated`) instead of waiting in a
 * queue that every admitted registration would also pay.
 *
 * The threads start at the first derivation (a thread and its modules: ~0.25 s), not with the
 * server: most processes (the CLI, tests) never register a number. They then stay for the
 * life of the process.
 */
export class AddressWorkers {
  readonly #secret: () => Buffer
  readonly #threads: number
  readonly #waitBudgetMs: number
  #pool: Piscina<AddressTask, AddressResult> | undefined
  /** Running estimate of one derivation's time on a thread, ms; undefined until one was timed. */
  #taskMs: number | undefined
  /** Derivations asked for and not yet finished (running or waiting). */
  #outstanding = 0
  /** Since when `#outstanding` has not dropped to 0 (performance.now()). */
  #busySince = 0
  /** Until when the budget applies without a standing queue: a refusal was made lately. */
  #pressureUntil = 0

  /** `secret`: the server secret, read when the threads start. */
  constructor(secret: () => Buffer, options: AddressWorkersOptions = {}) {
    this.#secret = secret
    this.#threads = options.threads ?? 1
    this.#waitBudgetMs = options.waitBudgetMs ?? 8
  }

  /** Whether a derivation has been timed: one now does not pay the threads' start. */
  get warm(): boolean {
    return this.#taskMs !== undefined
  }

  /**
   * A new registration should be refused now: BURST_WAITING wait per thread, or derivations
   * have waited without a break for STANDING_MS (or one was refused in the last PRESSURE_MS)
   * and a new one would wait longer than the budget.
   */
  get saturated(): boolean {
    const waiting = Math.max(0, this.#outstanding - this.#threads)
    if (this.#taskMs === undefined) return waiting >= COLD_WAITING
    const now = performance.now()
    const standing = (this.#outstanding > 0 && now - this.#busySince >= STANDING_MS) || now < this.#pressureUntil
    const overBudget = standing && waiting * this.#taskMs / this.#threads > this.#waitBudgetMs
    if (!overBudget && waiting < BURST_WAITING * this.#threads) return false
    this.#pressureUntil = now + PRESSURE_MS
    return true
  }

  /** Throws OverloadedError while `saturated`. */
  refuseWhileSaturated(): void {
    if (this.saturated) throw new OverloadedError('too many registrations at once: retry in 1 s', 1)
  }

  /** The zkLogin address of `userId` (as zkLoginAddressFor). OverloadedError past the hard bound. */
  async derive(issuer: string, clientId: string, userId: string): Promise<string> {
    const pool = this.#pool ??= new Piscina<AddressTask, AddressResult>({
      filename: new URL('./zk-address-worker.ts', import.meta.url).href,
      minThreads: this.#threads,
      maxThreads: this.#threads,
      idleTimeout: Number.POSITIVE_INFINITY,
      maxQueue: HARD_WAITING,
      workerData: { secret: this.#secret() },
    })
    if (this.#outstanding++ === 0) this.#busySince = performance.now()
    try {
      const { address, ms } = await pool.run({ issuer, clientId, userId })
      this.#taskMs = this.#taskMs === undefined ? ms : this.#taskMs + EWMA_WEIGHT * (ms - this.#taskMs)
      return address
    } catch (err) {
      if (err instanceof Error && /queue is at limit/i.test(err.message)) throw new OverloadedError('too many registrations at once: retry in 1 s', 1)
      throw err
    } finally {
      this.#outstanding--
    }
  }

  /** Stops the threads (a derivation still running is ended). */
  async close(): Promise<void> {
    const pool = this.#pool
    this.#pool = undefined
    this.#taskMs = undefined
    this.#outstanding = 0
    await pool?.destroy()
  }
}
