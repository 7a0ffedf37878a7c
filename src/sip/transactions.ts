import { timingSafeEqual } from 'node:crypto'
import type { SipRequest } from './message.ts'

/**
 * INVITE server transactions (RFC 3261 17.2.1), keyed by the source address, the top Via's
 * branch and sent-by, Call-ID and CSeq (message.ts transactionKey): a retransmitted INVITE gets
 * the final response again (nothing while it is worked on), a CANCEL finds the INVITE it
 * cancels, and over UDP, once a 100 Trying went out, the final response is sent again at T1,
 * 2T1, ... (at most T2 apart) until the ACK comes or 64 T1 pass (Timer G, Timer H).
 *
 * Timer G only after a 100 Trying: a client stops retransmitting its INVITE only once it has a
 * provisional response (RFC 3261 17.1.1.2, Calling -> Proceeding); before that, its own
 * retransmissions, each answered with the final response again, recover a lost one, so a final
 * response sent without a 100 Trying is sent once per INVITE datagram. A source that has not
 * proved it receives our answers is sent no 100 Trying (src/sip/sources.ts), so a forged
 * INVITE gets one answer, not eleven.
 *
 * One clock for all of them (a tick every TICK_MS, only while a transaction waits) instead of
 * timers per INVITE: at thousands of INVITEs a second, three timers each (100 Trying, G, H)
 * were garbage the collector paid for in the latency tail. Each transaction waits in the set of
 * the tick its next duty falls on (100 Trying, a retransmission, forgetting it), so a tick
 * visits only what is due: INVITEs an SBC never ACKs cost nothing until their time (a scan of
 * them all, every tick, cost up to MAX_ENTRIES visits 20 times a second). Timer G and the 100
 * Trying fire within TICK_MS of their time, which RFC 3261's T1 (an estimate of the round trip)
 * allows. Bounded: at most MAX_ENTRIES transactions are remembered (the oldest forgotten first).
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
  /** The To tag of its final response (a CANCEL's 487 carries it too). */
  readonly toTag: string
  /** Sends the final response once; false when one went out already (a CANCEL's 487). */
  finish(bytes: Buffer): boolean
}

class Entry implements Tracked {
  readonly key: string
  readonly request: SipRequest
  readonly source: { address: string; port: number }
  readonly size: number
  readonly reply: (bytes: Buffer) => void
  /** An unreliable transport (UDP): Timer G runs once a 100 Trying went out. */
  readonly retransmit: boolean
  /** The To tag of our final response (an ACK carrying it proves its sender received it). */
  readonly toTag: string
  /** A 100 Trying went out: the client stopped retransmitting, so we retransmit. */
  provisional = false
  final: Buffer | undefined
  /** When to send the final response again (retransmit), and when to forget the transaction. */
  nextAt = Infinity
  interval = T1_MS
  forgetAt: number
  readonly tryingAt: number
  /** Sends 100 Trying (undefined: none may be sent); cleared once sent or answered. */
  trying: (() => void) | undefined
  /** The clock tick whose set holds it (-1: none); true once forgotten. */
  tick = -1
  gone = false
  readonly #owner: InviteTransactions

  constructor(owner: InviteTransactions, key: string, request: SipRequest, source: { address: string; port: number }, size: number,
    reply: (bytes: Buffer) => void, retransmit: boolean, now: number, trying: (() => void) | undefined, toTag: string) {
    this.#owner = owner
    this.key = key
    this.request = { ...request, body: EMPTY }
    this.source = source
    this.size = size
    this.reply = reply
    this.retransmit = retransmit
    this.toTag = toTag
    this.tryingAt = now + TRYING_AFTER_MS
    this.trying = trying
    // Until its final response: as long as Timer H would allow after one.
    this.forgetAt = now + TIMER_H_MS
  }

  /** When it next has something to do. */
  dueAt(): number {
    return Math.min(this.forgetAt, this.trying === undefined ? Infinity : this.tryingAt, this.final !== undefined && this.retransmitting ? this.nextAt : Infinity)
  }

  get retransmitting(): boolean {
    return this.retransmit && this.provisional
  }

  finish(bytes: Buffer): boolean {
    if (this.final !== undefined) return false
    this.final = bytes
    this.trying = undefined
    this.reply(bytes)
    const now = this.#owner.now()
    this.forgetAt = now + (this.retransmit ? TIMER_H_MS : T1_MS * 64)
    if (this.retransmitting) this.nextAt = now + T1_MS
    if (!this.gone) this.#owner.schedule(this)
    return true
  }
}

const EMPTY = Buffer.alloc(0)

export class InviteTransactions {
  /** Milliseconds on a monotonic clock: a step of the wall clock must not stop the timers. */
  readonly now: () => number
  readonly #entries = new Map<string, Entry>()
  /**
   * The transactions by the clock tick (now() / TICK_MS, rounded down) of their next duty;
   * one visited before its time (its duty later in that tick) waits for the next.
   */
  readonly #due = new Map<number, Set<Entry>>()
  /** The last tick done; a transaction is never put in it or before it. */
  #doneTick = 0
  #bytes = 0
  #clock: NodeJS.Timeout | undefined

