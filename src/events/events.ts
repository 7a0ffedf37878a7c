import type { Config } from '../config.ts'
import type { Database } from '../db/engine.ts'
import { LeaderLock } from '../db/leader-lock.ts'
import type { Ledger } from '../ledger/ledger.ts'
import type { OutboundOptions } from '../lib/outbound-http.ts'
import { SealedBox } from '../lib/sealed-box.ts'
import { ExpirySweeper } from './expiry-sweeper.ts'
import { prune, type PruneCounts } from './prune.ts'

const RETENTION_SWEEP_MS = 3600_000
import { LedgerWatcher } from './ledger-watcher.ts'
import { MAX_RESPONSE_BYTES } from './webhooks/attempt.ts'
import { DeliveryWorker, type FailedAttempt } from './webhooks/delivery-worker.ts'

/** How often expired approvals are looked for: their events go out within about this long. */
const EXPIRY_SWEEP_MS = 1000

/**
 * The events subsystem of one process: the ledger watcher (one process at a time), the
 * expiry sweeper and the webhook delivery worker (every server process). Built by every
 * process; started only by servers (`start()`), so a one-off command never sends anything
 * it did not ask for.
 */
export class Events {
  readonly watcher: LedgerWatcher
  readonly sweeper: ExpirySweeper
  readonly outbound: OutboundOptions
  /** Told of each failed webhook delivery attempt (the server logs it: src/http/observability.ts). */
  onDeliveryFailed: ((failed: FailedAttempt) => void) | undefined
  readonly #config: Config
  readonly #db: Database
  readonly #secret: () => Buffer
  #box: SealedBox | undefined
  #deliveries: DeliveryWorker | undefined
  #started = false
  #retention: ReturnType<typeof setInterval> | undefined
  readonly #ledger: Ledger

  get started(): boolean {
    return this.#started
  }

  constructor(config: Config, db: Database, ledger: Ledger, secret: () => Buffer) {
    this.#config = config
    this.#db = db
    this.#secret = secret
    this.#ledger = ledger
    this.outbound = { allowPrivate: config.webhookAllowPrivate, timeoutMs: config.webhookTimeoutMs, maxResponseBytes: MAX_RESPONSE_BYTES }
    this.watcher = new LedgerWatcher(db, ledger, new LeaderLock(db, 'ledger-watcher'), { intervalMs: config.ledgerWatchIntervalMs })
    // Its expiries signal the approvals topic like any decision, which wakes the deliveries (decided()).
    this.sweeper = new ExpirySweeper(db, { intervalMs: EXPIRY_SWEEP_MS, lock: new LeaderLock(db, 'expiry-sweeper') })
  }

  /** Webhook secrets are sealed under the server secret (a tool without one cannot open them). */
  get box(): SealedBox {
    return this.#box ??= new SealedBox(this.#secret(), 'webhook-secrets')
  }

  get deliveries(): DeliveryWorker {
    // The worker's own writes (claims, outcomes) commit without waiting for the disk, on a
    // pool of their own: losing the last of them in a crash of the database server means a
    // delivery is attempted again with the same webhook-id, which at-least-once allows; and
    // the decisions' commits no longer share their disk flushes with it.
    return this.#deliveries ??= new DeliveryWorker(this.#db.asyncCommit, this.box, {
      outbound: this.outbound,
      retry: { baseMs: this.#config.webhookRetryBaseMs, giveUpAfterMs: this.#config.webhookGiveUpAfterS * 1000 },
      fairness: { perEndpoint: this.#config.webhookEndpointConcurrency, breakerFailures: this.#config.webhookBreakerFailures },
      onFailedAttempt: (failed) => this.onDeliveryFailed?.(failed),
    })
  }

  /** A decision was committed somewhere: its deliveries are due now. */
  decided(): void {
    if (this.#started) this.deliveries.wake()
  }

  start(): void {
    if (this.#started) return
    this.#started = true
    this.deliveries.start()
    this.sweeper.start()
    this.watcher.start()
    if (this.#config.retentionDays > 0) {
      // Hourly, in every server process: the deletes are idempotent, in batches, and cheap when there is nothing old.
      this.#retention = setInterval(() => { void this.prune().catch(() => { /* the database is down: next hour */ }) }, RETENTION_SWEEP_MS)
      this.#retention.unref()
    }
  }

  /** RETENTION_DAYS applied now (`kns prune`; the server does it every hour). */
  prune(olderThanMs = this.#config.retentionDays * 86_400_000): Promise<PruneCounts> {
    return prune(this.#db, olderThanMs, this.#ledger.kind === 'local' ? { embeddedFeedSource: this.#ledger.feedSource } : {})
  }

  async stop(): Promise<void> {
    if (!this.#started) return
    this.#started = false
    clearInterval(this.#retention)
    await Promise.all([this.watcher.stop(), this.sweeper.stop(), this.#deliveries?.stop()])
  }
}
