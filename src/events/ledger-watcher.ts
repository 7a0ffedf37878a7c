import { findApproval, statusAt } from '../approvals/approval.ts'
import { VERIFY_TRANSACTION, type VerifyTransactionContext } from '../approvals/verify-transaction.ts'
import type { Database } from '../db/engine.ts'
import { isDatabaseUnavailable } from '../db/unavailable.ts'
import type { LeaderLock } from '../db/leader-lock.ts'
import { LedgerUnavailableError } from '../errors.ts'
import { runChecks } from '../lib/checks.ts'
import type { FeedEvent, Ledger } from '../ledger/ledger.ts'

export type WatcherState = 'starting' | 'watching' | 'standby' | 'unreachable' | 'failing' | 'stopped'
export type EventOutcome = 'approved' | 'rejected' | 'skipped'

export interface LedgerWatcherOptions {
  /** Between polls once the feed is read to its end (LEDGER_WATCH_INTERVAL_MS). */
  intervalMs: number
  /** Events per read. */
  pageSize?: number
  /** Longest pause after failures (the backoff doubles from intervalMs up to this). */
  maxBackoffMs?: number
  /** How often a process that is not the watcher asks to become it. */
  standbyRetryMs?: number
}

const APPROVAL_NUMBER = /^[0-9a-f]{24}$/

/**
 * Follows the ledger's `ApprovalEvent`s in order, from a cursor stored in the database, and
 * approves the `event` approvals they name, so an owner who calls `kns::approve` from any
 * wallet is heard without anyone posting the digest to verify_transaction. Per event:
 * 1. its `ref` must name a stored approval (else skipped: the ledger is public, anyone can emit);
 * 2. that approval must be an `event` one and pending (else skipped: a replayed or late event
 *    changes nothing);
 * 3. verify_transaction's own checks run on its transaction (succeeded, the event's token and
 *    ref match, the sender owns the token now), and approve it; a failed check is recorded in
 *    ledger_watch_rejections with its code and reason, and approves nothing;
 * 4. the cursor moves past it. A ledger or database failure before that leaves the cursor
 *    where it was: the event is read again after a backoff, never skipped.
 * One process watches at a time (LeaderLock); the others stand by and take over.
 */
export class LedgerWatcher {
  state: WatcherState = 'starting'
  lastError: string | null = null
  /** Ledger time (epoch ms) of the last event applied. */
  lastEventAt: number | null = null
  /** When a read last reached the end of the feed. */
  caughtUpAt: number | null = null
  readonly counts = { approved: 0, rejected: 0, skipped: 0, errors: 0 }
  /** Told when the state changes (the server logs it), with the error that caused it if any. */
  onStateChange: (state: WatcherState, error: unknown) => void = () => {}

  readonly #db: Database
  readonly #ledger: Ledger
  readonly #lock: LeaderLock
  readonly #options: Required<LedgerWatcherOptions>
  #stopped = false
  #sleep: { timer: NodeJS.Timeout; wake: () => void } | undefined
  #loop: Promise<void> | undefined

  constructor(db: Database, ledger: Ledger, lock: LeaderLock, options: LedgerWatcherOptions) {
    this.#db = db
    this.#ledger = ledger
    this.#lock = lock
    this.#options = { pageSize: 50, maxBackoffMs: 30_000, standbyRetryMs: 2000, ...options }
  }

  get source(): string {
    return this.#ledger.feedSource
  }

  start(): void {
    this.#loop ??= this.#run()
  }

  /** Poll now instead of at the end of the interval (tests; a hint that something happened). */
  wake(): void {
    this.#sleep?.wake()
  }

