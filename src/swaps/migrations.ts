import type { Migration } from '../db/migrations.ts'

/**
 * SIM and device change records (version 21 on): what the operator reports of each line
 * (`POST /api/v1/admin/sim-changes`, `kns sim-changes import`), the source of the CAMARA SIM
 * Swap and Device Swap answers. Kept for SIM_SWAP_MONITORED_DAYS, then pruned.
 */
export const SWAPS_MIGRATIONS: Migration[] = [
  {
    version: 21,
    name: 'swaps: SIM and device change records reported by the operator (activation, sim-change, device-change)',
    up: [
      // event_id: the operator's own ID of the change, which makes every report idempotent.
      // kind: activation | sim-change | device-change; changed_at: when it happened (epoch ms);
      // approval_number: the KNS approval that authorised it (checked when recorded), or null.
      `CREATE TABLE sim_changes (
        event_id TEXT PRIMARY KEY,
        phone TEXT NOT NULL,
        kind TEXT NOT NULL,
        changed_at BIGINT NOT NULL,
        approval_number TEXT,
        recorded_by TEXT NOT NULL,
        recorded_at BIGINT NOT NULL
      )`,
      // The answers' one query: a number's latest change of some kinds since an instant.
      'CREATE INDEX sim_changes_phone ON sim_changes (phone, changed_at)',
      // The prune: oldest first.
      'CREATE INDEX sim_changes_changed ON sim_changes (changed_at)',
      // The lines the operator has reported (any change, however old): that a line exists is not
      // a change record, so the prune leaves it. A line whose records aged out is still known,
      // and answered "no swap within the monitored period" rather than "not found".
      `CREATE TABLE sim_lines (
        phone TEXT PRIMARY KEY,
        known_since BIGINT NOT NULL
      )`,
    ],
  },
]
