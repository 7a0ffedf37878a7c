import type { Executor } from '../db/engine.ts'

/** What the operator reports of a line (src/swaps/migrations.ts). */
export const CHANGE_KINDS = ['activation', 'sim-change', 'device-change'] as const
export type ChangeKind = (typeof CHANGE_KINDS)[number]

/**
 * Which records answer which question. CAMARA counts a new subscription as a SIM swap ("the MSISDN
 * ... is associated with a SIM card it was not associated before"), and a Device Swap is the
 * number-device association "created for the first time or changed": so the activation counts
 * for both, and is what retrieve-date answers when nothing changed since.
 */
export type ChangeFamily = 'sim' | 'device'
export const FAMILY_KINDS: Record<ChangeFamily, readonly ChangeKind[]> = {
  sim: ['activation', 'sim-change'],
  device: ['activation', 'device-change'],
}

/** The latest change of the family on the number at or after `since` (epoch ms), or null. */
export async function latestChange(db: Executor, phone: string, family: ChangeFamily, since: number): Promise<number | null> {
  const [a, b] = FAMILY_KINDS[family]
  const row = await db.get<{ latest: number | string | null }>(
    'SELECT MAX(changed_at) AS latest FROM sim_changes WHERE phone = $1 AND kind IN ($2, $3) AND changed_at >= $4', [phone, a, b, since])
  return row?.latest == null ? null : Number(row.latest)
}

/**
 * Does KNS know the line at all: registered with KNS, or reported by the operator (sim_lines:
 * kept when its change records age out of the monitored period), or with a change record kept.
 */
export async function isKnownNumber(db: Executor, phone: string): Promise<boolean> {
  const row = await db.get<{ known: number }>(
    `SELECT 1 AS known WHERE EXISTS (SELECT 1 FROM sim_lines WHERE phone = $1) OR EXISTS (SELECT 1 FROM numbers WHERE phone = $1)
      OR EXISTS (SELECT 1 FROM sim_changes WHERE phone = $1)`, [phone])
  return row !== undefined
}
