/**
 * What a UDP source may be sent (docs/sip.md, Limits). A datagram's source address can be
 * forged, so an answer to it may land on a host that never asked: until a source proves it
 * receives our answers, what it is sent is bounded. The proof: an ACK carrying the To tag of a
 * final response we sent it (a random 48-bit tag only the receiver of that response knows).
 * - A confirmed source (proved within CONFIRMED_FOR_MS) is answered as RFC 3261 has it.
 * - An unconfirmed one is sent at most UNCONFIRMED_BURST_BYTES at once and
 *   UNCONFIRMED_BYTES_PER_S after (a token bucket per address, shared by all its ports); past
 *   it, answers are dropped (the sender's own retransmissions get them once it is confirmed).
 *   The server also sends it no 100 Trying, so no final response is retransmitted to it
 *   (src/sip/transactions.ts): each of its datagrams gets at most one answer.
 * A TCP peer needs no proof (its handshake is one) and is not tracked here.
 */
const CONFIRMED_FOR_MS = 10 * 60_000
export const UNCONFIRMED_BURST_BYTES = 16 * 1024
export const UNCONFIRMED_BYTES_PER_S = 2 * 1024
/** Addresses remembered, each kind; the least recently used forgotten first. */
const MAX_CONFIRMED = 4096
const MAX_BUDGETS = 10_000

interface Bucket { tokens: number; at: number }

export class UdpSources {
  readonly #now: () => number
  /** address -> until when it is confirmed (ms); kept apart from the budgets, so forged sources cannot push a confirmed SBC out. */
  readonly #confirmed = new Map<string, number>()
  readonly #budgets = new Map<string, Bucket>()

  constructor(now: () => number = () => performance.now()) {
    this.#now = now
  }

  isConfirmed(address: string): boolean {
    const until = this.#confirmed.get(address)
    if (until === undefined) return false
    if (until >= this.#now()) return true
    this.#confirmed.delete(address)
    return false
  }

  /** The source proved it receives our answers (an ACK with our To tag). */
  confirm(address: string): void {
    this.#confirmed.delete(address)
    this.#confirmed.set(address, this.#now() + CONFIRMED_FOR_MS)
    if (this.#confirmed.size > MAX_CONFIRMED) this.#confirmed.delete(this.#confirmed.keys().next().value!)
    this.#budgets.delete(address)
  }

  /** Whether `bytes` more may be sent to the address now (taken from its budget when unconfirmed). */
  allow(address: string, bytes: number): boolean {
    if (this.isConfirmed(address)) return true
    const now = this.#now()
    const bucket = this.#budgets.get(address) ?? { tokens: UNCONFIRMED_BURST_BYTES, at: now }
    bucket.tokens = Math.min(UNCONFIRMED_BURST_BYTES, bucket.tokens + ((now - bucket.at) / 1000) * UNCONFIRMED_BYTES_PER_S)
    bucket.at = now
    // Most recently used last: the first key is the one to forget.
    this.#budgets.delete(address)
    this.#budgets.set(address, bucket)
    if (this.#budgets.size > MAX_BUDGETS) this.#budgets.delete(this.#budgets.keys().next().value!)
    if (bucket.tokens < bytes) return false
    bucket.tokens -= bytes
    return true
  }
}
