import { readFileSync } from 'node:fs'
import type { X509Certificate } from 'node:crypto'
import { fingerprintOf, addTrustAnchors, listTrustAnchors, removeTrustAnchor } from '../caller/shaken/trust-anchors.ts'
import { certificateFacts, nameOf, parseCertificates } from '../caller/shaken/x509.ts'
import { addCrlSigners, listCrlSigners, removeCrlSigner } from '../caller/shaken/crl-signers.ts'
import { policiesOf } from '../caller/shaken/certificate-policy.ts'
import { ValidationError } from '../errors.ts'
import type { Service } from '../service.ts'
import { required, type Parsed } from './args.ts'
import { addCredential, listCredentials, removeCredential } from '../caller/shaken/credentials.ts'
import { SealedBox } from '../lib/sealed-box.ts'
import { UsageError, type Output } from './output.ts'

export const SHAKEN_USAGE = `  shaken trust add <file.pem>             store STI-CA trust anchors (CA certificates) in the database
  shaken trust list                       the anchors in use: STI_TRUST_ANCHORS and the stored ones
  shaken trust remove <fingerprint>       remove a stored anchor (SHA-256 fingerprint)
  shaken crl-signer add <file.pem>        trust the certificate(s) that sign a CRL (the STI-PA's CRL signer: not a CA)
  shaken crl-signer list
  shaken crl-signer remove <fingerprint>
  shaken cert-info <file>                 subject, issuer, validity, key, TNAuthList (SPC/TNs) of each certificate
                                          of a PEM or DER file
  shaken credential add --name <n> --key <private.pem> --cert <chain.pem> --x5u <public https URL> [--display-name <caller name>]
                                          the STI-AS signing credential (the key stored encrypted, never shown);
                                          --display-name: signed as the caller name (RFC 9795 rcd nam)
  shaken credential list
  shaken credential remove <name>`

function readFile(path: string | undefined, usage: string): Buffer {
  if (path === undefined) throw new UsageError(`usage: ${usage}`)
  try {
    return readFileSync(path)
  } catch {
    throw new ValidationError(`cannot read ${path}`, { field: 'file' })
  }
}

function policiesOrError(cert: X509Certificate): string[] | { error: string } {
  try {
    return policiesOf(cert)
  } catch (err) {
    return { error: err instanceof Error ? err.message : 'unreadable' }
  }
}

