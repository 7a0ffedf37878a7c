import { readFileSync } from 'node:fs'
import type { X509Certificate } from 'node:crypto'
import { fingerprintOf, addTrustAnchors, listTrustAnchors, removeTrustAnchor } from '../caller/shaken/trust-anchors.ts'
import { certificateFacts, parseCertificates } from '../caller/shaken/x509.ts'
import { ValidationError } from '../errors.ts'
import type { Service } from '../service.ts'
import type { Parsed } from './args.ts'
import { UsageError, type Output } from './output.ts'

export const SHAKEN_USAGE = `  shaken trust add <file.pem>             store STI-CA trust anchors (CA certificates) in the database
  shaken trust list                       the anchors in use: STI_TRUST_ANCHORS and the stored ones
  shaken trust remove <fingerprint>       remove a stored anchor (SHA-256 fingerprint)
  shaken cert-info <file>                 subject, issuer, validity, key, TNAuthList (SPC/TNs) of each certificate`

function readFile(path: string | undefined, usage: string): Buffer {
  if (path === undefined) throw new UsageError(`usage: ${usage}`)
  try {
    return readFileSync(path)
  } catch {
    throw new ValidationError(`cannot read ${path}`, { field: 'file' })
  }
}

/** What `cert-info` says of one certificate. */
export function describeCertificate(cert: X509Certificate): Record<string, unknown> {
  const facts = certificateFacts(cert)
  const key = cert.publicKey
  const tn = facts.tnAuthList
  return {
    subject: cert.subject.replaceAll('\n', ', '),
    issuer: cert.issuer.replaceAll('\n', ', '),
    serialNumber: cert.serialNumber.toLowerCase(),
    notBefore: cert.validFromDate.toISOString(),
    notAfter: cert.validToDate.toISOString(),
    key: key.asymmetricKeyType === 'ec' ? `EC ${key.asymmetricKeyDetails?.namedCurve ?? ''}`.trim() : String(key.asymmetricKeyType),
    ca: cert.ca,
    keyUsage: facts.keyUsage === null ? null : [...facts.keyUsage],
    tnAuthList: tn === null ? null : typeof tn === 'string' ? { error: tn } : tn,
    crlDistributionPoints: facts.crlUrls,
    fingerprint: fingerprintOf(cert),
  }
}

function certificateText(d: Record<string, unknown>): string {
  const tn = d.tnAuthList as { spcs?: string[]; tns?: string[]; ranges?: Array<{ start: string; count: number }>; error?: string } | null
  const tnText = tn === null ? 'none' : tn.error !== undefined ? `unreadable (${tn.error})`
    : [...(tn.spcs ?? []).map((s) => `SPC ${s}`), ...(tn.tns ?? []).map((t) => `TN ${t}`), ...(tn.ranges ?? []).map((r) => `TNs ${r.start} +${r.count}`)].join(', ')
  return [
    `subject:     ${String(d.subject)}`, `issuer:      ${String(d.issuer)}`, `valid:       ${String(d.notBefore)} .. ${String(d.notAfter)}`,
    `key:         ${String(d.key)}${d.ca === true ? ' (CA)' : ''}`, `key usage:   ${(d.keyUsage as string[] | null)?.join(', ') ?? 'none'}`,
    `TNAuthList:  ${tnText}`, `CRL:         ${(d.crlDistributionPoints as string[]).join(', ') || 'none'}`, `fingerprint: ${String(d.fingerprint)}`,
  ].join('\n')
}

/** kns shaken cert-info (no database). */
export function certInfoCommand(args: Parsed, out: Output): void {
  const body = readFile(args.positionals[2], 'kns shaken cert-info <file>')
  let certs: X509Certificate[]
  try {
    certs = parseCertificates(body)
  } catch (err) {
    throw new ValidationError(`not a PEM or DER certificate: ${err instanceof Error ? err.message : 'unreadable'}`, { field: 'file' })
  }
  const described = certs.map(describeCertificate)
  out.result({ certificates: described }, described.map(certificateText).join('\n\n'))
}

/** kns shaken trust add | list | remove */
export async function shakenCommand(service: Service, sub: string | undefined, { positionals }: Parsed, out: Output): Promise<void> {
  if (sub !== 'trust') throw new UsageError(`unknown command 'kns shaken ${sub ?? ''}'`)
  const action = positionals[2]
  if (action === 'add') {
    const added = await addTrustAnchors(service.db, readFile(positionals[3], 'kns shaken trust add <file.pem>'))
    return out.result({ added: added.map(({ pem: _pem, ...a }) => ({ ...a, notAfter: new Date(a.notAfter).toISOString() })) },
      added.map((a) => `trusted ${a.fingerprint}  ${a.subject}`).join('\n'))
  }
  if (action === 'list') {
    const fromFile = service.certificateTrust.anchors.fromFile
    const stored = await listTrustAnchors(service.db)
    const anchors = [
      ...fromFile.map((c) => ({ fingerprint: fingerprintOf(c), subject: c.subject.replaceAll('\n', ', '), notAfter: c.validToDate.toISOString(), source: 'STI_TRUST_ANCHORS' })),
      ...stored.map((a) => ({ fingerprint: a.fingerprint, subject: a.subject, notAfter: new Date(a.notAfter).toISOString(), source: 'database' })),
    ]
    return out.result({ anchors }, anchors.length === 0 ? 'no trust anchors: x5u certificates cannot be trusted (STI_TRUST_ANCHORS, kns shaken trust add)'
      : anchors.map((a) => `${a.fingerprint}  ${a.source.padEnd(17)}  until ${a.notAfter}  ${a.subject}`).join('\n'))
  }
  if (action === 'remove') {
    const fingerprint = positionals[3]
    if (fingerprint === undefined) throw new UsageError('usage: kns shaken trust remove <fingerprint>')
    await removeTrustAnchor(service.db, fingerprint)
    return out.result({ removed: fingerprint.replaceAll(':', '').toLowerCase() }, `removed trust anchor ${fingerprint}`)
  }
  throw new UsageError(`unknown command 'kns shaken trust ${action ?? ''}'`)
}
