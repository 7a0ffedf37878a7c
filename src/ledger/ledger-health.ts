/**
 * What the service knows of the ledger's health from its own requests: counts by operation
 * and outcome (for /metrics), and whether the latest request reached it (for /readyz and the
 * logs). Kept by the adapter, read by the HTTP layer, so the ledger knows nothing of either.
 */

/**
 * `ok`: answered; `rejected`: answered that the input is wrong (an invalid signature: the
 * caller's fault, not an outage); `error`: answered with an error of its own; `timeout`: no
 * answer within the deadline; `unreachable`: no connection or an HTTP error.
 */
export type LedgerOutcome = 'ok' | 'rejected' | 'error' | 'timeout' | 'unreachable'

export interface LedgerFailure { at: number; operation: string; outcome: LedgerOutcome; detail: string }

export class LedgerHealth {
  readonly #counts = new Map<string, number>()
  #lastOkAt: number | null = null
  #lastFailure: LedgerFailure | null = null
  #reachable: boolean | null = null
  readonly #now: () => number

  constructor(now: () => number = Date.now) {
    this.#now = now
  }

  record(operation: string, outcome: LedgerOutcome, detail = ''): void {
    const key = `${operation}\0${outcome}`
    this.#counts.set(key, (this.#counts.get(key) ?? 0) + 1)
    if (outcome === 'ok' || outcome === 'rejected') {
      this.#lastOkAt = this.#now()
      this.#reachable = true
    } else {
      this.#lastFailure = { at: this.#now(), operation, outcome, detail }
      this.#reachable = false
    }
  }

  /** Requests so far: [operation, outcome, count]. */
  counts(): Array<[string, LedgerOutcome, number]> {
    return [...this.#counts].map(([key, n]) => {
      const [operation, outcome] = key.split('\0') as [string, LedgerOutcome]
      return [operation, outcome, n]
    })
  }

  /** true: the latest request was answered; false: it failed; null: none made yet. */
  get reachable(): boolean | null { return this.#reachable }
  get lastOkAt(): number | null { return this.#lastOkAt }
  get lastFailure(): LedgerFailure | null { return this.#lastFailure }
}
