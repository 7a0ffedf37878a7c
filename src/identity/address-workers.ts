import { Piscina } from 'piscina'
import { OverloadedError } from '../errors.ts'
import type { AddressTask } from './zk-address-worker.ts'

export interface AddressWorkersOptions {
  /**
   * Threads deriving addresses (default 1: ~500 derivations a second on a free core, far more
   * than people register; more would not shorten the event loop's turns, only compete with it,
   * and `kns serve --workers N` starts N of these pools).
   */
  threads?: number
}

/**
 * Derivations that may wait per thread; a registration that finds more is refused. Under a
 * registration flood on SQLite (bench:overload, back to back on 2 cores) this bound gave an
 * admitted p99 of 119-137 ms with 2 and 162 with 4; an expected-wait budget that let a burst
 * queue (CoDel's standing-queue signal, or the event loop's lag, deciding when to tighten it)
 * gave 278-635 ms: the flood's first requests queue like a burst. 4 serves five registrations
 * arriving at once on one process; a sixth is answered 503 with Retry-After: 1.
 */
const WAITING_PER_THREAD = 4
/** Until the threads have derived an address (their first start, ~0.25 s), this many may wait. */
const COLD_WAITING = 128
/** Past this many waiting, piscina itself refuses (registrations admitted before the refusal took effect). */
const HARD_WAITING = 256

const refusal = () => new OverloadedError('too many registrations at once: retry in 1 s', 1)

/**
 * New registrations' zkLogin addresses, derived on worker threads (piscina). The derivation is
 * the Poseidon hash of the address seed: 1.6 ms of CPU on an idle core, 5-7 ms on a busy one,
 * and under a registration flood it was 43 % of the event loop's time (issue 31, item 4):
 * every other request, a call verification or an approval poll, waited behind the hashes
 * queued in the same turns. On a thread the loop keeps only the HTTP and database work, and
 * the hashes wait in a queue of their own whose length is known, so the registrations that
 * cannot be hashed soon are refused at the door (`saturated`) instead of waiting in a queue
 * that every admitted registration would also pay.
 *
 * The threads start at the first derivation, not with the server: most processes (the CLI,
 * tests) never register a number. They then stay for the life of the process.
 */
export class AddressWorkers {
  readonly #secret: () => Buffer
  readonly #threads: number
  #pool: Piscina<AddressTask, string> | undefined
  #warm = false
  /** Derivations asked for and not yet finished (running or waiting). */
  #outstanding = 0

  /** `secret`: the server secret, read when the threads start. */
  constructor(secret: () => Buffer, options: AddressWorkersOptions = {}) {
    this.#secret = secret
    this.#threads = options.threads ?? 1
  }

  /** Whether the threads have derived an address: a derivation now does not pay their start. */
  get warm(): boolean {
    return this.#warm
  }

  /** A new registration should be refused now: WAITING_PER_THREAD wait per thread (COLD_WAITING while the threads first start). */
  get saturated(): boolean {
    const waiting = Math.max(0, this.#outstanding - this.#threads)
    return waiting >= (this.#warm ? WAITING_PER_THREAD * this.#threads : COLD_WAITING)
  }

  /** Throws OverloadedError while `saturated`. */
  refuseWhileSaturated(): void {
    if (this.saturated) throw refusal()
  }

  /** The zkLogin address of `userId` (as zkLoginAddressFor). OverloadedError past the hard bound. */
  async derive(issuer: string, clientId: string, userId: string): Promise<string> {
    const pool = this.#pool ??= new Piscina<AddressTask, string>({
      filename: new URL('./zk-address-worker.ts', import.meta.url).href,
      minThreads: this.#threads,
      maxThreads: this.#threads,
      idleTimeout: Number.POSITIVE_INFINITY,
      maxQueue: HARD_WAITING,
      workerData: { secret: this.#secret() },
    })
    this.#outstanding++
    try {
      const address = await pool.run({ issuer, clientId, userId })
      this.#warm = true
      return address
    } catch (err) {
      if (err instanceof Error && /queue is at limit/i.test(err.message)) throw refusal()
      throw err
    } finally {
      this.#outstanding--
    }
  }

  /** Stops the threads (a derivation still running is ended). */
  async close(): Promise<void> {
    const pool = this.#pool
    this.#pool = undefined
    this.#warm = false
    this.#outstanding = 0
    await pool?.destroy()
  }
}
