import { Piscina } from 'piscina'
import { OverloadedError } from '../errors.ts'
import { KeyCounts } from '../lib/key-counts.ts'
import type { AddressTask } from './zk-address-worker.ts'

export interface AddressWorkersOptions {
  /**
   * Threads deriving addresses (default 1: ~500 derivations a second on a free core, far more
   * than people register; more would not shorten the event loop's turns, only compete with it,
   * and `kns serve --workers N` starts N of these pools).
   */
  threads?: number
  /** Registrations in progress at most (MAX_REGISTRATIONS_IN_PROGRESS; default 5). */
  inProgress?: number
}

/**
 * Registrations in progress by default, registered numbers and new ones alike; one more is
 * refused. Under a registration flood on SQLite (bench:overload, back to back on 2 cores) a
 * bound of this kind gave an admitted p99 of 106-166 ms; an expected-wait budget that let a
 * burst queue (CoDel's standing-queue signal, or the event loop's lag, deciding when to tighten
 * it) gave 278-635 ms: the flood's first requests queue like a burst.
 */
const DEFAULT_IN_PROGRESS = 5
/** One client (an address group) holds at most this share of them: a flood leaves room for others. */
const CLIENT_SHARE = 0.8

const refusal = () => new OverloadedError('too many registrations at once: retry in 1 s', 1)

/**
 * New registrations' zkLogin addresses, derived on worker threads (piscina), and the bound on
 * registrations in progress. The derivation is the Poseidon hash of the address seed: 1.6 ms of
 * CPU on an idle core, 5-7 ms on a busy one, and under a registration flood it was 43 % of
 * the event loop's time (issue 31, item 4): every other request, a call verification or an
 * approval poll, waited behind the hashes queued in the same turns. On a thread the loop keeps
 * only the HTTP and database work.
 *
 * The bound counts every registration from its start to its answer (`enter`), whether its
 * number turns out to be registered or new, and the answer floor makes both last alike: so
 * whether a registration is refused tells nothing about its number. Counting the hashes
 * alone did (review: six registrations of one new number at once got a 503, of a registered
 * one never).
 *
 * The threads start with `start()` (`kns serve`, before it listens) or at the first derivation:
 * most processes (the CLI, tests) never register a number. They then stay for the life of the
 * process.
 */
export class AddressWorkers {
  readonly #secret: () => Buffer
  readonly #threads: number
  readonly #limit: number
  #pool: Piscina<AddressTask, string> | undefined
  #warm = false
  /** Registrations between `enter` and their release, in all and per client. */
  #inProgress = 0
  readonly #byClient = new KeyCounts()

  /** `secret`: the server secret, read when the threads start. */
  constructor(secret: () => Buffer, options: AddressWorkersOptions = {}) {
    this.#secret = secret
    this.#threads = options.threads ?? 1
    this.#limit = options.inProgress ?? DEFAULT_IN_PROGRESS
  }

  /** Whether the threads have derived an address: a derivation now does not pay their start. */
  get warm(): boolean {
    return this.#warm
  }

  /** Whether a registration from `client` would be refused now (all in progress, or the client's share). */
  saturated(client: string): boolean {
    return this.#inProgress >= this.#limit || this.#byClient.get(client) >= Math.max(1, Math.floor(this.#limit * CLIENT_SHARE))
  }

  /** Throws OverloadedError while `saturated(client)`. */
  refuseWhileSaturated(client: string): void {
    if (this.saturated(client)) throw refusal()
  }

  /**
   * One registration of `client` starts: OverloadedError while `saturated(client)`, else the
   * function that ends it (call it once its answer is ready, floor and all).
   */
  enter(client: string): () => void {
    this.refuseWhileSaturated(client)
    this.#inProgress++
    this.#byClient.add(client)
    let done = false
    return () => {
      if (done) return
      done = true
      this.#inProgress--
      this.#byClient.remove(client)
    }
  }

  /** Starts the threads and derives one throw-away address, so the first registration pays no start (whose time would tell it was new). */
  async start(): Promise<void> {
    await this.derive('https://warm-up.invalid', 'warm-up', 'warm-up')
  }

  /** The zkLogin address of `userId` (as zkLoginAddressFor). */
  async derive(issuer: string, clientId: string, userId: string): Promise<string> {
    const pool = this.#pool ??= new Piscina<AddressTask, string>({
      filename: new URL('./zk-address-worker.ts', import.meta.url).href,
      minThreads: this.#threads,
      maxThreads: this.#threads,
      idleTimeout: Number.POSITIVE_INFINITY,
      workerData: { secret: this.#secret() },
    })
    const address = await pool.run({ issuer, clientId, userId })
    this.#warm = true
    return address
  }

  /** Stops the threads (a derivation still running is ended). */
  async close(): Promise<void> {
    const pool = this.#pool
    this.#pool = undefined
    this.#warm = false
    await pool?.destroy()
  }
}
