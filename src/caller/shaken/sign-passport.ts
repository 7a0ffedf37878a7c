import { sign } from 'node:crypto'
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
