import { X509Certificate } from 'node:crypto'
import { signalChange, type ChangeWatcher } from '../../db/change-signal.ts'
import { CALLER_TOPIC } from '../../db/change-topics.ts'
import type { Database, Executor } from '../../db/engine.ts'
import { NotFoundError, ValidationError } from '../../errors.ts'
import { nameOf, parseCertificates } from './x509.ts'

export interface StoredCertificate { fingerprint: string; subject: string; notAfter: number; createdAt: number; pem: string }

/** Where a kind of operator-chosen certificate lives: its table and its change signal's subject. */
export interface CertificateStore {
  /** A constant of this code, never input: it is written into the SQL. */
  table: 'shaken_trust_anchors' | 'shaken_crl_signers'
  subject: string
  /** What one of them is called in messages: "trust anchor", "CRL signer". */
  what: string
}

/** `SHA-256 fingerprint` as X509Certificate gives it, lowercase without colons. */
export function fingerprintOf(cert: X509Certificate): string {
  return cert.fingerprint256.replaceAll(':', '').toLowerCase()
}

/**
 * Certificates an operator stored (`kns shaken trust|crl-signer add`), read by every process
 * and reloaded when the change signal says they changed, plus any read from a file at start.
 * `version` moves with every change, so what was cached against the old set is done again.
 */
export class CertificateSet {
  readonly #db: Executor
  readonly #store: CertificateStore
  readonly #fromFile: X509Certificate[]
  #loaded: Promise<X509Certificate[]> | undefined
  version = 0

  constructor(db: Executor, store: CertificateStore, fromFile: X509Certificate[] = []) {
    this.#db = db
    this.#store = store
    this.#fromFile = fromFile
  }

  get fromFile(): readonly X509Certificate[] {
    return this.#fromFile
  }

  /** Every certificate now (file first). */
  all(): Promise<X509Certificate[]> {
    this.#loaded ??= this.#load().catch((err: unknown) => {
      this.#loaded = undefined
      throw err
    })
    return this.#loaded
  }

  async #load(): Promise<X509Certificate[]> {
    const rows = await this.#db.all<{ pem: string }>(`SELECT pem FROM ${this.#store.table} ORDER BY created_at, fingerprint`)
    return [...this.#fromFile, ...rows.map((r) => new X509Certificate(r.pem))]
  }

  invalidate(): void {
    this.#loaded = undefined
    this.version++
  }

  subscribe(changes: ChangeWatcher): void {
    changes.on('change', (topic, subject) => {
      if (topic === CALLER_TOPIC && (subject === null || subject === this.#store.subject)) this.invalidate()
    })
  }
}

/** Every certificate of a PEM (or one DER), each accepted by `refuse` (null) first; already stored ones are kept. */
export async function addStoredCertificates(db: Database, store: CertificateStore, body: Uint8Array, refuse: (cert: X509Certificate) => string | null): Promise<StoredCertificate[]> {
  let certs: X509Certificate[]
  try {
    certs = parseCertificates(body)
  } catch (err) {
    throw new ValidationError(`not a PEM or DER certificate: ${err instanceof Error ? err.message : 'unreadable'}`, { field: 'file' })
  }
  for (const cert of certs) {
    const why = refuse(cert)
    if (why !== null) throw new ValidationError(`${nameOf(cert.subject)} ${why}: not a ${store.what}`, { field: 'file' })
  }
  const now = Date.now()
  const added = certs.map((cert) => ({ fingerprint: fingerprintOf(cert), subject: nameOf(cert.subject), notAfter: cert.validToDate.getTime(), createdAt: now, pem: cert.toString() }))
  await db.transaction(async (tx) => {
    for (const a of added) {
      await tx.run(`INSERT INTO ${store.table} (fingerprint, pem, subject, not_after, created_at) VALUES ($1, $2, $3, $4, $5)
        ON CONFLICT (fingerprint) DO NOTHING`, [a.fingerprint, a.pem, a.subject, a.notAfter, a.createdAt])
    }
    await signalChange(tx, CALLER_TOPIC, store.subject)
  })
  return added
}

export async function listStoredCertificates(db: Executor, store: CertificateStore): Promise<StoredCertificate[]> {
  const rows = await db.all<{ fingerprint: string; pem: string; subject: string; not_after: number; created_at: number }>(
    `SELECT * FROM ${store.table} ORDER BY created_at, fingerprint`)
  return rows.map((r) => ({ fingerprint: r.fingerprint, subject: r.subject, notAfter: Number(r.not_after), createdAt: Number(r.created_at), pem: r.pem }))
}

export async function removeStoredCertificate(db: Database, store: CertificateStore, fingerprint: string): Promise<void> {
  const wanted = fingerprint.replaceAll(':', '').toLowerCase()
  await db.transaction(async (tx) => {
    const removed = await tx.run(`DELETE FROM ${store.table} WHERE fingerprint = $1`, [wanted])
    if (removed === 0) throw new NotFoundError(`no stored ${store.what} ${wanted}`, { field: 'fingerprint' })
    await signalChange(tx, CALLER_TOPIC, store.subject)
  })
}
