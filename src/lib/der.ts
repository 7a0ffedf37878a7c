import * as asn1js from 'asn1js'

/**
 * DER, read with asn1js (BER/DER decoder of the PKI.js project) into a small typed tree: what
 * the X.509 code needs, without asn1js's classes leaking further. Input is untrusted (a
 * certificate or CRL from an attacker's URL): a malformed encoding throws DerError.
 */
export interface DerNode {
  /** 0 universal, 1 application, 2 context-specific, 3 private. */
  tagClass: number
  tagNumber: number
  constructed: boolean
  /** The content octets (primitive), or the whole content (constructed). */
  content: Uint8Array
  /** The whole encoding, header included (e.g. a TBSCertificate to verify a signature over). */
  encoded: Uint8Array
  children: DerNode[]
}

export class DerError extends Error {}

/** Depth beyond which no certificate structure goes: a nesting bomb stops here. */
const MAX_DEPTH = 32

function toNode(block: asn1js.AsnType, depth: number): DerNode {
  if (depth > MAX_DEPTH) throw new DerError('DER nested too deeply')
  const base = block as unknown as {
    idBlock: { tagClass: number; tagNumber: number; isConstructed: boolean }
    valueBlock: { value?: unknown }
    valueBeforeDecodeView: Uint8Array
    error?: string
  }
  const constructed = base.idBlock.isConstructed
  const value = base.valueBlock.value
  const children = constructed && Array.isArray(value) ? (value as asn1js.AsnType[]).map((child) => toNode(child, depth + 1)) : []
  const encoded = base.valueBeforeDecodeView
  const headerLength = encoded.length - contentLength(encoded)
  return {
    tagClass: base.idBlock.tagClass - 1,
    tagNumber: base.idBlock.tagNumber,
    constructed,
    content: encoded.subarray(headerLength),
    encoded,
    children,
  }
}

/** The length of the content of the TLV `encoded` (definite lengths only: DER). */
function contentLength(encoded: Uint8Array): number {
  let offset = 1
  if ((encoded[0]! & 0x1f) === 0x1f) while (encoded[offset++]! & 0x80) { /* long-form tag */ }
  const first = encoded[offset++]!
  if ((first & 0x80) === 0) return first
  let length = 0
  for (let i = 0; i < (first & 0x7f); i++) length = length * 256 + encoded[offset++]!
  return length
}

/**
 * Parses exactly one DER element filling `bytes`. asn1js stops at 10 000 nodes by default, which
 * a CRL of a few thousand entries passes: the bound follows the input's size instead (a node
 * takes at least 2 bytes), and embedded encodings are not parsed ahead.
 */
export function parseDer(bytes: Uint8Array): DerNode {
  const result = asn1js.fromBER(bytes, { maxNodes: Math.max(10_000, bytes.length), parseEmbedded: false })
  if (result.offset === -1 || result.result.error) throw new DerError(`not DER: ${result.result.error || 'malformed'}`)
  if (result.offset !== bytes.length) throw new DerError('trailing bytes after the DER element')
  return toNode(result.result, 0)
}

export const TAG = { BOOLEAN: 1, INTEGER: 2, BIT_STRING: 3, OCTET_STRING: 4, OID: 6, SEQUENCE: 16, IA5_STRING: 22, UTC_TIME: 23, GENERALIZED_TIME: 24 } as const

export function expect(node: DerNode | undefined, tagNumber: number, what: string, tagClass = 0): DerNode {
  if (node === undefined || node.tagClass !== tagClass || node.tagNumber !== tagNumber) throw new DerError(`${what}: unexpected encoding`)
  return node
}

/** An OBJECT IDENTIFIER's dotted form. */
export function oid(node: DerNode): string {
  const bytes = expect(node, TAG.OID, 'object identifier').content
  if (bytes.length === 0) throw new DerError('empty object identifier')
  const parts: number[] = []
  let value = 0
  for (const byte of bytes) {
    value = value * 128 + (byte & 0x7f)
    if (value > Number.MAX_SAFE_INTEGER / 128) throw new DerError('object identifier arc too large')
    if ((byte & 0x80) === 0) {
      if (parts.length === 0) parts.push(value < 80 ? Math.floor(value / 40) : 2, value < 80 ? value % 40 : value - 80)
      else parts.push(value)
      value = 0
    }
  }
  return parts.join('.')
}

/** A hex number in one canonical form: lowercase, no leading zeros (serial numbers from DER and from node:crypto alike). */
export function canonicalHex(hex: string): string {
  const stripped = hex.toLowerCase().replace(/^0+/, '')
  return stripped === '' ? '0' : stripped
}

/** A non-negative INTEGER as canonical hex (serial numbers). */
export function integerHex(node: DerNode): string {
  return canonicalHex(Buffer.from(expect(node, TAG.INTEGER, 'integer').content).toString('hex'))
}

/** A small INTEGER as a number. */
export function integer(node: DerNode): number {
  const bytes = expect(node, TAG.INTEGER, 'integer').content
  if (bytes.length === 0 || bytes.length > 6 || bytes[0]! & 0x80) throw new DerError('integer out of range')
  return bytes.reduce((n, b) => n * 256 + b, 0)
}

export function ia5(node: DerNode): string {
  const bytes = expect(node, TAG.IA5_STRING, 'IA5String').content
  if (bytes.some((b) => b > 0x7f)) throw new DerError('IA5String with a non-ASCII byte')
  return Buffer.from(bytes).toString('latin1')
}

/** UTCTime or GeneralizedTime (DER forms: ...Z) as epoch ms. */
export function time(node: DerNode): number {
  const text = Buffer.from(node.content).toString('latin1')
  let match: RegExpExecArray | null
  if (node.tagNumber === TAG.UTC_TIME && (match = /^(\d\d)(\d\d)(\d\d)(\d\d)(\d\d)(\d\d)Z$/.exec(text))) {
    const year = Number(match[1]) + (Number(match[1]) < 50 ? 2000 : 1900)
    return Date.UTC(year, Number(match[2]) - 1, Number(match[3]), Number(match[4]), Number(match[5]), Number(match[6]))
  }
  if (node.tagNumber === TAG.GENERALIZED_TIME && (match = /^(\d{4})(\d\d)(\d\d)(\d\d)(\d\d)(\d\d)Z$/.exec(text))) {
    return Date.UTC(Number(match[1]), Number(match[2]) - 1, Number(match[3]), Number(match[4]), Number(match[5]), Number(match[6]))
  }
  throw new DerError('not a DER time')
}
