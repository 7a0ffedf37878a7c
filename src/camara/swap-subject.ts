import type { Executor } from '../db/engine.ts'
import { lineChanges, type ChangeFamily } from '../swaps/latest-change.ts'
import type { CamaraAccess } from './access.ts'
import { CamaraError } from './camara-error.ts'
import { swapServiceApplies } from './service-applicability.ts'
import { subjectNumber } from './subject-number.ts'

/**
 * The number a swap question is about, checked without the database: who names it (token or
 * body, 422), and whether the service applies to such a number (422 SERVICE_NOT_APPLICABLE).
 */
export function swapSubject(access: CamaraAccess, phoneNumber: string | undefined): string {
  const phone = subjectNumber(access, phoneNumber)
  if (!swapServiceApplies(phone)) throw new CamaraError(422, 'SERVICE_NOT_APPLICABLE', 'The service is not available for this phone number: it is not a mobile line.')
  return phone
}

/**
 * The latest change of the family on a number KNS knows, at or after `since`, or null; a number
 * it does not know is 404 IDENTIFIER_NOT_FOUND. One statement (lineChanges) answers both.
 */
export async function latestKnownChange(db: Executor, phone: string, family: ChangeFamily, since: number): Promise<number | null> {
  const { latest, known } = await lineChanges(db, phone, family)
  if (!known) throw new CamaraError(404, 'IDENTIFIER_NOT_FOUND', 'The phone number is not known to this service.')
  return latest !== null && latest >= since ? latest : null
}
