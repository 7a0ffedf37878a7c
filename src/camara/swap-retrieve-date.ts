import type { Executor } from '../db/engine.ts'
import type { ChangeFamily } from '../swaps/latest-change.ts'
import type { CamaraAccess } from './access.ts'
import { latestKnownChange, swapSubject } from './swap-subject.ts'

const DAY_MS = 86_400_000

export interface SwapDateDeps { db: Executor; monitoredDays: number; now?: () => number }

/** The latest change (RFC 3339, UTC) or null; with null, the monitored period it was looked for in (days). */
export interface SwapDate { latest: string | null; monitoredPeriod?: number }

/**
 * POST /sim-swap/v2/retrieve-date and /device-swap/v1/retrieve-date: the latest change of the
 * family within the monitored period: a SIM or device change, or the activation when nothing
 * changed since (activation is of both families). None kept within the period (older, pruned,
 * or never reported): null with `monitoredPeriod`, which CAMARA reads as "no swap within it".
 */
export async function swapRetrieveDate(deps: SwapDateDeps, family: ChangeFamily, access: CamaraAccess, body: { phoneNumber?: string }): Promise<SwapDate> {
  const phone = swapSubject(access, body.phoneNumber)
  const since = (deps.now ?? Date.now)() - deps.monitoredDays * DAY_MS
  const latest = await latestKnownChange(deps.db, phone, family, since)
  return latest === null ? { latest: null, monitoredPeriod: deps.monitoredDays } : { latest: new Date(latest).toISOString() }
}