/** What `cert-info` says of one certificate. */
export function describeCertificate(cert: X509Certificate): Record<string, unknown> {
  const facts = certificateFacts(cert)
  const key = cert.publicKey
  const tn = facts.tnAuthList
  return {
    subject: nameOf(cert.subject),
    issuer: nameOf(cert.issuer),
    serialNumber: cert.serialNumber.toLowerCase(),
    notBefore: cert.validFromDate.toISOString(),
    notAfter: cert.validToDate.toISOString(),
    key: key.asymmetricKeyType === 'ec' ? `EC ${key.asymmetricKeyDetails?.namedCurve ?? ''}`.trim() : String(key.asymmetricKeyType),
    ca: cert.ca,
    keyUsage: facts.keyUsage === null ? null : [...facts.keyUsage],
    tnAuthList: tn === null ? null : typeof tn === 'string' ? { error: tn } : tn,
    crlDistributionPoints: facts.crlUrls,
    certificatePolicies: policiesOrError(cert),
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
    `TNAuthList:  ${tnText}`, `CRL:         ${(d.crlDistributionPoints as string[]).join(', ') || 'none'}`,
    `policies:    ${Array.isArray(d.certificatePolicies) ? (d.certificatePolicies as string[]).join(', ') || 'none' : 'unreadable'}`,
    `fingerprint: ${String(d.fingerprint)}`,
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

export const SHAKEN_OPTIONS = { cert: { type: 'string' }, x5u: { type: 'string' }, 'display-name': { type: 'string' } } as const

/** kns shaken credential add | list | remove */
async function credentialCommand(service: Service, { values, positionals }: Parsed, out: Output): Promise<void> {
  const action = positionals[2]
  if (action === 'add') {
    const credential = await addCredential(service.db, new SealedBox(service.secret, 'shaken-credentials'), {
      name: required(values, 'name'),
      keyPem: readFile(required(values, 'key'), 'kns shaken credential add --key <private.pem>').toString('utf8'),
      chainPem: readFile(required(values, 'cert'), 'kns shaken credential add --cert <chain.pem>').toString('utf8'),
      x5u: required(values, 'x5u'),
      ...(values['display-name'] === undefined ? {} : { displayName: String(values['display-name']) }),
    }, { allowPrivate: service.config.x5uAllowPrivate, allowHttp: service.config.x5uAllowHttp, policy: service.config.stiCertPolicy })
    return out.result({ ...credential, notAfter: new Date(credential.notAfter).toISOString(), createdAt: new Date(credential.createdAt).toISOString(),
      chainUrl: `${service.config.publicBaseUrl}/shaken/certs/${credential.name}.pem` },
    `added signing credential ${credential.name}: ${credential.subject}, x5u ${credential.x5u}\n` +
      `its chain is served at ${service.config.publicBaseUrl}/shaken/certs/${credential.name}.pem (the x5u may point there)`)
  }
  if (action === 'list') {
    const list = await listCredentials(service.db)
    return out.result({ credentials: list.map((c) => ({ ...c, notAfter: new Date(c.notAfter).toISOString(), createdAt: new Date(c.createdAt).toISOString() })) },
      list.length === 0 ? 'no signing credentials' : list.map((c) => `${c.name}  until ${new Date(c.notAfter).toISOString()}  ${c.x5u}  ${c.subject}` +
        (c.displayName === undefined ? '' : `  name "${c.displayName}"`)).join('\n'))
  }
  if (action === 'remove') {
    const name = positionals[3]
    if (name === undefined) throw new UsageError('usage: kns shaken credential remove <name>')
    await removeCredential(service.db, name)
    return out.result({ removed: name }, `removed signing credential ${name}`)
  }
  throw new UsageError(`unknown command 'kns shaken credential ${action ?? ''}'`)
}

/** kns shaken crl-signer add | list | remove */
async function crlSignerCommand(service: Service, args: Parsed, out: Output): Promise<void> {
  const action = args.positionals[2]
  if (action === 'add') {
    const added = await addCrlSigners(service.db, readFile(args.positionals[3], 'kns shaken crl-signer add <file.pem>'))
    return out.result({ added: added.map(({ pem: _pem, ...a }) => ({ ...a, notAfter: new Date(a.notAfter).toISOString() })) },
      added.map((a) => `trusted CRL signer ${a.fingerprint}  ${a.subject}`).join('\n'))
  }
  if (action === 'list') {
    const signers = (await listCrlSigners(service.db)).map((a) => ({ fingerprint: a.fingerprint, subject: a.subject, notAfter: new Date(a.notAfter).toISOString() }))
    return out.result({ crlSigners: signers }, signers.length === 0
      ? 'no trusted CRL signers: a CRL counts when the leaf\'s issuer or a trust anchor signed it'
      : signers.map((a) => `${a.fingerprint}  until ${a.notAfter}  ${a.subject}`).join('\n'))
  }
  if (action === 'remove') {
    const fingerprint = args.positionals[3]
    if (fingerprint === undefined) throw new UsageError('usage: kns shaken crl-signer remove <fingerprint>')
    await removeCrlSigner(service.db, fingerprint)
    return out.result({ removed: fingerprint.replaceAll(':', '').toLowerCase() }, `removed CRL signer ${fingerprint}`)
  }
  throw new UsageError(`unknown command 'kns shaken crl-signer ${action ?? ''}'`)
}

/** kns shaken trust add | list | remove, kns shaken crl-signer ..., kns shaken credential ... */
export async function shakenCommand(service: Service, sub: string | undefined, args: Parsed, out: Output): Promise<void> {
  if (sub === 'credential') return credentialCommand(service, args, out)
  if (sub === 'crl-signer') return crlSignerCommand(service, args, out)
  const { positionals } = args
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
      ...fromFile.map((c) => ({ fingerprint: fingerprintOf(c), subject: nameOf(c.subject), notAfter: c.validToDate.toISOString(), source: 'STI_TRUST_ANCHORS' })),
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
