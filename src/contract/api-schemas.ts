import { Type, type TSchema } from 'typebox'
import { APPROVAL_FAILURES } from './failure-codes.ts'
import { HTTP_ERROR_CODES } from './error-codes.ts'
import { StringEnum } from './string-enum.ts'
import { E164_PATTERN, EMAIL, HTTP_URL, MULTI_LINE, SINGLE_LINE, WAIT_SECONDS } from './text.ts'

/** Shared formats of the contract (kns-api.md, "Common formats"). */
export const E164 = Type.String({ pattern: E164_PATTERN, description: 'E.164 phone number, leading + optional', examples: ['+14155550100'] })
export const ObjectId = Type.String({ pattern: '^0x[0-9a-fA-F]{64}$', minLength: 66, maxLength: 66, description: 'Sui object ID' })
export const Address = Type.String({ pattern: '^0x[0-9a-f]{64}$', description: 'Sui address (lowercase)' })
export const RedirectUrl = Type.String({ pattern: HTTP_URL, minLength: 1, maxLength: 255, description: 'http:// or https:// URL, without white space or control characters' })
export const ApprovalNumber = Type.String({ pattern: '^[0-9a-f]{24}$', description: '24 lowercase hex characters' })
export const Timestamp = Type.String({ format: 'date-time', description: 'ISO 8601, UTC with milliseconds' })

export const ErrorBody = Type.Object({
  success: Type.Literal(false),
  code: Type.String({ description: `stable machine-readable code: ${HTTP_ERROR_CODES.join(', ')}` }),
  error: Type.String({ description: 'what went wrong, for people' }),
  message: Type.String({ description: 'same text as `error` (the registration contract names it `message`)' }),
  field: Type.Optional(Type.String({ description: 'the request field at fault, when one is' })),
  requestId: Type.String(),
}, { $id: 'ErrorBody', description: 'Every error response, on every endpoint but the CAMARA APIs (they answer CamaraErrorInfo)' })

/** `{ ...ok, 4xx/5xx: ErrorBody }` for a route's `response` schema. */
export function withErrors<T extends Record<number, TSchema>>(ok: T) {
  return { ...ok, '4xx': Type.Ref('ErrorBody'), '5xx': Type.Ref('ErrorBody') }
}

export const RegisterRequest = Type.Object({
  email: Type.String({ minLength: 3, maxLength: 254, pattern: EMAIL, description: 'e-mail address (internationalised allowed); no white space or control characters' }),
  phoneNumber: E164,
})

export const RegisterResponse = Type.Object({
  success: Type.Boolean(),
  message: Type.String(),
  userId: Type.String({ description: 'stable user ID (UUID); the zkLogin `sub` claim' }),
  identifiers: Type.Array(Type.Object({
    type: StringEnum(['email', 'phone']),
    identifier: Type.String(),
  })),
  zkAddress: Address,
})

const approvalFields = {
  title: Type.String({ minLength: 1, maxLength: 255, pattern: SINGLE_LINE }),
  message: Type.String({ minLength: 1, maxLength: 2000, pattern: MULTI_LINE }),
  successRedirectUrl: RedirectUrl,
  cancelRedirectUrl: RedirectUrl,
  referenceNumber: Type.String({ minLength: 1, maxLength: 255, pattern: SINGLE_LINE, description: 'your reference; retrying with the same one is safe' }),
  method: StringEnum(['sign', 'event']),
}

export const PhoneApprovalRequest = Type.Object({ ...approvalFields, phoneNumber: E164 })
export const ObjectIdApprovalRequest = Type.Object({ ...approvalFields, objectId: ObjectId })

export const ApprovalResponse = Type.Object({
  approvalUrl: Type.String({ description: '$PUBLIC_BASE_URL/approve?ref=<approvalNumber>' }),
  approvalNumber: ApprovalNumber,
  error: Type.Optional(Type.String({ description: 'only on errors (see ErrorBody)' })),
})

/** The longest `wait` of transaction_details, in seconds. */
export const MAX_WAIT_S = 60

