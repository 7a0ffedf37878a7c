import type { Executor } from '../db/engine.ts'
import type { ChangeFamily } from '../swaps/latest-change.ts'
import type { CamaraAccess } from './access.ts'
import { CamaraError } from './camara-error.ts'
import { latestKnownChange, swapSubject } from './swap-subject.ts'

const HOUR_MS = 3_600_000
/** The definitions' default `maxAge`, in hours. */
export const DEFAULT_MAX_AGE_H = 240

export interface SwapCheckDeps { db: Executor; monitoredDays: number; now?: () => number }

/**
 * POST /sim-swap/v2/check and /device-swap/v1/check: was there a change of the family (the
 * SIM: activation or SIM change; the device: activation or device change) within the last
 * `maxAge` hours. A `maxAge` past the monitored period cannot be answered by law: 400
 * OUT_OF_RANGE, checked before anything about the number.
 */
export async function swapCheck(deps: SwapCheckDeps, family: ChangeFamily, access: CamaraAccess, body: { phoneNumber?: string; maxAge?: number }): Promise<{ swapped: boolean }> {
  const maxAge = body.maxAge ?? DEFAULT_MAX_AGE_H
  if (maxAge > deps.monitoredDays * 24) {
    throw new CamaraError(400, 'OUT_OF_RANGE', `Check monitor period could not exceed local regulations (${deps.monitoredDays} days): maxAge must be at most ${deps.monitoredDays * 24} hours.`)
  }
  const phone = swapSubject(access, body.phoneNumber)
  const since = (deps.now ?? Date.now)() - maxAge * HOUR_MS
  return { swapped: (await latestKnownChange(deps.db, phone, family, since)) !== null }
}
