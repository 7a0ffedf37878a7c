import { X509Certificate } from 'node:crypto'
import { readdirSync, readFileSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { signalChange, type ChangeWatcher } from '../../db/change-signal.ts'
import { CALLER_TOPIC } from '../../db/change-topics.ts'
import type { Database, Executor } from '../../db/engine.ts'
import { NotFoundError, ValidationError } from '../../errors.ts'
import { nameOf, parseCertificates } from './x509.ts'

/** The change signal's subject when the stored anchors change (every process reloads them). */
export const ANCHORS_SUBJECT = 'shaken:anchors'

export interface StoredAnchor { fingerprint: string; subject: string; notAfter: number; createdAt: number; pem: string }

/** `SHA-256 fingerprint` as X509Certificate gives it, lowercase without colons. */
export function fingerprintOf(cert: X509Certificate): string {
  return cert.fingerprint256.replaceAll(':', '').toLowerCase()
}

/**
 * STI-CA trust anchors: the certificates a SHAKEN leaf must chain to. Two sources, both read
 * by every process: the PEM file or directory named by STI_TRUST_ANCHORS (read at start), and
 * the database (`kns shaken trust add|list|remove`), reloaded when the change signal says they
 * changed. `version` moves with every change, so validations cached against the old set are
 * done again.
 */
export class TrustAnchors {
  readonly #db: Executor
  readonly #fromFile: X509Certificate[]
  #loaded: Promise<X509Certificate[]> | undefined
  version = 0

  constructor(db: Executor, path: string | undefined) {
    this.#db = db
    this.#fromFile = path === undefined ? [] : readAnchorFiles(path)
  }

  /** The anchors read from STI_TRUST_ANCHORS at start. */
  get fromFile(): readonly X509Certificate[] {
    return this.#fromFile
  }

  /** Every anchor now (file first). */
  all(): Promise<X509Certificate[]> {
    this.#loaded ??= this.#load().catch((err: unknown) => {
      this.#loaded = undefined
      throw err
    })
    return this.#loaded
  }

  async #load(): Promise<X509Certificate[]> {
    const rows = await this.#db.all<{ pem: string }>('SELECT pem FROM shaken_trust_anchors ORDER BY created_at, fingerprint')
    return [...this.#fromFile, ...rows.map((r) => new X509Certificate(r.pem))]
  }

  invalidate(): void {
    this.#loaded = undefined
    this.version++
  }

  subscribe(changes: ChangeWatcher): void {
    changes.on('change', (topic, subject) => {
      if (topic === CALLER_TOPIC && (subject === null || subject === ANCHORS_SUBJECT)) this.invalidate()
    })
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
export async function addTrustAnchors(db: Database, pem: Uint8Array): Promise<StoredAnchor[]> {
  let certs: X509Certificate[]
  try {
    certs = parseCertificates(pem)
  } catch (err) {
    throw new ValidationError(`not a PEM or DER certificate: ${err instanceof Error ? err.message : 'unreadable'}`, { field: 'file' })
  }
  for (const cert of certs) {
    if (!cert.ca) throw new ValidationError(`${nameOf(cert.subject)} is not a CA certificate (basicConstraints CA:TRUE): not a trust anchor`, { field: 'file' })
  }
  const now = Date.now()
  const added = certs.map((cert) => ({ fingerprint: fingerprintOf(cert), subject: nameOf(cert.subject), notAfter: cert.validToDate.getTime(), createdAt: now, pem: cert.toString() }))
  await db.transaction(async (tx) => {
    for (const a of added) {
      await tx.run(`INSERT INTO shaken_trust_anchors (fingerprint, pem, subject, not_after, created_at) VALUES ($1, $2, $3, $4, $5)
        ON CONFLICT (fingerprint) DO NOTHING`, [a.fingerprint, a.pem, a.subject, a.notAfter, a.createdAt])
    }
    await signalChange(tx, CALLER_TOPIC, ANCHORS_SUBJECT)
  })
  return added
}

export async function listTrustAnchors(db: Executor): Promise<StoredAnchor[]> {
  const rows = await db.all<{ fingerprint: string; pem: string; subject: string; not_after: number; created_at: number }>(
    'SELECT * FROM shaken_trust_anchors ORDER BY created_at, fingerprint')
  return rows.map((r) => ({ fingerprint: r.fingerprint, subject: r.subject, notAfter: Number(r.not_after), createdAt: Number(r.created_at), pem: r.pem }))
}

export async function removeTrustAnchor(db: Database, fingerprint: string): Promise<void> {
  const wanted = fingerprint.replaceAll(':', '').toLowerCase()
  await db.transaction(async (tx) => {
    const removed = await tx.run('DELETE FROM shaken_trust_anchors WHERE fingerprint = $1', [wanted])
    if (removed === 0) throw new NotFoundError(`no stored trust anchor ${wanted}`, { field: 'fingerprint' })
    await signalChange(tx, CALLER_TOPIC, ANCHORS_SUBJECT)
  })
}
