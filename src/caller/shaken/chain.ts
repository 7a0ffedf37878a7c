import type { X509Certificate } from 'node:crypto'
import { DerError } from '../../lib/der.ts'
import type { CallFailure } from '../../contract/failure-codes.ts'
import { certificateFacts, nameOf, tnAuthListCovers, type CertificateFacts } from './x509.ts'

/** A leaf certificate that chains to a trust anchor, with what the later checks need of it. */
export interface ValidatedChain {
  leaf: CertificateFacts
  /** Leaf first, anchor last. */
  path: X509Certificate[]
  /** The certificate that issued the leaf (its key verifies the leaf's CRL). */
  issuer: X509Certificate
  /** The earliest end of validity along the path: the validation holds until then. */
  validUntil: number
}

export interface ChainFailure { code: CallFailure; message: string }

/** Longest path from a leaf to an anchor (leaf, intermediates, anchor). */
const MAX_PATH = 6

const name = (cert: X509Certificate) => nameOf(cert.subject)

/**
 * RFC 5280 path validation as SHAKEN needs it (ATIS-1000080):
 * 1. the leaf: CA:FALSE, an EC P-256 key, key usage with digitalSignature, no critical
 *    extension this verifier does not understand;
 * 2. a path from the leaf through the bundle's intermediates (CA:TRUE, keyCertSign when key
 *    usage is present) to a trust anchor, each signature checked (node:crypto);
 * 3. every certificate of the path, the anchor included, within its validity at `now`.
 */
export function validateChain(bundle: readonly X509Certificate[], anchors: readonly X509Certificate[], now: number): ValidatedChain | ChainFailure {
  const leafCert = bundle[0]
  if (leafCert === undefined) return { code: 'CERT_INVALID', message: 'the x5u document holds no certificate' }
  let leaf: CertificateFacts
  try {
    leaf = certificateFacts(leafCert)
  } catch (err) {
    return { code: 'CERT_INVALID', message: `the leaf certificate cannot be read: ${err instanceof DerError ? err.message : 'malformed'}` }
  }
  if (leafCert.ca) return { code: 'CERT_KEY_UNSUITABLE', message: 'the leaf is a CA certificate (CA:TRUE), not an end-entity certificate' }
  let key
  try {
    key = leafCert.publicKey
  } catch {
    // A key OpenSSL keeps but cannot load (an unknown algorithm, a malformed point).
    return { code: 'CERT_KEY_UNSUITABLE', message: 'the leaf key cannot be read' }
  }
  const curve = key.asymmetricKeyDetails?.namedCurve
  if (key.asymmetricKeyType !== 'ec' || curve !== 'prime256v1') {
    return { code: 'CERT_KEY_UNSUITABLE', message: `the leaf key is ${key.asymmetricKeyType ?? 'unknown'}${curve ? ` (${curve})` : ''}, not EC P-256` }
  }
  if (leaf.keyUsage === null || !leaf.keyUsage.has('digitalSignature')) {
    return { code: 'CERT_KEY_UNSUITABLE', message: 'the leaf key usage does not include digitalSignature' }
  }
  if (leaf.unknownCritical !== null) return { code: 'CERT_UNTRUSTED', message: `the leaf has a critical extension this verifier does not understand (${leaf.unknownCritical})` }

  const path: X509Certificate[] = [leafCert]
  const intermediates = bundle.slice(1)
  let current = leafCert
  for (;;) {
    // Of several anchors that could have issued it (a root renewed with the same name and
    // key), one valid now.
    const candidates = anchors.filter((a) => issued(a, current))
    const anchor = candidates.find((a) => within(a, now)) ?? candidates[0]
    if (anchor !== undefined) {
      path.push(anchor)
      break
    }
    if (path.length >= MAX_PATH) return { code: 'CERT_UNTRUSTED', message: `no trust anchor within ${MAX_PATH} certificates of the leaf` }
    const next = intermediates.find((i) => !path.includes(i) && issued(i, current))
    if (next === undefined) {
      return { code: 'CERT_UNTRUSTED', message: `${name(current)} is not issued by a trust anchor (STI_TRUST_ANCHORS, kns shaken trust) nor by a certificate of the bundle` }
    }
    const problem = unsuitableCa(next)
    if (problem !== null) return { code: 'CERT_UNTRUSTED', message: problem }
    path.push(next)
    current = next
  }
  for (const cert of path) {
    if (now < cert.validFromDate.getTime()) return { code: 'CERT_EXPIRED', message: `${name(cert)} is not valid before ${cert.validFromDate.toISOString()}` }
    if (now > cert.validToDate.getTime()) return { code: 'CERT_EXPIRED', message: `${name(cert)} expired at ${cert.validToDate.toISOString()}` }
  }
  const constrained = checkCaConstraints(path, leaf)
  if (constrained !== null) return { code: 'CERT_UNTRUSTED', message: constrained }
  return { leaf, path, issuer: path[1]!, validUntil: Math.min(...path.map((c) => c.validToDate.getTime())) }
}

function within(cert: X509Certificate, now: number): boolean {
  return now >= cert.validFromDate.getTime() && now <= cert.validToDate.getTime()
}

/**
 * What the CA certificates above the leaf allow: each one's pathLenConstraint (how many CA
 * certificates may follow it), and, where a CA carries a TNAuthList, that the certificate below
 * it claims no number or SPC outside it (RFC 9060 delegation: a CA limited to a TN range cannot
 * issue a leaf good for any number).
 */
function checkCaConstraints(path: readonly X509Certificate[], leaf: CertificateFacts): string | null {
  let below = leaf
  for (let i = 1; i < path.length; i++) {
    let facts: CertificateFacts
    try {
      facts = certificateFacts(path[i]!)
    } catch {
      return `${name(path[i]!)} cannot be read`
    }
    // CA certificates between this one and the leaf: path[1..i-1].
    if (facts.pathLen !== null && i - 1 > facts.pathLen) return `${name(path[i]!)} allows ${facts.pathLen} CA certificate(s) below it, the path has ${i - 1}`
    const outer = facts.tnAuthList
    if (typeof outer === 'string') return `${name(path[i]!)} has a TNAuthList that cannot be read`
    if (outer !== null) {
      const inner = below.tnAuthList
      if (inner === null || typeof inner === 'string' || !tnAuthListCovers(outer, inner)) {
        return `${name(below.cert)} claims numbers or SPCs outside the TNAuthList of its issuer ${name(path[i]!)}`
      }
    }
    below = facts
  }
  return null
}

/** `issuer` issued `cert`: names match and its key verifies the signature. */
function issued(issuer: X509Certificate, cert: X509Certificate): boolean {
  return cert.checkIssued(issuer) && cert.verify(issuer.publicKey)
}

function unsuitableCa(cert: X509Certificate): string | null {
  if (!cert.ca) return `${name(cert)} signs the chain but is not a CA certificate`
  let facts: CertificateFacts
  try {
    facts = certificateFacts(cert)
  } catch {
    return `${name(cert)} cannot be read`
  }
  if (facts.keyUsage !== null && !facts.keyUsage.has('keyCertSign')) return `${name(cert)} may not sign certificates (key usage without keyCertSign)`
  if (facts.unknownCritical !== null) return `${name(cert)} has a critical extension this verifier does not understand (${facts.unknownCritical})`
  return null
}

export function isChainFailure(result: ValidatedChain | ChainFailure): result is ChainFailure {
  return 'code' in result
}
