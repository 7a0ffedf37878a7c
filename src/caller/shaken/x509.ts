import { X509Certificate } from 'node:crypto'
import { DerError, expect, ia5, integer, oid, parseDer, TAG, type DerNode } from '../../lib/der.ts'

/**
 * What the SHAKEN checks read from a certificate beyond node:crypto's X509Certificate (which
 * verifies signatures and knows validity, the CA flag and the key, but not key usage bits,
 * CRL distribution points or TNAuthList): its extensions, parsed from the DER.
 */
export const OIDS = {
  basicConstraints: '2.5.29.19',
  keyUsage: '2.5.29.15',
  extKeyUsage: '2.5.29.37',
  certificatePolicies: '2.5.29.32',
  subjectAltName: '2.5.29.17',
  crlDistributionPoints: '2.5.29.31',
  /** RFC 8226 TNAuthList. */
  tnAuthList: '1.3.6.1.5.5.7.1.26',
} as const

/**
 * Critical extensions this verifier understands; any other critical one makes a certificate
 * unusable (RFC 5280 4.2). Certificate policies are accepted whatever they name (the STI-CA's
 * policy is the anchor's business); a critical extended key usage or subject alternative name
 * is not checked here, so it is not accepted either.
 */
const UNDERSTOOD_CRITICAL = new Set<string>([OIDS.basicConstraints, OIDS.keyUsage, OIDS.certificatePolicies, OIDS.tnAuthList])

const KEY_USAGE_BITS = ['digitalSignature', 'nonRepudiation', 'keyEncipherment', 'dataEncipherment', 'keyAgreement', 'keyCertSign', 'cRLSign', 'encipherOnly', 'decipherOnly'] as const
export type KeyUsage = (typeof KEY_USAGE_BITS)[number]

/** RFC 8226: service provider codes, telephone number ranges and single numbers. */
export interface TnAuthList {
  spcs: string[]
  ranges: Array<{ start: string; count: number }>
  tns: string[]
}

export interface CertificateFacts {
  cert: X509Certificate
  /** Extension OID -> critical flag and the DER inside its OCTET STRING. */
  extensions: Map<string, { critical: boolean; value: Uint8Array }>
  /** null when the certificate has no key usage extension. */
  keyUsage: Set<KeyUsage> | null
  /** basicConstraints pathLenConstraint; null when absent. */
  pathLen: number | null
  /** An unrecognised critical extension's OID, if any. */
  unknownCritical: string | null
  crlUrls: string[]
  /** null: no TNAuthList; a string: why it could not be read. */
  tnAuthList: TnAuthList | string | null
}

function extensionsOf(der: Uint8Array): Map<string, { critical: boolean; value: Uint8Array }> {
  const tbs = expect(parseDer(der).children[0], TAG.SEQUENCE, 'tbsCertificate')
  const found = new Map<string, { critical: boolean; value: Uint8Array }>()
  const wrapper = tbs.children.find((n) => n.tagClass === 2 && n.tagNumber === 3)
  if (wrapper === undefined) return found
  for (const extension of expect(wrapper.children[0], TAG.SEQUENCE, 'extensions').children) {
    const [id, second, third] = extension.children
    const critical = third !== undefined && second!.tagNumber === TAG.BOOLEAN && second!.content[0] !== 0
    const value = expect(third ?? second, TAG.OCTET_STRING, 'extnValue').content
    const name = oid(id!)
    if (found.has(name)) throw new DerError(`extension ${name} appears twice`)
    found.set(name, { critical, value })
  }
  return found
}

/** BasicConstraints ::= SEQUENCE { cA BOOLEAN DEFAULT FALSE, pathLenConstraint INTEGER OPTIONAL }. */
function pathLenOf(value: Uint8Array): number | null {
  const fields = expect(parseDer(value), TAG.SEQUENCE, 'basic constraints').children
  const last = fields.at(-1)
  return last !== undefined && last.tagNumber === TAG.INTEGER && last.tagClass === 0 ? integer(last) : null
}

function keyUsageOf(value: Uint8Array): Set<KeyUsage> {
  const bits = expect(parseDer(value), TAG.BIT_STRING, 'key usage').content
  const usage = new Set<KeyUsage>()
  KEY_USAGE_BITS.forEach((name, i) => {
    const byte = bits[1 + (i >> 3)]
    if (byte !== undefined && byte & (0x80 >> (i & 7))) usage.add(name)
  })
  return usage
}

/** CRLDistributionPoints: every fullName URI (GeneralName [6], implicit tags). */
function crlUrlsOf(value: Uint8Array): string[] {
  const urls: string[] = []
  for (const point of expect(parseDer(value), TAG.SEQUENCE, 'CRL distribution points').children) {
    const name = point.children.find((n) => n.tagClass === 2 && n.tagNumber === 0)
    const fullName = name?.children.find((n) => n.tagClass === 2 && n.tagNumber === 0)
    for (const general of fullName?.children ?? []) {
      if (general.tagClass === 2 && general.tagNumber === 6) urls.push(Buffer.from(general.content).toString('latin1'))
    }
  }
  return urls
}

