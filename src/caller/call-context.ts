import type { KeyDirectory, SigningKey } from './key-directory.ts'
import type { DecodedJws } from './passport.ts'
import type { CertificateTrust, TrustSource } from './shaken/certificate-trust.ts'
import type { ValidatedChain } from './shaken/chain.ts'
import type { X509Certificate } from 'node:crypto'

/** The SIP Identity header's parts (src/caller/identity-header.ts). */
export interface IdentityHeader { jws: string; info?: string; alg?: string; ppt?: string }

/** What the call verification checks read and fill in, in order (src/caller/verify-call.ts). */
export interface CallContext {
  directory: KeyDirectory
  /** The certificate trust source (x5u); absent: the ledger only. */
  certificates?: CertificateTrust
  /** CALLER_TRUST order; default the ledger only. */
  trustOrder?: TrustSource[]
  origTN: string
  destTN: string
  /** The PASSporT (from `jwt`, or from the Identity header's JWS). */
  jwt: string
  /** The SIP Identity header verbatim, when given instead of `jwt`. */
  identity?: string
  identityHeader?: IdentityHeader
  /** Seconds; 0 = no age check. */
  maxAgeS: number
  nowS: number
  jws?: DecodedJws
  kid?: string
  x5u?: string
  attestation?: 'A' | 'B' | 'C'
  /** Where the verifying key came from, once known. */
  trust?: TrustSource
  bundle?: X509Certificate[]
  chain?: ValidatedChain
  spc?: string
  subject?: string
  candidates?: SigningKey[]
}