  async #run(): Promise<void> {
    let failures = 0
    while (!this.#stopped) {
      let pause: number
      try {
        if (!(await this.#lock.acquire())) {
          this.#enter('standby', null)
          await this.#pause(this.#options.standbyRetryMs)
          continue
        }
        const more = await this.poll()
        failures = 0
        this.lastError = null
        this.#enter('watching', null)
        pause = more ? 0 : this.#options.intervalMs
      } catch (err) {
        failures++
        this.counts.errors++
        // Only the ledger's messages are written for the outside (no URL, no raw cause); a
        // database error's may name hosts, so it is only logged.
        const ledger = err instanceof LedgerUnavailableError
        this.lastError = ledger ? err.message : 'the database failed (see the log)'
        this.#enter(ledger ? 'unreachable' : 'failing', err)
        pause = Math.min(this.#options.intervalMs * 2 ** Math.min(failures, 16), this.#options.maxBackoffMs)
        // The backoff spares a ledger in trouble. An unreachable or read-only database (a
        // failover) is asked again as often as a standby asks for the lock: backing off there
        // delayed the first watch after a failover by up to maxBackoffMs (30 s).
        if (isDatabaseUnavailable(err)) pause = Math.min(pause, this.#options.standbyRetryMs)
      }
      if (pause > 0) await this.#pause(pause)
    }
    this.state = 'stopped'
  }

  #enter(state: WatcherState, error: unknown): void {
    const changed = state !== this.state
    this.state = state
    if (changed) this.onStateChange(state, error)
  }

  #pause(ms: number): Promise<void> {
    return new Promise((resolve) => {
      if (this.#stopped) return resolve()
      const wake = () => {
        clearTimeout(timer)
        this.#sleep = undefined
        resolve()
      }
      const timer = setTimeout(wake, ms)
      this.#sleep = { timer, wake }
    })
  }

  /**
   * One read of the feed from the stored cursor, if this process holds the watcher's lock
   * (else nothing: false); true when more events follow at once.
   */
  async poll(): Promise<boolean> {
    if (!(await this.#lock.acquire())) return false
    const source = this.source
    const stored = await this.#db.get<{ cursor: string }>('SELECT cursor FROM ledger_watch_cursors WHERE source = $1', [source])
    const page = await this.#ledger.approvalEvents(stored?.cursor ?? null, this.#options.pageSize)
    for (const event of page.events) {
      // A standby process that took over meanwhile reads from the stored cursor: stop here.
      if (!this.#lock.held || this.#stopped) return false
      const outcome = await this.apply(event)
      this.counts[outcome]++
      await this.#db.run(`INSERT INTO ledger_watch_cursors (source, cursor, last_event_at, updated_at) VALUES ($1, $2, $3, $4)
        ON CONFLICT (source) DO UPDATE SET cursor = excluded.cursor, last_event_at = excluded.last_event_at, updated_at = excluded.updated_at`,
      [source, event.cursor, event.timestampMs, Date.now()])
      if (event.timestampMs !== null) this.lastEventAt = event.timestampMs
    }
    if (!page.more) this.caughtUpAt = Date.now()
    return page.more
  }

  /** Steps 1-3 above for one event. Throws (leaving the cursor) on a ledger or database failure. */
  async apply(event: FeedEvent): Promise<EventOutcome> {
    const ref = event.json.ref
    if (typeof ref !== 'string' || !APPROVAL_NUMBER.test(ref)) return 'skipped'
    const now = Date.now()
    const approval = await findApproval(this.#db, ref)
    if (approval === null || approval.method !== 'event' || statusAt(approval, now) !== 'pending') return 'skipped'
    const ctx: VerifyTransactionContext = { db: this.#db, ledger: this.#ledger, approvalNumber: ref, digest: event.digest, now }
    const outcome = await runChecks(VERIFY_TRANSACTION, ctx)
    if (outcome.ok) return 'approved'
    // The feed has just named this transaction: "not found" is the ledger's read side lagging
    // behind its own feed (replicas), not a verdict. Read the event again later.
    if (outcome.code === 'TRANSACTION_NOT_FOUND') throw new LedgerUnavailableError(`the ledger listed an event of transaction ${event.digest} but does not find the transaction yet`)
    await this.#db.run(`INSERT INTO ledger_watch_rejections (source, digest, event_index, approval_number, code, reason, created_at)
      VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (source, digest, event_index) DO NOTHING`,
    [this.source, event.digest, event.index, ref, outcome.code, outcome.message.slice(0, 500), now])
    return 'rejected'
  }

  /**
   * How far behind the ledger the watcher is (s): while it has events left to read, the age of
   * the last one applied; once it has read to the end, the time since it did (a poll interval,
   * normally; growing while the ledger cannot be read). null before its first read.
   */
  lagSeconds(now = Date.now()): number | null {
    if (this.state === 'standby' || this.state === 'stopped') return null
    const since = this.caughtUpAt ?? this.lastEventAt
    return since === null ? null : Math.max(0, (now - since) / 1000)
  }

  async stop(): Promise<void> {
    this.#stopped = true
    this.#sleep?.wake()
    await this.#loop
    await this.#lock.close()
  }
}
