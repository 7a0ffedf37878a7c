import { lookupByKey } from '../db/coalesce.ts'
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

/**
 * Does KNS know the line `phone` (an SQL expression) at all: registered with KNS, or reported
 * by the operator (sim_lines: kept when its change records age out of the monitored period), or
 * with a change record kept. One expression for isKnownNumber and lineChanges.
 */
const knownLine = (phone: string): string =>
  `(EXISTS (SELECT 1 FROM sim_lines l WHERE l.phone = ${phone}) OR EXISTS (SELECT 1 FROM numbers n WHERE n.phone = ${phone})` +
  ` OR EXISTS (SELECT 1 FROM sim_changes s WHERE s.phone = ${phone}))`

/** Does KNS know the line at all (knownLine). */
export async function isKnownNumber(db: Executor, phone: string): Promise<boolean> {
  const row = await db.get<{ known: number }>(`SELECT 1 AS known WHERE ${knownLine('$1')}`, [phone])
  return row !== undefined
}

/** A line as the swap answers see it: its latest change of a family (at any time), and whether KNS knows it at all. */
export interface LineChanges { latest: number | null; known: boolean }

/**
 * A line's latest change of the family and isKnownNumber in one statement, per family (its kinds are constants, not
 * input). The since bound is left to the caller: the latest change at or after `since` is the
 * latest change if that is at or after `since`, else there is none.
 */
const lineStatements = (family: ChangeFamily) => {
  const kinds = FAMILY_KINDS[family].map((k) => `'${k}'`).join(', ')
  const columns = (phone: string) =>
    `(SELECT MAX(s.changed_at) FROM sim_changes s WHERE s.phone = ${phone} AND s.kind IN (${kinds})) AS latest, ` +
    `${knownLine(phone)} AS known`
  return { one: `SELECT $1 AS phone, ${columns('$1')}`, many: `SELECT k.phone, ${columns('k.phone')} FROM unnest($1::text[]) AS k(phone)` }
}
const LINE_STATEMENTS: Record<ChangeFamily, { one: string; many: string }> = { sim: lineStatements('sim'), device: lineStatements('device') }

/**
 * What a swap answer reads of a line, in one statement: on the CAMARA check and retrieve-date,
 * which banks call for every payment, two round trips (the change, then whether the number is
 * known when there was none) were most of a request's cost on PostgreSQL. Concurrent
 * requests share one statement (lookupByKey), and while one runs the next go together.
 */
export async function lineChanges(db: Executor, phone: string, family: ChangeFamily): Promise<LineChanges> {
  const { one, many } = LINE_STATEMENTS[family]
  const row = await lookupByKey<{ latest: number | string | null; known: boolean | number }>(db, one, many, 'phone', phone, { inFlight: 1 })
  return row === undefined ? { latest: null, known: false } : { latest: row.latest == null ? null : Number(row.latest), known: Boolean(row.known) }
}
