import type { Database } from '../../db/engine.ts'
import { LeaderInterval } from '../../db/leader-interval.ts'
import type { LeaderLock } from '../../db/leader-lock.ts'
import { endClientSubscriptions, endSubscription } from './end-subscription.ts'
import type { TerminationReason } from './subscription.ts'

/**
 * How long before the sink credential's token expires the subscription ends: its
 * `subscription-ended` (ACCESS_TOKEN_EXPIRED) must still reach the sink with a valid token
 * (the definition: "notify the client before the expiration date").
 */
export const TOKEN_EXPIRY_NOTICE_MS = 60_000
const BATCH = 200
/** Removed clients are looked for once a minute (at one sweep a second), not every second. */
const CLIENT_CHECK_EVERY = 60

/**
 * Ends subscriptions whose time is up: SUBSCRIPTION_EXPIRED at their expiry,
 * ACCESS_TOKEN_EXPIRED a minute before their sink token expires; and, as the removal of a client
 * does, the subscriptions of a client that is gone (one created as its client was being removed). One server process sweeps at a
 * time (a leader lock, as the approvals' expiry sweeper); endSubscription's conditional update
 * would keep two from ending one twice anyway.
 */
export class SubscriptionSweeper {
  readonly #db: Database
  readonly #publicBaseUrl: () => string
  readonly #interval: LeaderInterval
  #runs = 0
  /** Told when something was ended (the delivery worker wakes). */
  onEnded: () => void = () => {}

  constructor(db: Database, options: { publicBaseUrl: () => string; intervalMs: number; lock?: LeaderLock }) {
    this.#db = db
    this.#publicBaseUrl = options.publicBaseUrl
    this.#interval = new LeaderInterval(options.intervalMs, options.lock, async () => {
      if ((await this.sweep()) > 0) this.onEnded()
    })
  }

  start(): void {
    this.#interval.start()
  }

  /**
   * Ends everything due at `now`; returns how many. Each question is answered from its own
   * index (only live subscriptions are indexed): the expiries each run, and, every
   * CLIENT_CHECK_EVERY runs, live subscriptions whose client is gone (ended silently, as
   * endClientSubscriptions says).
   */
  async sweep(now = Date.now(), options: { clientsGone?: boolean } = {}): Promise<number> {
    const clientsGone = options.clientsGone ?? (this.#runs++ % CLIENT_CHECK_EVERY === 0)
    let total = 0
    total += await this.#endAll(`SELECT id FROM camara_subscriptions WHERE status = 'ACTIVE' AND expires_at <= $1 ORDER BY expires_at LIMIT ${BATCH}`, [now], 'SUBSCRIPTION_EXPIRED', now)
    total += await this.#endAll(`SELECT id FROM camara_subscriptions WHERE status = 'ACTIVE' AND access_token_expires_at <= $1 ORDER BY access_token_expires_at LIMIT ${BATCH}`,
      [now + TOKEN_EXPIRY_NOTICE_MS], 'ACCESS_TOKEN_EXPIRED', now)
    if (clientsGone) {
      // A subscription created while its client was being removed outlived the removal's own ending (src/accounts/clients.ts).
      const orphans = await this.#db.all<{ client_id: string }>(`SELECT DISTINCT s.client_id FROM camara_subscriptions s WHERE s.status = 'ACTIVE'
        AND NOT EXISTS (SELECT 1 FROM oidc_clients c WHERE c.client_id = s.client_id) ORDER BY s.client_id LIMIT ${BATCH}`)
      for (const { client_id: clientId } of orphans) {
        total += await this.#db.transaction((tx) => endClientSubscriptions(tx, clientId, now))
      }
    }
    return total
  }

  /** Ends, one transaction each, what `select` finds (in batches until it finds none). */
  async #endAll(select: string, params: unknown[], reason: TerminationReason, now: number): Promise<number> {
    let total = 0
    for (;;) {
      const due = await this.#db.all<{ id: string }>(select, params)
      let ended = 0
      for (const { id } of due) {
        if ((await this.#db.transaction((tx) => endSubscription(tx, id, reason, this.#publicBaseUrl(), now))) !== null) ended++
      }
      total += ended
      // Another process ended them meanwhile, or nothing more is due.
      if (due.length < BATCH || ended === 0) return total
    }
  }

  stop(): Promise<void> {
    return this.#interval.stop()
  }
}
