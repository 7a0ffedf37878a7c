import type { KeyDirectory, SigningKey } from './key-directory.ts'
import type { DecodedJws } from './passport.ts'
import type { CertificateTrust, TrustSource } from './shaken/certificate-trust.ts'
import type { ValidatedChain } from './shaken/chain.ts'
import type { X509Certificate } from 'node:crypto'
import type { FetchCache } from './shaken/fetch-cache.ts'

/** The SIP Identity header's parts (src/caller/identity-header.ts). */
export interface IdentityHeader { jws: string; info?: string; alg?: string; ppt?: string }

/**
 * The kinds of PASSporT a call carries: the originating provider's `shaken` one (RFC 8588),
 * and one `div` per diversion, signed by the diverting provider (RFC 8946).
 */
export type PassportKind = 'shaken' | 'div'

/** What a call's verification starts from, whatever interface it came in by. */
export interface CallRequest {
  directory: KeyDirectory
  /** The certificate trust source (x5u); absent: the ledger only. */
  certificates?: CertificateTrust
  /** CALLER_TRUST order; default the ledger only. */
  trustOrder?: TrustSource[]
  /** jcl documents (RFC 9795 rcd), fetched through the guarded client; absent: a jcl cannot be checked. */
  jcardCache?: FetchCache<Buffer>
  origTN: string
  destTN: string
  /** The PASSporT alone (`jwt`); or: */
  jwt: string
  /** The SIP Identity header(s) verbatim, instead of `jwt`: one per PASSporT (the shaken one, then any div ones). */
  identity?: string | string[]
  /** Seconds; 0 = no age check. */
  maxAgeS: number
  nowS: number
}

/** What the checks of one PASSporT read and fill in, in order (src/caller/passport-checks.ts). */
export interface PassportContext {
  directory: KeyDirectory
  certificates?: CertificateTrust
  trustOrder?: TrustSource[]
  jcardCache?: FetchCache<Buffer>
  /** What this PASSporT must be: the call's shaken PASSporT, or one of its diversions. */
  kind: PassportKind
  /** The caller: every PASSporT of the call names it in `orig`. */
  origTN: string
  /** The called number `dest` must contain; absent when a diversion chain decides where the call went. */
  destTN?: string
  jwt: string
  identityHeader?: IdentityHeader
  maxAgeS: number
  nowS: number
  jws?: DecodedJws
  kid?: string
  x5u?: string
  attestation?: 'A' | 'B' | 'C'
  /** E.164 digits of `dest.tn`. */
  dest?: string[]
  /** div: E.164 digits of the number the call was diverted from (the `div` claim). */
  divertedFrom?: string
  /** Whose key must have signed: origTN for shaken, the diverting number for div (E.164 with +). */
  authorityTN?: string
  /** Where the verifying key came from, once known. */
  trust?: TrustSource
  bundle?: X509Certificate[]
  chain?: ValidatedChain
  spc?: string
  subject?: string
  candidates?: SigningKey[]
  /** RFC 9795 rich call data, once verified; or why it could not be. */
  rcd?: VerifiedRcd
  rcdFailure?: string
}

/** The rcd claims a verified PASSporT carries, each checked against its rcdi digest when one is given. */
export interface VerifiedRcd {
  nam: string
  /** The call reason (the crn claim). */
  crn?: string
  /** An alternate presentation number, and an icon URL, as the signer gave them. */
  apn?: string
  icn?: string
  /** The jCard, from `jcd` or fetched from `jcl`. */
  jcard?: unknown
  jcl?: string
  /** RFC 9795 integrity: rcdi digests matched, and every item fetched by reference (jcl, icn) had one. */
  integrity: boolean
}
