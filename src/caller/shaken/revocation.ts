import { verify as verifySignature, type X509Certificate } from 'node:crypto'
import type { CallFailure } from '../../contract/failure-codes.ts'
import { canonicalHex, DerError, expect, integerHex, oid, parseDer, TAG, time } from '../../lib/der.ts'
import type { ValidatedChain } from './chain.ts'
import { FetchFailed, type FetchCache } from './fetch-cache.ts'

/** STI_CRL: `off` never looks; `soft` (default) fails only on a revoked leaf; `hard` also when no valid CRL can be had. */
export type CrlMode = 'off' | 'soft' | 'hard'

export interface ParsedCrl {
  /** The TBSCertList's encoding: what the signature covers. */
  tbs: Uint8Array
  algorithm: string
  signature: Buffer
  thisUpdate: number
  nextUpdate: number | null
  /** Revoked serial numbers, lowercase hex without leading zeros. */
  revoked: Set<string>
}

const HASH_OF: Record<string, string> = {
  '1.2.840.10045.4.3.2': 'sha256', // ecdsa-with-SHA256
  '1.2.840.10045.4.3.3': 'sha384', // ecdsa-with-SHA384
  '1.2.840.113549.1.1.11': 'sha256', // sha256WithRSAEncryption
  '1.2.840.113549.1.1.12': 'sha384', // sha384WithRSAEncryption
}

/** A CRL (RFC 5280 5.1), PEM (`X509 CRL`) or DER. Throws DerError. */
export function parseCrl(body: Uint8Array): ParsedCrl {
  const text = Buffer.from(body).toString('latin1')
  const pem = /-----BEGIN X509 CRL-----([\s\S]+?)-----END X509 CRL-----/.exec(text)
  const der = pem ? Buffer.from(pem[1]!.replace(/\s+/g, ''), 'base64') : Buffer.from(body)
  const [tbsNode, algorithmNode, signatureNode] = expect(parseDer(der), TAG.SEQUENCE, 'CertificateList').children
  const tbs = expect(tbsNode, TAG.SEQUENCE, 'TBSCertList')
  const fields = [...tbs.children]
  if (fields[0]?.tagNumber === TAG.INTEGER && fields[0].tagClass === 0) fields.shift() // version
  fields.shift() // signature algorithm (repeated below, outside the signed part)
  fields.shift() // issuer
  const thisUpdate = time(fields.shift()!)
  let nextUpdate: number | null = null
  if (fields[0] !== undefined && (fields[0].tagNumber === TAG.UTC_TIME || fields[0].tagNumber === TAG.GENERALIZED_TIME) && fields[0].tagClass === 0) nextUpdate = time(fields.shift()!)
  const revoked = new Set<string>()
  if (fields[0] !== undefined && fields[0].tagClass === 0 && fields[0].tagNumber === TAG.SEQUENCE) {
    for (const entry of fields.shift()!.children) revoked.add(integerHex(entry.children[0]!))
  }
  const signatureBits = expect(signatureNode, TAG.BIT_STRING, 'CRL signature').content
  if (signatureBits[0] !== 0) throw new DerError('a CRL signature with unused bits')
  return {
    tbs: tbs.encoded,
    algorithm: oid(expect(algorithmNode, TAG.SEQUENCE, 'CRL signature algorithm').children[0]!),
    signature: Buffer.from(signatureBits.subarray(1)),
    thisUpdate,
    nextUpdate,
    revoked,
  }
}

/** Signature checks done, per CRL and issuer (a CRL is verified once, not per call). */
const verified = new WeakMap<ParsedCrl, Map<string, boolean>>()

function signedBy(crl: ParsedCrl, issuer: X509Certificate): boolean {
  let byIssuer = verified.get(crl)
  if (byIssuer === undefined) verified.set(crl, byIssuer = new Map())
  const known = byIssuer.get(issuer.fingerprint256)
  if (known !== undefined) return known
  const hash = HASH_OF[crl.algorithm]
  let ok = false
  try {
    ok = hash !== undefined && verifySignature(hash, crl.tbs, issuer.publicKey, crl.signature)
  } catch {
    ok = false
  }
  byIssuer.set(issuer.fingerprint256, ok)
  return ok
}

function within(cert: X509Certificate, now: number): boolean {
  return now >= cert.validFromDate.getTime() && now <= cert.validToDate.getTime()
}

export type RevocationVerdict = { ok: true; detail: string } | { ok: false; code: CallFailure; message: string }

/**
 * The leaf's CRL distribution points, fetched through the same guarded, cached client as x5u.
 * A CRL counts only when its issuer's key (the leaf's issuer) signed it and it is current
 * (nextUpdate not passed). Revoked there: CERT_REVOKED whatever the mode. No usable CRL:
 * `soft` passes (saying so), `hard` fails with CRL_UNAVAILABLE.
 */
export async function checkRevocation(chain: ValidatedChain, crls: FetchCache<ParsedCrl>, mode: CrlMode, now: number, signers: readonly X509Certificate[] = []): Promise<RevocationVerdict> {
  if (mode === 'off') return { ok: true, detail: 'not checked (STI_CRL=off)' }
  const serial = canonicalHex(chain.leaf.cert.serialNumber)
  const problems: string[] = []
  for (const url of chain.leaf.crlUrls.slice(0, 3)) {
    let crl: ParsedCrl
    try {
      crl = await crls.get(url)
    } catch (err) {
      problems.push(`CRL ${err instanceof FetchFailed ? err.message : 'unavailable'}`)
      continue
    }
    // The leaf's issuer, or (an indirect CRL, as the STI-PA publishes for SHAKEN) a trust
    // anchor or a CRL signer the operator trusts (kns shaken crl-signer add), valid now.
    if (!signedBy(crl, chain.issuer) && !signers.some((signer) => within(signer, now) && signedBy(crl, signer))) {
      problems.push('the CRL is signed neither by the leaf\'s issuer nor by a trust anchor or trusted CRL signer (kns shaken crl-signer add)')
      continue
    }
    if (crl.thisUpdate > now + 5 * 60_000) {
      problems.push('the CRL is dated in the future')
      continue
    }
    if (crl.nextUpdate !== null && now > crl.nextUpdate) {
      problems.push(`the CRL is out of date (nextUpdate ${new Date(crl.nextUpdate).toISOString()})`)
      continue
    }
    if (crl.revoked.has(serial)) return { ok: false, code: 'CERT_REVOKED', message: `the leaf certificate (serial ${serial}) is revoked` }
    return { ok: true, detail: `not revoked (CRL of ${new Date(crl.thisUpdate).toISOString()})` }
  }
  const why = chain.leaf.crlUrls.length === 0 ? 'the leaf names no CRL distribution point' : problems.join('; ')
  if (mode === 'hard') return { ok: false, code: 'CRL_UNAVAILABLE', message: `no usable CRL: ${why}` }
  return { ok: true, detail: `not known to be revoked (${why}; STI_CRL=soft)` }
}
