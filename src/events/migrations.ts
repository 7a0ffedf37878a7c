import type { Migration } from '../db/migrations.ts'

/**
 * The events subsystem's tables (version 9):
 * - `approval_events`: the outbox. One row per decision (approved, cancelled, expired), written
 *   in the transaction that decides, with the body every delivery sends, byte for byte.
 * - `webhook_subscriptions`: per API key; the signing secret sealed with the server secret.
 * - `webhook_deliveries`: one row per (event, subscription), written with the event; claimed
 *   by one process at a time (a lease), retried until delivered or given up.
 * - `ledger_watch_cursors`, `ledger_watch_rejections`: where the ledger watcher is in the
 *   ledger's ApprovalEvent feed, and the events it refused, with the reason.
 */
function deliveriesTable(id: string): string {
  return `CREATE TABLE webhook_deliveries (
    id ${id},
    event_id TEXT NOT NULL REFERENCES approval_events (event_id),
    subscription_id TEXT NOT NULL REFERENCES webhook_subscriptions (id),
    approval_number TEXT,
    state TEXT NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    next_attempt_at BIGINT NOT NULL,
    locked_until BIGINT,
    claim TEXT,
    last_status INTEGER,
    last_error TEXT,
    created_at BIGINT NOT NULL,
    finished_at BIGINT
  )`
}

const DELIVERY_INDEXES = [
  // The claim's scan: due deliveries only.
  `CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE state = 'pending'`,
  // Order per approval: an earlier pending delivery of the same approval to the same endpoint.
  `CREATE INDEX webhook_deliveries_order ON webhook_deliveries (subscription_id, approval_number, id) WHERE state = 'pending'`,
  `CREATE INDEX webhook_deliveries_claim ON webhook_deliveries (claim) WHERE claim IS NOT NULL`,
  `CREATE INDEX webhook_deliveries_event ON webhook_deliveries (event_id)`,
  `CREATE INDEX webhook_deliveries_failed ON webhook_deliveries (finished_at) WHERE state = 'failed'`,
]

export const EVENTS_MIGRATIONS: Migration[] = [
  {
    version: 9,
    name: 'approval events: outbox, webhook subscriptions and deliveries, ledger watcher cursor',
    up: [
      `CREATE TABLE approval_events (
        event_id TEXT PRIMARY KEY,
        approval_number TEXT,
        api_key_id TEXT NOT NULL,
        type TEXT NOT NULL,
        occurred_at BIGINT NOT NULL,
        body TEXT NOT NULL,
        created_at BIGINT NOT NULL,
        UNIQUE (approval_number, type)
      )`,
      `CREATE INDEX approval_events_created ON approval_events (created_at)`,
      `CREATE TABLE webhook_subscriptions (
        id TEXT PRIMARY KEY,
        api_key_id TEXT NOT NULL,
        url TEXT NOT NULL,
        events TEXT NOT NULL,
        secret_sealed TEXT NOT NULL,
        created_at BIGINT NOT NULL,
        removed_at BIGINT
      )`,
      `CREATE INDEX webhook_subscriptions_key ON webhook_subscriptions (api_key_id) WHERE removed_at IS NULL`,
      `CREATE TABLE ledger_watch_cursors (
        source TEXT PRIMARY KEY,
        cursor TEXT NOT NULL,
        last_event_at BIGINT,
        updated_at BIGINT NOT NULL
      )`,
      `CREATE TABLE ledger_watch_rejections (
        source TEXT NOT NULL,
        digest TEXT NOT NULL,
        event_index INTEGER NOT NULL,
        approval_number TEXT NOT NULL,
        code TEXT NOT NULL,
        reason TEXT NOT NULL,
        created_at BIGINT NOT NULL,
        PRIMARY KEY (source, digest, event_index)
      )`,
    ],
    only: {
      sqlite: [deliveriesTable('INTEGER PRIMARY KEY AUTOINCREMENT'), ...DELIVERY_INDEXES],
      postgres: [deliveriesTable('BIGSERIAL PRIMARY KEY'), ...DELIVERY_INDEXES],
    },
  },
  {
    version: 16,
    name: 'events: a circuit breaker per webhook subscription (consecutive failures, paused until)',
    up: [
      'ALTER TABLE webhook_subscriptions ADD COLUMN consecutive_failures INTEGER NOT NULL DEFAULT 0',
      'ALTER TABLE webhook_subscriptions ADD COLUMN paused_until BIGINT',
      'ALTER TABLE webhook_subscriptions ADD COLUMN pauses INTEGER NOT NULL DEFAULT 0',
    ],
  },
  {
    version: 20,
    name: 'events: the trace (W3C traceparent) of what queued a webhook delivery, continued by its attempts',
    // Null when tracing is off, and in rows the previous release writes.
    up: ['ALTER TABLE webhook_deliveries ADD COLUMN traceparent TEXT'],
  },
  {
    version: 23,
    name: 'events: a subscription\'s delivery format (standard-webhooks, or cloudevents for the CAMARA subscriptions)',
    // Every subscription before this one is a vendor's Standard Webhooks endpoint.
    up: [`ALTER TABLE webhook_subscriptions ADD COLUMN format TEXT NOT NULL DEFAULT 'standard-webhooks'`],
  },
]
