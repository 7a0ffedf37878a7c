/**
 * The stable reasons of a verdict: the `code` of a 200 `{ success: false }` from the approval
 * decisions, and the failing step of a call verification. One list each, typed: the checks
 * can raise only these, the OpenAPI document and docs/failure-codes.md are generated from
 * them, and the pages may show them. Dependency-free (the pages bundle it).
 */

/** verify_signature, verify_transaction and approval-cancel. */
export const APPROVAL_FAILURES = {
  WRONG_METHOD: 'the approval uses the other method (sign: verify_signature; event: verify_transaction)',
  CANCELLED: 'the request was cancelled',
  EXPIRED: 'the request expired',
  INVALID_SIGNATURE: 'the signature does not verify over this approval\'s signMessage (or the ledger says a zkLogin signature does not verify)',
  UNSUPPORTED_SIGNATURE_SCHEME: 'a zkLogin signature on the embedded ledger (LEDGER=local), which cannot verify one',
  WRONG_SIGNER: 'the signer or sender does not own the token (or another address approved already)',
  TOKEN_NOT_FOUND: 'the number-system token no longer exists',
  TRANSACTION_NOT_FOUND: 'the ledger has no transaction with this digest (after re-reading it for LEDGER_FRESHNESS_MS)',
  TRANSACTION_FAILED: 'the transaction did not execute successfully',
  EVENT_MISSING: 'the transaction emitted no ApprovalEvent with this token and approval number',
  ALREADY_APPROVED: 'approval-cancel: the request was approved already',
} as const
export type ApprovalFailure = keyof typeof APPROVAL_FAILURES

/** call-signature-verification (the `debug.reason` prefix; `kns passport verify`). */
export const CALL_FAILURES = {
  MALFORMED_JWT: 'not a compact JWS of three non-empty base64url parts (at most 8 KiB), or a header or payload that is not a JSON object',
  BAD_ALGORITHM: 'alg is not exactly ES256',
  BAD_TYPE: 'typ is not absent, "JWT" or "passport"',
  BAD_PPT: 'ppt is not absent or "shaken"',
  BAD_CRIT: 'crit names a header parameter the verifier does not understand',
  BAD_KID: 'kid (or keyid) is not a non-empty string',
  ORIG_MISMATCH: 'orig.tn is not origTN',
  DEST_MISMATCH: 'dest.tn does not contain destTN',
  BAD_ATTESTATION: 'att / attest is not A, B or C (or the two differ)',
  MISSING_ORIGID: 'origid is missing or empty',
  BAD_IAT: 'iat is not an integer',
  IAT_IN_FUTURE: 'iat is more than 5 s ahead',
  IAT_TOO_OLD: 'iat is older than CALL_MAX_AGE_S',
  NO_TOKEN: 'origTN has no number-system token',
  NO_REGISTRY: 'the token has no linked keystore',
  KEY_NOT_FOUND: 'no unrevoked key with that kid in the linked keystores (or, without a kid, none of them)',
  BAD_SIGNATURE_FORMAT: 'the signature is not a 64-byte JOSE r||s',
  BAD_SIGNATURE: 'the ES256 signature does not verify',
} as const
export type CallFailure = keyof typeof CALL_FAILURES

export type FailureCode = ApprovalFailure | CallFailure

export function isApprovalFailure(code: string): code is ApprovalFailure {
  return Object.hasOwn(APPROVAL_FAILURES, code)
}
