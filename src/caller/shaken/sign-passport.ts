import { sign } from 'node:crypto'
import { ValidationError } from '../../errors.ts'
import { MAX_CLOCK_SKEW_S } from '../passport-checks.ts'
import type { SigningCredential } from './credentials.ts'

/** What an STI-AS is asked to sign (ATIS-1000082 signingRequest, RFC 8588 claims). */
export interface PassportClaims {
  orig: string
  dest: string[]
  attest: 'A' | 'B' | 'C'
  iat: number
  origid: string
}

/** A diverting provider's PASSporT (RFC 8946): the caller kept, the number diverted from, the new destination. */
export interface DivClaims {
  orig: string
  /** The number the call was diverted from. */
  div: string
  dest: string[]
  iat: number
}

/** How old a requested iat may be when the verifier sets no age limit (CALL_MAX_AGE_S=0): a signer does not backdate. */
const MAX_IAT_AGE_S = 300

/**
 * The iat a signing request may ask for: one this service's own verifier accepts
 * (passport-checks.ts), so nothing is signed that it would refuse: at most MAX_CLOCK_SKEW_S
 * ahead of the clock (IAT_IN_FUTURE otherwise) and no older than CALL_MAX_AGE_S (`maxAgeS`;
 * IAT_TOO_OLD otherwise), nor than MAX_IAT_AGE_S. 400 otherwise, naming the field.
 */
export function checkSigningIat(iat: number, nowS: number, maxAgeS: number, field: string): void {
  if (iat > nowS + MAX_CLOCK_SKEW_S) {
    throw new ValidationError(`iat is ${iat - nowS} s ahead of the server clock; at most ${MAX_CLOCK_SKEW_S} s (what verifiers accept)`, { field })
  }
  const maxAge = maxAgeS > 0 ? Math.min(maxAgeS, MAX_IAT_AGE_S) : MAX_IAT_AGE_S
  if (iat < nowS - maxAge) throw new ValidationError(`iat is ${nowS - iat} s old; at most ${maxAge} s (a PASSporT older than that is refused as stale)`, { field })
}

const b64url = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url')

async function signJws(credential: SigningCredential, header: Record<string, unknown>, payload: Record<string, unknown>): Promise<string> {
  const input = `${b64url(header)}.${b64url(payload)}`
  const signature = await new Promise<Buffer>((resolve, reject) => {
    sign('sha256', Buffer.from(input), { key: credential.key, dsaEncoding: 'ieee-p1363' }, (err, out) => (err ? reject(err) : resolve(out)))
  })
  return `${input}.${signature.toString('base64url')}`
}

/**
 * A SHAKEN PASSporT signed with the credential (ES256, JOSE r||s, on the thread pool), and
 * the SIP Identity header that carries it. Claims and header parameters in lexicographic
 * order, without whitespace (RFC 8225 9: the deterministic JSON form). A credential configured
 * with a display name adds it as RFC 9795 rich call data (`rcd: {nam}`) to attestation-A
 * PASSporTs, which the signature covers; the caller of the signing API cannot choose the name.
 */
export async function signPassport(credential: SigningCredential, claims: PassportClaims): Promise<{ passport: string; identity: string }> {
  const header = { alg: 'ES256', ppt: 'shaken', typ: 'passport', x5u: credential.x5u }
  const payload = {
    attest: claims.attest, dest: { tn: claims.dest }, iat: claims.iat, orig: { tn: claims.orig }, origid: claims.origid,
    // Only with full attestation: with B or C the signer does not vouch that the caller may use
    // the number, and a brand signed beside it would lend the number a name it may not have.
    ...(credential.displayName === undefined || claims.attest !== 'A' ? {} : { rcd: { nam: credential.displayName } }),
  }
  const passport = await signJws(credential, header, payload)
  return { passport, identity: `${passport};info=<${credential.x5u}>;alg=ES256;ppt=shaken` }
}

/** A div PASSporT's claims set (RFC 8946), in the deterministic order: no attestation or origid of its own. */
export function divClaimsSet(claims: DivClaims): Record<string, unknown> {
  return { dest: { tn: claims.dest }, div: { tn: claims.div }, iat: claims.iat, orig: { tn: claims.orig } }
}

/** A div PASSporT (RFC 8946 3): ppt div, no attestation or origid of its own. */
export async function signDivPassport(credential: SigningCredential, claims: DivClaims): Promise<{ passport: string; identity: string }> {
  const header = { alg: 'ES256', ppt: 'div', typ: 'passport', x5u: credential.x5u }
  const payload = divClaimsSet(claims)
  const passport = await signJws(credential, header, payload)
  return { passport, identity: `${passport};info=<${credential.x5u}>;alg=ES256;ppt=div` }
}
