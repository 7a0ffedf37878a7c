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
   * While the queue stands (below), how long a new derivation may expect to wait for a thread
   * before registrations are refused, ms (default 8). Under a registration flood on SQLite
   * (bench:overload) the registrations' handler p99 was 60 ms with about 2 derivations allowed
   * to wait, 93 ms with 4, 226 ms with 8.
   */
  waitBudgetMs?: number
}

/**
 * CoDel's signal: the queue stands when even the shortest wait of the last STANDING_MS was over
 * STANDING_TARGET_MS. A burst (a few dozen people registering at once) empties it, and its
 * first derivation did not wait; a flood keeps every derivation waiting. The wait is the
 * round trip less the derivation, so it counts the event loop's delay in taking the answer
 * too: under a registration flood on SQLite the thread was a third busy while answers waited
 * 50-250 ms for the loop, and that is load to refuse as well.
 */
const STANDING_MS = 100
const STANDING_TARGET_MS = 5
/**
 * Before the queue stands, a new derivation may expect this long a wait (admission's default
 * QUEUE_BUDGET_MS): a burst (forty people registering at once: 64 ms on an idle core) is
 * served. A flood's first interval is bounded by this and by MAX_IN_FLIGHT_PER_CLIENT.
 */
const BURST_BUDGET_MS = 250
/** Until a derivation has been timed (the threads' first start), this many may wait. */
const COLD_WAITING = 128
/** Past this many waiting, piscina itself refuses (registrations admitted before the refusal took effect). */
const HARD_WAITING = 256
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
  /** The current interval of STANDING_MS: when it started, and the shortest wait seen in it. */
  #intervalStart = 0
  #shortestWait = Number.POSITIVE_INFINITY
  /** Whether the last full interval's shortest wait was over STANDING_TARGET_MS. */
  #standing = false

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
   * A new registration should be refused now: a new derivation would wait longer than the
   * budget while the queue stands, longer than BURST_BUDGET_MS while it does not.
   */
  get saturated(): boolean {
    const waiting = Math.max(0, this.#outstanding - this.#threads)
    if (this.#taskMs === undefined) return waiting >= COLD_WAITING
    const standing = this.#standing && this.#outstanding > 0
    return waiting * this.#taskMs / this.#threads > (standing ? this.#waitBudgetMs : BURST_BUDGET_MS)
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
    this.#outstanding++
    const asked = performance.now()
    try {
      const { address, ms } = await pool.run({ issuer, clientId, userId })
      this.#taskMs = this.#taskMs === undefined ? ms : this.#taskMs + EWMA_WEIGHT * (ms - this.#taskMs)
      this.#waited(performance.now() - asked - ms)
      return address
    } catch (err) {
      if (err instanceof Error && /queue is at limit/i.test(err.message)) throw new OverloadedError('too many registrations at once: retry in 1 s', 1)
      throw err
    } finally {
      this.#outstanding--
    }
  }

  /** A derivation waited `ms` for its thread (its round trip less its own time). */
  #waited(ms: number): void {
    const now = performance.now()
    if (now - this.#intervalStart >= STANDING_MS) {
      // An interval without a derivation (the queue emptied and stayed empty) does not stand.
      this.#standing = now - this.#intervalStart < 2 * STANDING_MS && this.#shortestWait > STANDING_TARGET_MS
      this.#intervalStart = now
      this.#shortestWait = ms
    } else this.#shortestWait = Math.min(this.#shortestWait, ms)
  }

  /** Stops the threads (a derivation still running is ended). */
  async close(): Promise<void> {
    const pool = this.#pool
    this.#pool = undefined
    this.#taskMs = undefined
    this.#outstanding = 0
    this.#standing = false
    await pool?.destroy()
  }
}