export const DetailsQuery = Type.Object({
  ref: Type.String({ minLength: 1, maxLength: 64, pattern: SINGLE_LINE, description: 'the approval number (24 lowercase hex characters; anything else names no approval: 404)' }),
  // A string: query values are not coerced (see app.ts), so the pattern bounds it to 0-60.
  wait: Type.Optional(Type.String({
    pattern: WAIT_SECONDS,
    description: `extension: seconds (at most ${MAX_WAIT_S}) to wait for a decision while the request is pending: the answer comes as soon as it is ` +
      'approved, cancelled or expires, or when the time is up (then still `pending`). 0 or absent: answer at once.',
  })),
})

export const STATUSES = ['pending', 'approved', 'cancelled', 'expired'] as const

export const TransactionDetailsResponse = Type.Object({
  title: Type.String(),
  message: Type.String(),
  objectId: ObjectId,
  successRedirectUrl: Type.String(),
  cancelRedirectUrl: Type.String(),
  approvalNumber: ApprovalNumber,
  referenceNumber: Type.String({ description: 'extension: the vendor\'s referenceNumber, for the owner to match against the vendor\'s screen' }),
  createdAt: Timestamp,
  approved: Type.Boolean(),
  method: StringEnum(['sign', 'event']),
  phoneNumber: Type.Optional(Type.String({ description: 'canonical +E.164; absent when the token has no known number' })),
  wallet: Type.Optional(Type.String({ description: 'token owner that must approve; after approval, the approver. Absent if the token has no owning address' })),
  vendorBrand: Type.String({ description: 'brand of the API key that created the request' }),
  status: StringEnum(STATUSES, { description: 'extension: pending -> approved | cancelled | expired' }),
  expiresAt: Timestamp,
  cancelReason: Type.Optional(StringEnum(['denied', 'not_me'], {
    description: 'extension, on a cancelled request: `denied` (the owner said no) or `not_me` (the owner reported a request they did not make: ' +
      'treat it as a possible takeover attempt). Absent on requests cancelled before reasons were recorded',
  })),
  signMessage: Type.String({ description: 'extension: the exact UTF-8 text to sign for a `sign` approval' }),
  phoneLogin: Type.Boolean({
    description: 'extension: `wallet` is the phone-login address of `phoneNumber` (the zkLogin address of this service\'s own OpenID provider): ' +
      'the owner approves by logging in with the number (docs/accounts.md)',
  }),
})

export const VerifySignatureRequest = Type.Object({
  // zkLogin and multisig signatures are long; nothing legitimate approaches 16 KiB.
  signature: Type.String({ minLength: 1, maxLength: 16384, pattern: '^[A-Za-z0-9+/]+={0,2}$', description: 'Sui serialized signature, base64' }),
  approvalNumber: ApprovalNumber,
})

export const VerifyTransactionRequest = Type.Object({
  digest: Type.String({ pattern: '^[1-9A-HJ-NP-Za-km-z]{32,44}$', description: 'Sui transaction digest: base58 of 32 bytes' }),
  approvalNumber: ApprovalNumber,
})

export const CancelRequest = Type.Object({
  approvalNumber: ApprovalNumber,
  reason: Type.Optional(StringEnum(['denied', 'not_me'], {
    description: 'extension: `denied` (default: the owner says no) or `not_me` (the owner did not make this request)',
  })),
})

export const VerdictResponse = Type.Object({
  success: Type.Boolean(),
  error: Type.Optional(Type.String({ description: 'why verification failed' })),
  code: Type.Optional(Type.String({
    description: `extension, stable reason: ${Object.keys(APPROVAL_FAILURES).join(', ')}`,
  })),
})

export const LedgerApproveRequest = Type.Object({
  objectId: ObjectId,
  ref: Type.String({ minLength: 1, maxLength: 255, pattern: SINGLE_LINE }),
  signature: VerifySignatureRequest.properties.signature,
})
export const LedgerApproveResponse = Type.Object({ digest: Type.String() })

