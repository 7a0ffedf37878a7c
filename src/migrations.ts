/**
 * Every migration of the service, in order: the foundation's (src/db) and each area's own
 * (src/approvals, src/stats, src/events, src/caller/shaken, src/accounts, src/keys, src/ledger, src/swaps, src/camara). Assembled here, above the areas, so that src/db imports no area. Versions are
 * unique and consecutive; a gap or a duplicate stops the start, not a deployment halfway.
 */
import { FOUNDATION_MIGRATIONS, type Migration } from './db/migrations.ts'
import { ACCOUNTS_MIGRATIONS } from './accounts/migrations.ts'
import { APPROVALS_MIGRATIONS } from './approvals/migrations.ts'
import { SHAKEN_MIGRATIONS } from './caller/shaken/migrations.ts'
import { EVENTS_MIGRATIONS } from './events/migrations.ts'
import { KEYS_MIGRATIONS } from './keys/migrations.ts'
import { LEDGER_MIGRATIONS } from './ledger/migrations.ts'
import { STATS_MIGRATIONS } from './stats/migrations.ts'
import { SWAPS_MIGRATIONS } from './swaps/migrations.ts'
import { CAMARA_MIGRATIONS } from './camara/migrations.ts'

function inOrder(migrations: Migration[]): Migration[] {
  const sorted = [...migrations].sort((a, b) => a.version - b.version)
  sorted.forEach((m, i) => {
    if (m.version !== i + 1) throw new Error(`migration versions must run 1, 2, 3, ... without gaps or duplicates: found ${m.version} at position ${i + 1}`)
  })
  return sorted
}

export const MIGRATIONS: readonly Migration[] = inOrder([...FOUNDATION_MIGRATIONS, ...STATS_MIGRATIONS, ...EVENTS_MIGRATIONS, ...SHAKEN_MIGRATIONS, ...APPROVALS_MIGRATIONS, ...ACCOUNTS_MIGRATIONS, ...KEYS_MIGRATIONS, ...LEDGER_MIGRATIONS, ...SWAPS_MIGRATIONS, ...CAMARA_MIGRATIONS])
