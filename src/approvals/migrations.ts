import type { Migration } from '../db/migrations.ts'

/** Approvals beyond the foundation's table (version 12 on). */
export const APPROVALS_MIGRATIONS: Migration[] = [
  {
    version: 12,
    name: 'approvals: why a request was cancelled (the owner said no, or reported it as not theirs)',
    // NULL for requests cancelled before the reason was recorded, and for every other status.
    up: ['ALTER TABLE approvals ADD COLUMN cancel_reason TEXT'],
  },
]
