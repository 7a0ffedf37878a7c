import type { CamaraAccess } from './access.ts'
import { CamaraError } from './camara-error.ts'

/**
 * The number a SIM Swap or Device Swap request is about (the definitions' "Identifying the
 * phone number from the access token"): a three-legged token's own number, and then the body
 * must not name one, even the same (422 UNNECESSARY_IDENTIFIER: the server does not compare);
 * with a two-legged token, the body's `phoneNumber`, which must be there (422 MISSING_IDENTIFIER).
 */
export function subjectNumber(access: CamaraAccess, phoneNumber: string | undefined): string {
  if (access.phoneNumber !== null) {
    if (phoneNumber !== undefined) throw new CamaraError(422, 'UNNECESSARY_IDENTIFIER', 'The phone number is already identified by the access token; do not send phoneNumber.')
    return access.phoneNumber
  }
  if (phoneNumber === undefined) throw new CamaraError(422, 'MISSING_IDENTIFIER', 'The phone number cannot be identified: the access token names none, so phoneNumber is required.')
  return phoneNumber
}
