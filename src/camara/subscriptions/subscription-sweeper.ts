import type { Database } from '../../db/engine.ts'
import { LeaderInterval } from '../../db/leader-interval.ts'
import type { LeaderLock } from '../../db/leader-lock.ts'
import { endSubscription } from './end-subscription.ts'
import type { TerminationReason } from './subscription.ts'

/**
 * How long before the sink credential's token expires the subscription ends: its
 * `subscription-ended` (ACCESS_TOKEN_EXPIRED) must still reach the sink with a valid token
 * (the definition: "notify the client before the expiration date").
 */
export const TOKEN_EXPIRY_NOTICE_MS = 60_000
const BATCH = 200

/**
 * Ends subscriptions whose time is up: SUBSCRIPTION_EXPIRED at their expiry,
 * ACCESS_TOKEN_EXPIRED a minute before their sink token expires. One server process sweeps at a
 * time (a leader lock, as the approvals' expiry sweeper); endSubscription's conditional update
 * would keep two from ending one twice anyway.
 */
export class SubscriptionSweeper {
  readonly #db: Database
  readonly #publicBaseUrl: () => string
  readonly #interval: LeaderInterval
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

  /** Ends everything due at `now`; returns how many. */
  async sweep(now = Date.now()): Promise<number> {
    let total = 0
    for (;;) {
      const due = await this.#db.all<{ id: string; expired: number }>(`SELECT id, CASE WHEN expires_at IS NOT NULL AND expires_at <= $1 THEN 1 ELSE 0 END AS expired
        FROM camara_subscriptions WHERE status = 'ACTIVE' AND ((expires_at IS NOT NULL AND expires_at <= $1) OR (access_token_expires_at IS NOT NULL AND access_token_expires_at <= $2))
        ORDER BY id LIMIT ${BATCH}`, [now, now + TOKEN_EXPIRY_NOTICE_MS])
      for (const { id, expired } of due) {
        const reason: TerminationReason = Number(expired) === 1 ? 'SUBSCRIPTION_EXPIRED' : 'ACCESS_TOKEN_EXPIRED'
        if ((await this.#db.transaction((tx) => endSubscription(tx, id, reason, this.#publicBaseUrl(), now))) !== null) total++
      }
      if (due.length < BATCH) return total
    }
  }

  stop(): Promise<void> {
    return this.#interval.stop()
  }
}
