import type { Executor } from '../db/engine.ts'
import { isKnownNumber } from '../swaps/latest-change.ts'
import type { CamaraAccess } from './access.ts'
import { CamaraError } from './camara-error.ts'
import { swapServiceApplies } from './service-applicability.ts'
import { subjectNumber } from './subject-number.ts'

/**
 * The number a swap question is about, in the order its checks run: who names it (token or
 * body, 422), whether the service applies to such a number (422 SERVICE_NOT_APPLICABLE, no
 * database read), whether KNS knows it (404 IDENTIFIER_NOT_FOUND).
 */
export async function swapSubject(db: Executor, access: CamaraAccess, phoneNumber: string | undefined): Promise<string> {
  const phone = subjectNumber(access, phoneNumber)
  if (!swapServiceApplies(phone)) throw new CamaraError(422, 'SERVICE_NOT_APPLICABLE', 'The service is not available for this phone number: it is not a mobile line.')
  if (!(await isKnownNumber(db, phone))) throw new CamaraError(404, 'IDENTIFIER_NOT_FOUND', 'The phone number is not known to this service.')
  return phone
}
