import type { SipRequest } from './message.ts'

/**
 * INVITE server transactions (RFC 3261 17.2.1), keyed by the top Via's branch and sent-by:
 * a retransmitted INVITE gets the final response again (nothing while it is worked on), a
 * CANCEL finds the INVITE it cancels, and over UDP the final response is sent again at T1,
 * 2T1, ... (at most T2 apart) until the ACK comes or 64 T1 pass (Timer G, Timer H).
 * Bounded: at most MAX_ENTRIES transactions are remembered (the oldest forgotten first).
 */
const T1_MS = 500
const T2_MS = 4000
const TIMER_H_MS = 64 * T1_MS
const MAX_ENTRIES = 50_000

export interface Tracked {
  readonly request: SipRequest
  /** Sends the final response once; false when one went out already (a CANCEL's 487). */
  finish(bytes: Buffer): boolean
}

interface Entry extends Tracked {
  reply: (bytes: Buffer) => void
  final: Buffer | undefined
  timer: NodeJS.Timeout | undefined
  expires: NodeJS.Timeout | undefined
}

export class InviteTransactions {
  readonly #entries = new Map<string, Entry>()

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

  /** A new INVITE: remembered until its ACK or Timer H; `retransmit` (UDP) sends its final response again until then. */
  begin(key: string, request: SipRequest, reply: (bytes: Buffer) => void, retransmit: boolean): Tracked {
    if (this.#entries.size >= MAX_ENTRIES) this.#forget(this.#entries.keys().next().value!)
    const entries = this.#entries
    const entry: Entry = {
      request, reply, final: undefined, timer: undefined, expires: undefined,
      finish(bytes) {
        if (entry.final !== undefined) return false
        entry.final = bytes
        reply(bytes)
        if (retransmit) {
          let interval = T1_MS
          const again = () => {
            reply(bytes)
            interval = Math.min(interval * 2, T2_MS)
            entry.timer = setTimeout(again, interval).unref()
          }
          entry.timer = setTimeout(again, interval).unref()
        }
        entry.expires = setTimeout(() => {
          clearTimeout(entry.timer)
          if (entries.get(key) === entry) entries.delete(key)
        }, retransmit ? TIMER_H_MS : T1_MS * 64).unref()
        return true
      },
    }
    this.#entries.set(key, entry)
    return entry
  }

  /** The ACK of a final response: no more retransmissions, the transaction is done. */
  acknowledged(key: string): void {
    this.#forget(key)
  }

  has(key: string): boolean {
    return this.#entries.has(key)
  }

  /** A CANCEL: the INVITE still without a final response, if any (the caller answers it 487). */
  cancel(key: string): Tracked | undefined {
    const entry = this.#entries.get(key)
    return entry !== undefined && entry.final === undefined ? entry : undefined
  }

  #forget(key: string): void {
    const entry = this.#entries.get(key)
    if (entry === undefined) return
    clearTimeout(entry.timer)
    clearTimeout(entry.expires)
    this.#entries.delete(key)
  }

  clear(): void {
    for (const key of [...this.#entries.keys()]) this.#forget(key)
  }
}
