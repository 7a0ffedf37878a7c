import type { CallFailure } from '../contract/failure-codes.ts'

/**
 * What a SIP proxy does with a verification: the `verstat` it puts in the P-Asserted-Identity
 * (ATIS-1000074, 3GPP TS 24.229) and, on failure, the RFC 8224 response it would send.
 * - `TN-Validation-Passed`: verified.
 * - `No-TN-Validation`: nothing could be verified: no trusted key source applies (no kid the
 *   ledger knows and no x5u), or the PASSporT is not a SHAKEN one.
 * - `TN-Validation-Failed`: any other failure.
 */
export type Verstat = 'TN-Validation-Passed' | 'TN-Validation-Failed' | 'No-TN-Validation'

export interface SipReason { code: 403 | 436 | 437 | 438; text: string }

const NOT_VALIDATED = new Set<string>(['NO_TRUSTED_KEY', 'BAD_PPT'])

export function verstatOf(success: boolean, code: string | undefined): Verstat {
  if (success) return 'TN-Validation-Passed'
  return code !== undefined && NOT_VALIDATED.has(code) ? 'No-TN-Validation' : 'TN-Validation-Failed'
}

const STALE: SipReason = { code: 403, text: 'Stale Date' }
const BAD_INFO: SipReason = { code: 436, text: 'Bad Identity Info' }
const UNSUPPORTED_CREDENTIAL: SipReason = { code: 437, text: 'Unsupported Credential' }
const INVALID: SipReason = { code: 438, text: 'Invalid Identity Header' }

/**
 * RFC 8224 6.2.2: 403 Stale Date when iat is too far from now; 436 when the credential named by
 * info/x5u cannot be obtained; 437 when it is obtained but not acceptable (untrusted, expired,
 * revoked, unsuitable, not authorised for the number, or an algorithm not supported); 438 for
 * everything else about the header or its signature.
 */
const REASONS: Partial<Record<CallFailure, SipReason>> = {
  IAT_TOO_OLD: STALE, IAT_IN_FUTURE: STALE,
  BAD_X5U: BAD_INFO, X5U_NOT_ALLOWED: BAD_INFO, X5U_FETCH_FAILED: BAD_INFO, CERT_INVALID: BAD_INFO, IDENTITY_INFO_MISMATCH: BAD_INFO,
  BAD_ALGORITHM: UNSUPPORTED_CREDENTIAL, CERT_KEY_UNSUITABLE: UNSUPPORTED_CREDENTIAL, CERT_UNTRUSTED: UNSUPPORTED_CREDENTIAL,
  CERT_EXPIRED: UNSUPPORTED_CREDENTIAL, CERT_POLICY: UNSUPPORTED_CREDENTIAL, CERT_REVOKED: UNSUPPORTED_CREDENTIAL, CRL_UNAVAILABLE: UNSUPPORTED_CREDENTIAL,
  TN_NOT_AUTHORIZED: UNSUPPORTED_CREDENTIAL, NO_TRUSTED_KEY: UNSUPPORTED_CREDENTIAL,
}

export function sipReasonOf(code: string): SipReason {
  return REASONS[code as CallFailure] ?? INVALID
}
