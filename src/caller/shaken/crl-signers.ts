import type { X509Certificate } from 'node:crypto'
import type { Database, Executor } from '../../db/engine.ts'
import {
  addStoredCertificates, CertificateSet, listStoredCertificates, removeStoredCertificate, type CertificateStore, type StoredCertificate,
} from './stored-certificates.ts'
import { certificateFacts } from './x509.ts'

/** The change signal's subject when the trusted CRL signers change. */
export const CRL_SIGNERS_SUBJECT = 'shaken:crl-signers'
const CRL_SIGNERS: CertificateStore = { table: 'shaken_crl_signers', subject: CRL_SIGNERS_SUBJECT, what: 'CRL signer' }

/**
 * Certificates an operator trusts to sign CRLs (`kns shaken crl-signer add|list|remove`). The
 * STI-PA publishes one CRL for every STI-CA, signed by a certificate of its own that is not a
 * CA certificate and not a trust anchor: without it, STI_CRL=hard refuses every call. Trusted
 * explicitly, as an operator trusts an anchor; not a path to any certificate.
 */
export class CrlSigners extends CertificateSet {
  constructor(db: Executor) {
    super(db, CRL_SIGNERS)
  }
}

/** A key usage, when the certificate has one, must allow signing CRLs (cRLSign) or signatures. */
function refuse(cert: X509Certificate): string | null {
  let usage
  try {
    usage = certificateFacts(cert).keyUsage
  } catch {
    return 'cannot be read'
  }
  if (usage !== null && !usage.has('cRLSign') && !usage.has('digitalSignature')) return 'has a key usage without cRLSign or digitalSignature'
  return null
}

export function addCrlSigners(db: Database, pem: Uint8Array): Promise<StoredCertificate[]> {
  return addStoredCertificates(db, CRL_SIGNERS, pem, refuse)
}

export function listCrlSigners(db: Executor): Promise<StoredCertificate[]> {
  return listStoredCertificates(db, CRL_SIGNERS)
}

export function removeCrlSigner(db: Database, fingerprint: string): Promise<void> {
  return removeStoredCertificate(db, CRL_SIGNERS, fingerprint)
}
