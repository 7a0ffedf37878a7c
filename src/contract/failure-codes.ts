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
  UNSUPPORTED_SIGNATURE_SCHEME: 'a zkLogin signature on a ledger that verifies none (an embedded ledger opened without the login provider)',
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
  BAD_PPT: 'ppt is not absent or "shaken" (a lone PASSporT), or not "div" (a diversion)',
  BAD_CRIT: 'crit names a header parameter the verifier does not understand',
  BAD_KID: 'kid (or keyid) is not a non-empty string',
  ORIG_MISMATCH: 'orig.tn (of any PASSporT of the call) is not origTN',
  DEST_MISMATCH: 'dest.tn (the last diversion\'s, for a diverted call) does not contain destTN',
  BAD_DIV: 'a div PASSporT has no div {"tn"} claim or no dest.tn',
  DIV_CHAIN_BROKEN: 'the div PASSporTs do not make one chain from the shaken PASSporT\'s dest (RFC 8946): one diverts from a number the call was not sent to, two from the same step, a loop, or not exactly one shaken PASSporT',
  DIV_TOO_MANY: 'more diversions than the verifier follows (5)',
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
  BAD_IDENTITY_HEADER: 'the SIP Identity header is not `<jws>;info=<uri>;alg=...;ppt=...`, or its alg/ppt disagree with the PASSporT',
  IDENTITY_INFO_MISMATCH: 'the Identity header\'s info is missing or is not the PASSporT\'s x5u',
  NO_TRUSTED_KEY: 'no trust source of CALLER_TRUST applies: no kid the ledger resolves, and no x5u (or x5u not trusted here)',
  BAD_X5U: 'x5u is not a string URL',
  X5U_NOT_ALLOWED: 'x5u is refused before any fetch: not https, or a loopback, private, link-local or metadata address',
  X5U_FETCH_FAILED: 'the certificate at x5u could not be fetched (unreachable, timeout, not 200, over 64 KiB, or too many redirects)',
  CERT_INVALID: 'the x5u document is not a PEM or DER certificate that can be read',
  CERT_KEY_UNSUITABLE: 'the leaf certificate is not a SHAKEN end-entity certificate: CA:TRUE, not an EC P-256 key, or no digitalSignature key usage',
  CERT_UNTRUSTED: 'the leaf does not chain to a trust anchor (STI_TRUST_ANCHORS, kns shaken trust), or the path is not usable',
  CERT_EXPIRED: 'a certificate of the path is expired or not yet valid',
  CERT_POLICY: 'STI_CERT_POLICY=enforce and the leaf or an intermediate lacks the SHAKEN certificate policy (ATIS-1000080)',
  TN_NOT_AUTHORIZED: 'the leaf has no readable TNAuthList, or its numbers do not cover orig.tn (for a div PASSporT, the diverting number)',
  CERT_REVOKED: 'the leaf certificate is on its issuer\'s CRL',
  BAD_RCD: 'rcd / rcdi / crn are not RFC 9795 rich call data (nam a display name, jcd or jcl, https URLs, digests <alg>-<base64>); reported in rcdFailure, the call still verifies',
  RCD_INTEGRITY: 'content rcdi covers does not match its digest (or the pointer leads nowhere); reported in rcdFailure',
  RCD_FETCH_FAILED: 'the jCard at rcd.jcl (or content rcdi covers) could not be fetched through the guarded client; reported in rcdFailure',
  CRL_UNAVAILABLE: 'STI_CRL=hard and no current CRL signed by the leaf\'s issuer, a trust anchor or a trusted CRL signer could be had',
} as const
export type CallFailure = keyof typeof CALL_FAILURES

export type FailureCode = ApprovalFailure | CallFailure

export function isApprovalFailure(code: string): code is ApprovalFailure {
  return Object.hasOwn(APPROVAL_FAILURES, code)
}
