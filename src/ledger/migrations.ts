import type { Migration } from '../db/migrations.ts'

/** The embedded ledger after the foundation (version 15 on). */
export const LEDGER_MIGRATIONS: Migration[] = [
  {
    version: 15,
    name: 'embedded ledger: approval events found by their content (a token approves a ref once)',
    // Not unique: databases from before may hold replays already; the ledger refuses new ones.
    up: ['CREATE INDEX ledger_events_approval ON ledger_events (type, json)'],
  },
]
