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

const b64url = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url')

/**
 * A SHAKEN PASSporT signed with the credential (ES256, JOSE r||s, on the thread pool), and
 * the SIP Identity header that carries it. Claims and header parameters in lexicographic
 * order, without whitespace (RFC 8225 9: the deterministic JSON form).
 */
export async function signPassport(credential: SigningCredential, claims: PassportClaims): Promise<{ passport: string; identity: string }> {
  const header = { alg: 'ES256', ppt: 'shaken', typ: 'passport', x5u: credential.x5u }
  const payload = { attest: claims.attest, dest: { tn: claims.dest }, iat: claims.iat, orig: { tn: claims.orig }, origid: claims.origid }
  const input = `${b64url(header)}.${b64url(payload)}`
  const signature = await new Promise<Buffer>((resolve, reject) => {
    sign('sha256', Buffer.from(input), { key: credential.key, dsaEncoding: 'ieee-p1363' }, (err, out) => (err ? reject(err) : resolve(out)))
  })
  const passport = `${input}.${signature.toString('base64url')}`
  return { passport, identity: `${passport};info=<${credential.x5u}>;alg=ES256;ppt=shaken` }
}