/** One SIP Identity header value, or several (a diverted call: the shaken PASSporT's and one per diversion, any order). */
const IdentityHeaderValue = Type.String({ minLength: 1, maxLength: 16384 })
export const IdentityHeaders = Type.Union([
  IdentityHeaderValue,
  Type.Array(IdentityHeaderValue, { minItems: 1, maxItems: 10 }),
], { description: 'the SIP Identity header value verbatim (`<jws>;info=<https://...>;alg=ES256;ppt=shaken`), or a list of them for a diverted call (RFC 8946: the shaken PASSporT and one div PASSporT per diversion, in any order)' })

export const CallVerificationRequest = Type.Object({
  origTN: E164,
  destTN: E164,
  // The pipeline itself rejects JWTs over 8 KiB (reported in debug); this bound is the transport's.
  jwt: Type.Optional(Type.String({ minLength: 1, maxLength: 16384, description: 'PASSporT (RFC 8225, SHAKEN RFC 8588), compact JWS; or give `identity`' })),
  identity: Type.Optional(IdentityHeaders),
  debug: Type.Optional(Type.Boolean({ description: 'add a step-by-step report' })),
})

const TnList = Type.Array(Type.String(), { description: 'E.164 numbers with +' })
export const DivLinkReport = Type.Object({
  from: Type.String({ description: 'the number the call was diverted from (the div claim), E.164 with +' }),
  to: TnList,
  trust: StringEnum(['ledger', 'x5u'], { description: 'where the diverting provider\'s key came from' }),
  spc: Type.Optional(Type.String()),
  subject: Type.Optional(Type.String()),
})
export const RcdReport = Type.Object({
  nam: Type.String({ description: 'the caller\'s display name' }),
  crn: Type.Optional(Type.String({ description: 'the call reason' })),
  apn: Type.Optional(Type.String({ description: 'an alternate presentation number, as signed' })),
  icn: Type.Optional(Type.String({ description: 'an icon URL, as signed (fetched and checked only when rcdi covers it)' })),
  jcard: Type.Optional(Type.Unknown({ description: 'the jCard (RFC 7095): from jcd, or fetched from jcl and checked against its rcdi digest' })),
  jcl: Type.Optional(Type.String({ description: 'where the jCard was fetched from' })),
  integrity: Type.Boolean({ description: 'an rcdi claim protected the rich call data (RFC 9795 integrity)' }),
}, { description: 'RFC 9795 rich call data of a verified PASSporT' })

export const CallVerificationResponse = Type.Object({
  success: Type.Boolean(),
  attestation: Type.Optional(StringEnum(['A', 'B', 'C'], { description: 'on success: the attestation level the PASSporT claims' })),
  trust: Type.Optional(StringEnum(['ledger', 'x5u'], { description: 'on success: where the verifying key came from (CALLER_TRUST)' })),
  spc: Type.Optional(Type.String({ description: 'trust x5u: the service provider code in the leaf certificate\'s TNAuthList, when it has one' })),
  subject: Type.Optional(Type.String({ description: 'trust x5u: the leaf certificate\'s subject' })),
  verstat: StringEnum(['TN-Validation-Passed', 'TN-Validation-Failed', 'No-TN-Validation'],
    { description: 'extension: the verstat a SIP proxy puts in P-Asserted-Identity (ATIS-1000074)' }),
  sipReason: Type.Optional(Type.String({ description: 'extension, on failure: the RFC 8224 response a proxy would send: 403 Stale Date, 436 Bad Identity Info, 437 Unsupported Credential or 438 Invalid Identity Header' })),
  div: Type.Optional(Type.Array(DivLinkReport, { description: 'on success of a diverted call: each diversion (RFC 8946), in the order the call took them' })),
  rcd: Type.Optional(RcdReport),
  rcdFailure: Type.Optional(Type.String({ description: 'on success, when the PASSporT\'s rich call data could not be verified: CODE: why (the call is verified, its rcd is not returned)' })),
  debug: Type.Optional(Type.Object({
    reason: Type.Optional(Type.String({ description: 'CODE: explanation of the first failing check' })),
    steps: Type.Array(Type.Object({ name: Type.String(), ok: Type.Boolean(), detail: Type.Optional(Type.String()) })),
  }, { description: 'only with debug: true; never key material beyond key IDs' })),
})