  constructor(now: () => number = () => performance.now()) {
    this.now = now
  }

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
   * A new INVITE: remembered until its ACK or Timer H; `trying` (when given) is called if no
   * final response is ready in 200 ms, and then, with `retransmit` (UDP), the final response
   * is sent again until the ACK or Timer H. `toTag`: the To tag its final response carries.
   */
  begin(key: string, request: SipRequest, source: { address: string; port: number }, size: number,
    reply: (bytes: Buffer) => void, retransmit: boolean, trying: (() => void) | undefined, toTag: string): Tracked {
    while (this.#entries.size > 0 && (this.#entries.size >= MAX_ENTRIES || this.#bytes + size > MAX_BYTES)) this.#forget(this.#entries.keys().next().value!)
    const entry = new Entry(this, key, request, source, size, reply, retransmit, this.now(), trying, toTag)
    this.#forget(key)
    this.#entries.set(key, entry)
    this.#bytes += size
    this.schedule(entry)
    return entry
  }

  has(key: string): boolean {
    return this.#entries.has(key)
  }

  /**
   * The ACK of a final response: no more retransmissions, the transaction is done. true when
   * it carried the To tag of the final response sent: its sender received it.
   */
  acknowledged(key: string, toTag: string | undefined): boolean {
    const entry = this.#entries.get(key)
    if (entry === undefined) return false
    this.#forget(key)
    if (entry.final === undefined || toTag === undefined || toTag.length !== entry.toTag.length) return false
    return timingSafeEqual(Buffer.from(toTag), Buffer.from(entry.toTag))
  }

  /** A CANCEL: the INVITE still without a final response, if any (the caller answers it 487). */
  cancel(key: string): Tracked | undefined {
    const entry = this.#entries.get(key)
    return entry !== undefined && entry.final === undefined ? entry : undefined
  }

  /** Puts a transaction in the set of the tick of its next duty (out of the one it was in). */
  schedule(entry: Entry): void {
    if (this.#clock === undefined) {
      this.#doneTick = Math.floor(this.now() / TICK_MS)
      this.#clock = setInterval(() => this.#onTick(), TICK_MS).unref()
    }
    const tick = Math.max(Math.floor(entry.dueAt() / TICK_MS), this.#doneTick + 1)
    if (tick === entry.tick) return
    this.#unschedule(entry)
    entry.tick = tick
    const set = this.#due.get(tick)
    if (set === undefined) this.#due.set(tick, new Set([entry]))
    else set.add(entry)
  }

  #unschedule(entry: Entry): void {
    const set = this.#due.get(entry.tick)
    if (set !== undefined && set.delete(entry) && set.size === 0) this.#due.delete(entry.tick)
    entry.tick = -1
  }

  /** This transaction, not a newer one under its key. */
  #forgetEntry(entry: Entry): void {
    if (this.#entries.get(entry.key) === entry) this.#forget(entry.key)
  }

  #forget(key: string): void {
    const entry = this.#entries.get(key)
    if (entry === undefined) return
    this.#entries.delete(key)
    this.#bytes -= entry.size
    entry.gone = true
    this.#unschedule(entry)
  }

  #onTick(): void {
    const now = this.now()
    const current = Math.floor(now / TICK_MS)
    // Every tick since the last one done (more than one after the event loop was held up); after
    // a hold longer than the ticks that hold something, only those.
    if (current - this.#doneTick <= this.#due.size) {
      for (let tick = this.#doneTick + 1; tick <= current; tick++) this.#runTick(tick, now)
    } else {
      for (const tick of [...this.#due.keys()].filter((t) => t <= current).sort((a, b) => a - b)) this.#runTick(tick, now)
    }
    this.#doneTick = Math.max(this.#doneTick, current)
    if (this.#entries.size === 0) this.#stop()
  }

  /** The duties of the transactions waiting in one tick's set. */
  #runTick(tick: number, now: number): void {
    this.#doneTick = tick
    const set = this.#due.get(tick)
    if (set === undefined) return
    this.#due.delete(tick)
    for (const entry of set) {
      // One forgotten by an earlier duty in this tick (none does today; cheap to be sure).
      if (entry.gone) continue
      entry.tick = -1
      this.#duty(entry, now)
    }
  }

  /** What is due for one transaction: forgetting it, its 100 Trying, its final response again. */
  #duty(entry: Entry, now: number): void {
    if (now >= entry.forgetAt) return this.#forgetEntry(entry)
    try {
      if (entry.trying !== undefined && now >= entry.tryingAt) {
        const trying = entry.trying
        entry.trying = undefined
        entry.provisional = true
        trying()
      }
      if (entry.final !== undefined && entry.retransmitting && now >= entry.nextAt) {
        entry.interval = Math.min(entry.interval * 2, T2_MS)
        entry.nextAt = now + entry.interval
        entry.reply(entry.final)
      }
    } catch {
      // One peer's failed send must not stop the clock of the others (nor the process).
      return this.#forgetEntry(entry)
    }
    if (!entry.gone) this.schedule(entry)
  }

  #stop(): void {
    clearInterval(this.#clock)
    this.#clock = undefined
  }

  clear(): void {
    for (const entry of this.#entries.values()) entry.gone = true
    this.#entries.clear()
    this.#due.clear()
    this.#bytes = 0
    this.#stop()
  }
}
