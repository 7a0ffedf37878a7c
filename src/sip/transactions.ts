import type { SipRequest } from './message.ts'

/**
 * INVITE server transactions (RFC 3261 17.2.1), keyed by the top Via's branch and sent-by:
 * a retransmitted INVITE gets the final response again (nothing while it is worked on), a
 * CANCEL finds the INVITE it cancels, and over UDP the final response is sent again at T1,
 * 2T1, ... (at most T2 apart) until the ACK comes or 64 T1 pass (Timer G, Timer H).
 *
 * One clock for all of them (a tick every TICK_MS, only while a transaction waits) instead of
 * timers per INVITE: at thousands of INVITEs a second, three timers each (100 Trying, G, H)
 * were garbage the collector paid for in the latency tail. Timer G and the 100 Trying fire
 * within TICK_MS of their time, which RFC 3261's T1 (an estimate of the round trip) allows. Bounded: at most
 * MAX_ENTRIES transactions are remembered (the oldest forgotten first).
 */
const T1_MS = 500
const T2_MS = 4000
const TIMER_H_MS = 64 * T1_MS
const TICK_MS = 50
/** RFC 3261 17.2.1: a 100 Trying when the final answer is not ready within 200 ms. */
const TRYING_AFTER_MS = 200
const MAX_ENTRIES = 50_000
/** What the remembered INVITEs may hold at most (their header fields), whatever their count. */
const MAX_BYTES = 32 * 1024 * 1024

export interface Tracked {
  readonly request: SipRequest
  /** Where the INVITE came from (its response's Via is stamped for it). */
  readonly source: { address: string; port: number }
  /** Sends the final response once; false when one went out already (a CANCEL's 487). */
  finish(bytes: Buffer): boolean
}

class Entry implements Tracked {
  readonly request: SipRequest
  readonly source: { address: string; port: number }
  readonly size: number
  readonly reply: (bytes: Buffer) => void
  readonly retransmit: boolean
  final: Buffer | undefined
  /** When to send the final response again (retransmit), and when to forget the transaction. */
  nextAt = Infinity
  interval = T1_MS
  forgetAt: number
  readonly tryingAt: number
  /** Sends 100 Trying; cleared once sent or answered. */
  trying: (() => void) | undefined
  readonly #owner: InviteTransactions

  constructor(owner: InviteTransactions, request: SipRequest, source: { address: string; port: number }, size: number,
    reply: (bytes: Buffer) => void, retransmit: boolean, now: number, trying: () => void) {
    this.#owner = owner
    this.request = { ...request, body: EMPTY }
    this.source = source
    this.size = size
    this.reply = reply
    this.retransmit = retransmit
    this.tryingAt = now + TRYING_AFTER_MS
    this.trying = trying
    // Until its final response: as long as Timer H would allow after one.
    this.forgetAt = now + TIMER_H_MS
  }

  finish(bytes: Buffer): boolean {
    if (this.final !== undefined) return false
    this.final = bytes
    this.trying = undefined
    this.reply(bytes)
    const now = Date.now()
    this.forgetAt = now + (this.retransmit ? TIMER_H_MS : T1_MS * 64)
    if (this.retransmit) this.nextAt = now + T1_MS
    this.#owner.wake()
    return true
  }
}

const EMPTY = Buffer.alloc(0)

export class InviteTransactions {
  readonly #entries = new Map<string, Entry>()
  #bytes = 0
  #tick: NodeJS.Timeout | undefined

  get size(): number {
    return this.#entries.size
  }

  /** Whether the INVITE is one already seen; if its final response went out, it is sent again. */
  retransmitted(key: string): boolean {
    const entry = this.#entries.get(key)
    if (entry === undefined) return false
    if (entry.final !== undefined) entry.reply(entry.final)
    return true
  }

  /**
   * A new INVITE: remembered until its ACK or Timer H; `retransmit` (UDP) sends its final
   * response again until then; `trying` is called if no final response is ready in 200 ms.
   */
  begin(key: string, request: SipRequest, source: { address: string; port: number }, size: number,
    reply: (bytes: Buffer) => void, retransmit: boolean, trying: () => void): Tracked {
    while (this.#entries.size > 0 && (this.#entries.size >= MAX_ENTRIES || this.#bytes + size > MAX_BYTES)) this.#forget(this.#entries.keys().next().value!)
    const entry = new Entry(this, request, source, size, reply, retransmit, Date.now(), trying)
    this.#forget(key)
    this.#entries.set(key, entry)
    this.#bytes += size
    this.wake()
    return entry
  }

  has(key: string): boolean {
    return this.#entries.has(key)
  }

  /** The ACK of a final response: no more retransmissions, the transaction is done. */
  acknowledged(key: string): void {
    this.#forget(key)
  }

  #forget(key: string): void {
    const entry = this.#entries.get(key)
    if (entry === undefined) return
    this.#entries.delete(key)
    this.#bytes -= entry.size
  }

  /** A CANCEL: the INVITE still without a final response, if any (the caller answers it 487). */
  cancel(key: string): Tracked | undefined {
    const entry = this.#entries.get(key)
    return entry !== undefined && entry.final === undefined ? entry : undefined
  }

  /** The clock runs while anything waits. */
  wake(): void {
    this.#tick ??= setInterval(() => this.#onTick(), TICK_MS).unref()
  }

  #onTick(): void {
    const now = Date.now()
    for (const [key, entry] of this.#entries) {
      if (now >= entry.forgetAt) {
        this.#forget(key)
        continue
      }
      try {
        if (entry.trying !== undefined && now >= entry.tryingAt) {
          const trying = entry.trying
          entry.trying = undefined
          trying()
        }
        if (entry.final !== undefined && now >= entry.nextAt) {
          entry.interval = Math.min(entry.interval * 2, T2_MS)
          entry.nextAt = now + entry.interval
          entry.reply(entry.final)
        }
      } catch {
        // One peer's failed send must not stop the clock of the others (nor the process).
        this.#forget(key)
      }
    }
    if (this.#entries.size === 0) {
      clearInterval(this.#tick)
      this.#tick = undefined
    }
  }

  clear(): void {
    this.#entries.clear()
    this.#bytes = 0
    clearInterval(this.#tick)
    this.#tick = undefined
  }
}