export const ObjectIdLookupRequest = Type.Object({ phoneNumber: E164 })
export const ObjectIdLookupResponse = Type.Object({
  objectId: ObjectId,
  registries: Type.Array(ObjectId, { description: 'certificate registries (keystores) linked to the number; [] when none' }),
})

/** ATIS-1000082 (the STI-VS REST interface SBCs speak): the verification request and answer. */
const AtisTn = Type.String({ pattern: E164_PATTERN, description: 'telephone number, digits (leading + optional)' })
export const StirVerificationRequest = Type.Object({
  verificationRequest: Type.Object({
    from: Type.Object({ tn: AtisTn }),
    to: Type.Object({ tn: Type.Array(AtisTn, { minItems: 1, maxItems: 10, description: 'the called number first' }) }),
    time: Type.Integer({ minimum: 0, maximum: 4_102_444_800, description: 'when the INVITE arrived, epoch seconds (within 5 minutes of the server clock): the PASSporT\'s freshness is judged at this time' }),
    identity: IdentityHeaders,
  }),
})
export const StirVerificationResponse = Type.Object({
  verificationResponse: Type.Object({
    verstat: StringEnum(['TN-Validation-Passed', 'TN-Validation-Failed', 'No-TN-Validation']),
    reasoncode: Type.Optional(Type.Integer({ description: 'on failure: the RFC 8224 status code (403, 436, 437, 438)' })),
    reasontext: Type.Optional(Type.String({ description: 'on failure: its reason phrase' })),
  }),
})

/** ATIS-1000082 STI-AS: what to sign, and the Identity header that carries it. */
export const StirSigningRequest = Type.Object({
  signingRequest: Type.Object({
    orig: Type.Object({ tn: AtisTn }),
    dest: Type.Object({ tn: Type.Array(AtisTn, { minItems: 1, maxItems: 10, description: 'a div PASSporT: the new destination' }) }),
    attest: Type.Optional(StringEnum(['A', 'B', 'C'], { description: 'required for a shaken PASSporT; a div PASSporT has none' })),
    iat: Type.Integer({ minimum: 0, maximum: 4_102_444_800, description: 'epoch seconds: at most 5 s ahead of the server clock and no older than CALL_MAX_AGE_S (60 s by default; 300 s at most), what the verifier accepts' }),
    origid: Type.Optional(Type.String({ pattern: '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$', description: 'a UUID (RFC 8588); required for a shaken PASSporT' })),
    ppt: Type.Optional(StringEnum(['shaken', 'div'], { description: 'shaken (default), or div: a diverting provider\'s PASSporT (RFC 8946), with `div`' })),
    div: Type.Optional(Type.Object({ tn: AtisTn }, { description: 'ppt div: the number the call was diverted from (the credential must cover it)' })),
    identity: Type.Optional(Type.Union([IdentityHeaderValue, Type.Array(IdentityHeaderValue, { minItems: 1, maxItems: 6 })], {
      description: 'ppt div, required: the call\'s Identity header value(s) as it arrived (its shaken PASSporT and any div ones), which must verify as a chain from orig to div.tn',
    })),
    credential: Type.Optional(Type.String({ pattern: '^[a-z0-9][a-z0-9_-]{0,63}$', description: 'extension: which of the API key\'s signing credentials; by default the one whose certificate covers the number' })),
  }),
})
export const StirSigningResponse = Type.Object({
  signingResponse: Type.Object({ identity: Type.String({ description: 'the SIP Identity header value: `<PASSporT>;info=<x5u>;alg=ES256;ppt=shaken` (ppt=div for a div PASSporT)' }) }),
})
export const CertificateFileParams = Type.Object({ file: Type.String({ pattern: '^[a-z0-9][a-z0-9_-]{0,63}\\.pem$' }) })
