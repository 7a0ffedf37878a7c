import type { CamaraAccess } from './access.ts'
import { CamaraError } from './camara-error.ts'

/**
 * The number a request is about, as CAMARA's "Identifying the phone number from the access
 * token" says: a three-legged token names it, and then the request must not (even the same
 * number: the server cannot tell a caller's guess from a fact); a two-legged one does not, and
 * then the request must.
 */
export function subjectNumber(access: CamaraAccess, phoneNumber: string | undefined): string {
  if (access.phoneNumber !== null) {
    if (phoneNumber !== undefined) throw new CamaraError(422, 'UNNECESSARY_IDENTIFIER', 'The phone number is already identified by the access token.')
    return access.phoneNumber
  }
  if (phoneNumber === undefined) throw new CamaraError(422, 'MISSING_IDENTIFIER', 'The phone number cannot be identified: a two-legged access token needs phoneNumber in the request.')
  return phoneNumber
}