const TELEPHONE_NUMBER = /^[0-9#*]{1,15}$/

function telephoneNumber(node: DerNode): string {
  const tn = ia5(node)
  if (!TELEPHONE_NUMBER.test(tn)) throw new DerError('a TelephoneNumber of 1-15 digits, # or *')
  return tn
}

/** RFC 8226 (explicit tags): SEQUENCE OF CHOICE { spc [0], range [1] { start, count }, one [2] }. */
export function parseTnAuthList(value: Uint8Array): TnAuthList {
  const list: TnAuthList = { spcs: [], ranges: [], tns: [] }
  const entries = expect(parseDer(value), TAG.SEQUENCE, 'TNAuthList').children
  if (entries.length === 0) throw new DerError('an empty TNAuthList')
  for (const entry of entries) {
    if (entry.tagClass !== 2 || entry.children.length !== 1) throw new DerError('a TNEntry that is not [0], [1] or [2]')
    const inner = entry.children[0]!
    if (entry.tagNumber === 0) list.spcs.push(ia5(inner))
    else if (entry.tagNumber === 1) {
      const [start, count] = expect(inner, TAG.SEQUENCE, 'TelephoneNumberRange').children
      const n = integer(count!)
      if (n < 2) throw new DerError('a TelephoneNumberRange count below 2')
      list.ranges.push({ start: telephoneNumber(start!), count: n })
    } else if (entry.tagNumber === 2) list.tns.push(telephoneNumber(inner))
    else throw new DerError(`TNEntry [${entry.tagNumber}]`)
  }
  return list
}

/** Whether the list's numbers (not its SPCs) cover `tn` (E.164 digits). */
export function tnCovered(list: TnAuthList, tn: string): boolean {
  if (list.tns.includes(tn)) return true
  return list.ranges.some(({ start, count }) =>
    /^\d+$/.test(start) && start.length === tn.length && BigInt(tn) >= BigInt(start) && BigInt(tn) < BigInt(start) + BigInt(count))
}

/**
 * Whether an issuer's TNAuthList allows everything a certificate it issued claims (RFC 9060
 * delegation): each SPC among the issuer's, each TN and range within the issuer's numbers.
 */
export function tnAuthListCovers(outer: TnAuthList, inner: TnAuthList): boolean {
  if (!inner.spcs.every((spc) => outer.spcs.includes(spc))) return false
  // An issuer constrained by SPC only does not enumerate numbers: its SPCs are the constraint.
  if (outer.tns.length + outer.ranges.length === 0) return true
  return inner.tns.every((tn) => tnCovered(outer, tn)) && inner.ranges.every(({ start, count }) => {
    if (!/^\d+$/.test(start)) return false
    const last = BigInt(start) + BigInt(count) - 1n
    return outer.ranges.some((r) => /^\d+$/.test(r.start) && r.start.length === start.length &&
      BigInt(start) >= BigInt(r.start) && last < BigInt(r.start) + BigInt(r.count))
  })
}

/** A distinguished name on one line, as people read it: `C=US, O=..., CN=...`. */
export function nameOf(dn: string): string {
  return dn.replaceAll('\n', ', ')
}

/** Reads a certificate's extensions; throws DerError when its DER cannot be read. */
export function certificateFacts(cert: X509Certificate): CertificateFacts {
  const extensions = extensionsOf(cert.raw)
  const unknownCritical = [...extensions].find(([id, e]) => e.critical && !UNDERSTOOD_CRITICAL.has(id))?.[0] ?? null
  const usage = extensions.get(OIDS.keyUsage)
  const crl = extensions.get(OIDS.crlDistributionPoints)
  const tn = extensions.get(OIDS.tnAuthList)
  let tnAuthList: TnAuthList | string | null = null
  if (tn !== undefined) {
    try {
      tnAuthList = parseTnAuthList(tn.value)
    } catch (err) {
      tnAuthList = err instanceof DerError ? err.message : 'unreadable'
    }
  }
  return {
    cert,
    extensions,
    keyUsage: usage === undefined ? null : keyUsageOf(usage.value),
    pathLen: extensions.has(OIDS.basicConstraints) ? pathLenOf(extensions.get(OIDS.basicConstraints)!.value) : null,
    unknownCritical,
    crlUrls: crl === undefined ? [] : crlUrlsOf(crl.value),
    tnAuthList,
  }
}

/** A PEM bundle (any number of CERTIFICATE blocks, leaf first) or one DER certificate. */
export function parseCertificates(body: Uint8Array): X509Certificate[] {
  const text = Buffer.from(body).toString('latin1')
  if (text.includes('-----BEGIN')) {
    const blocks = text.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? []
    if (blocks.length === 0) throw new DerError('a PEM file without a CERTIFICATE block')
    return blocks.map((block) => new X509Certificate(block))
  }
  return [new X509Certificate(Buffer.from(body))]
}
