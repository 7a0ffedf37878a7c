import type { X509Certificate } from 'node:crypto'
import { readdirSync, readFileSync, statSync } from 'node:fs'
import { join } from 'node:path'
import type { Database, Executor } from '../../db/engine.ts'
import {
  addStoredCertificates, CertificateSet, listStoredCertificates, removeStoredCertificate, type CertificateStore, type StoredCertificate,
} from './stored-certificates.ts'
import { nameOf, parseCertificates } from './x509.ts'

export { fingerprintOf } from './stored-certificates.ts'
export type StoredAnchor = StoredCertificate

/** The change signal's subject when the stored anchors change (every process reloads them). */
export const ANCHORS_SUBJECT = 'shaken:anchors'
const ANCHORS: CertificateStore = { table: 'shaken_trust_anchors', subject: ANCHORS_SUBJECT, what: 'trust anchor' }

/**
 * STI-CA trust anchors: the certificates a SHAKEN leaf must chain to. Two sources, both read
 * by every process: the PEM file or directory named by STI_TRUST_ANCHORS (read at start), and
 * the database (`kns shaken trust add|list|remove`), reloaded when the change signal says they
 * changed.
 */
export class TrustAnchors extends CertificateSet {
  constructor(db: Executor, path: string | undefined) {
    super(db, ANCHORS, path === undefined ? [] : readAnchorFiles(path))
  }
}

/** A PEM file, or every .pem/.crt/.cer file of a directory. Unreadable: the start fails, naming it. */
function readAnchorFiles(path: string): X509Certificate[] {
  const files = statSync(path).isDirectory()
    ? readdirSync(path).filter((f) => /\.(pem|crt|cer)$/i.test(f)).sort().map((f) => join(path, f))
    : [path]
  const anchors: X509Certificate[] = []
  for (const file of files) {
    let certs: X509Certificate[]
    try {
      certs = parseCertificates(readFileSync(file))
    } catch (err) {
      throw new Error(`STI_TRUST_ANCHORS: ${file} is not a PEM or DER certificate (${err instanceof Error ? err.message : 'unreadable'})`)
    }
    const notCa = certs.find((c) => !c.ca)
    if (notCa !== undefined) throw new Error(`STI_TRUST_ANCHORS: ${file} holds ${nameOf(notCa.subject)}, which is not a CA certificate (CA:TRUE): not a trust anchor`)
    anchors.push(...certs)
  }
  return anchors
}

/** `kns shaken trust add`: every certificate of the PEM, each a CA certificate; already stored ones are kept. */
export function addTrustAnchors(db: Database, pem: Uint8Array): Promise<StoredAnchor[]> {
  return addStoredCertificates(db, ANCHORS, pem, (cert) => (cert.ca ? null : 'is not a CA certificate (basicConstraints CA:TRUE)'))
}

export function listTrustAnchors(db: Executor): Promise<StoredAnchor[]> {
  return listStoredCertificates(db, ANCHORS)
}

export function removeTrustAnchor(db: Database, fingerprint: string): Promise<void> {
  return removeStoredCertificate(db, ANCHORS, fingerprint)
}
