import type { Migration } from '../db/migrations.ts'

/**
 * The CAMARA APIs' own state (version 24 on): SIM Swap subscriptions. Each is also a row of
 * `webhook_subscriptions` (same ID, format `cloudevents`, owner `client:<clientId>`, the sink
 * credential sealed in place of a signing secret), so its events go out through the webhook
 * machinery: the outbox, claims, retries, the breaker and the guarded client.
 */
export const CAMARA_MIGRATIONS: Migration[] = [
  {
    version: 24,
    name: 'camara: SIM Swap subscriptions (sink, number, lifetime, events sent, state)',
    up: [
      // identified_by_token: 1 when the number came from a three-legged token (never shown back then).
      // status: ACTIVE, EXPIRED (ended: expiry, maximum events, sink token expiry, network) or DELETED.
      `CREATE TABLE camara_subscriptions (
        id TEXT PRIMARY KEY REFERENCES webhook_subscriptions (id),
        client_id TEXT NOT NULL,
        phone TEXT NOT NULL,
        identified_by_token INTEGER NOT NULL,
        types TEXT NOT NULL,
        sink TEXT NOT NULL,
        expires_at BIGINT,
        max_events INTEGER,
        events_sent INTEGER NOT NULL DEFAULT 0,
        access_token_expires_at BIGINT,
        status TEXT NOT NULL,
        ended_reason TEXT,
        ended_at BIGINT,
        created_at BIGINT NOT NULL
      )`,
      // A recorded change finds the number's live subscriptions.
      `CREATE INDEX camara_subscriptions_phone ON camara_subscriptions (phone) WHERE status = 'ACTIVE'`,
      `CREATE INDEX camara_subscriptions_client ON camara_subscriptions (client_id, created_at)`,
      // The sweeper's two questions each second: whose expiry, whose sink token's expiry, has come.
      `CREATE INDEX camara_subscriptions_expiry ON camara_subscriptions (expires_at) WHERE status = 'ACTIVE'`,
      `CREATE INDEX camara_subscriptions_token_expiry ON camara_subscriptions (access_token_expires_at) WHERE status = 'ACTIVE'`,
      // The retention prune: ended subscriptions, oldest first.
      `CREATE INDEX camara_subscriptions_ended ON camara_subscriptions (ended_at) WHERE status <> 'ACTIVE'`,
      // One live subscription per client, number and sink: a second is 409 ALREADY_EXISTS, even when both are created together.
      `CREATE UNIQUE INDEX camara_subscriptions_once ON camara_subscriptions (client_id, phone, sink) WHERE status = 'ACTIVE'`,
    ],
  },
]
