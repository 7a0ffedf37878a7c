import { createPrivateKey, createPublicKey, type KeyObject, type X509Certificate } from 'node:crypto'
import { signalChange, type ChangeWatcher } from '../../db/change-signal.ts'
import { CALLER_TOPIC } from '../../db/change-topics.ts'
import type { Database, Executor } from '../../db/engine.ts'
import { ConflictError, NotFoundError, ValidationError } from '../../errors.ts'
import { checkOutboundUrl, OutboundRefusedError } from '../../lib/outbound-http.ts'
import type { SealedBox } from '../../lib/sealed-box.ts'
import { Tally } from '../../lib/tally.ts'
import { missingShakenPolicy } from './certificate-policy.ts'
import { certificateFacts, nameOf, parseCertificates, type TnAuthList } from './x509.ts'

/** The change signal's subject when credentials change (every process drops its cached keys). */
export const CREDENTIALS_SUBJECT = 'shaken:credentials'
const NAME = /^[a-z0-9][a-z0-9_-]{0,63}$/

/**
 * The operator's STI-AS signing credential: a P-256 private key (stored sealed with the
 * server secret, never returned), its certificate chain (served at /shaken/certs/<name>.pem so
 * the x5u can point there), and the public x5u URL that PASSporTs signed with it name.
 */
export interface Credential {
  name: string; x5u: string; subject: string; notAfter: number; createdAt: number
  /** RFC 9795: the caller name PASSporTs signed with it carry (rcd nam); none when absent. */
  displayName?: string
}
export interface SigningCredential extends Credential {
  key: KeyObject
  chainPem: string
  /** The leaf's TNAuthList: what the credential may sign for (RFC 8226). */
  tnAuthList: TnAuthList
}

interface CredentialRow {
  name: string; key_sealed: string; chain_pem: string; x5u: string; subject: string; not_after: number; created_at: number; display_name: string | null
}

function describe(row: CredentialRow): Credential {
  return {
    name: row.name, x5u: row.x5u, subject: row.subject, notAfter: Number(row.not_after), createdAt: Number(row.created_at),
    ...(row.display_name === null ? {} : { displayName: row.display_name }),
  }
}

export interface NewCredential { name: string; keyPem: string; chainPem: string; x5u: string; displayName?: string }

/** A display name a phone can show: 1-64 characters, no control characters, not only spaces. */
const DISPLAY_NAME = /^(?=.*\S)[^\u0000-\u001f\u007f]{1,64}$/u

/**
 * `kns shaken credential add`: the key must be EC P-256 and be the leaf certificate's key; the
 * leaf must be a SHAKEN end-entity certificate (CA:FALSE, digitalSignature, a TNAuthList); the
 * x5u an https URL. A name is taken once.
 */
export async function addCredential(db: Database, box: SealedBox, input: NewCredential,
  rules: { allowPrivate: boolean; allowHttp: boolean; policy?: 'off' | 'warn' | 'enforce' } = { allowPrivate: false, allowHttp: false }): Promise<Credential> {
  if (!NAME.test(input.name)) throw new ValidationError('the name is 1-64 of a-z, 0-9, _ and -, starting with a letter or digit', { field: 'name' })
  if (input.displayName !== undefined && !DISPLAY_NAME.test(input.displayName)) {
    throw new ValidationError('the display name is 1-64 characters without control characters', { field: 'display-name' })
  }
  let key: KeyObject
  try {
    key = createPrivateKey(input.keyPem)
  } catch {
    throw new ValidationError('the key is not a PEM private key', { field: 'key' })
  }
  if (key.asymmetricKeyType !== 'ec' || key.asymmetricKeyDetails?.namedCurve !== 'prime256v1') throw new ValidationError('the key is not EC P-256 (ES256)', { field: 'key' })
  let chain: X509Certificate[]
  try {
    chain = parseCertificates(Buffer.from(input.chainPem))
  } catch {
    throw new ValidationError('the certificate file is not a PEM chain', { field: 'cert' })
  }
  const leaf = chain[0]!
  const publicDer = (k: KeyObject) => (k.type === 'private' ? createPublicKey(k) : k).export({ type: 'spki', format: 'der' })
  if (!publicDer(key).equals(publicDer(leaf.publicKey))) throw new ValidationError('the key is not the key of the first certificate of the chain', { field: 'key' })
  const facts = certificateFacts(leaf)
  if (leaf.ca || facts.keyUsage === null || !facts.keyUsage.has('digitalSignature')) throw new ValidationError('the first certificate is not a signing (end-entity, digitalSignature) certificate', { field: 'cert' })
  if (facts.tnAuthList === null || typeof facts.tnAuthList === 'string') throw new ValidationError('the first certificate has no readable TNAuthList: not a SHAKEN certificate', { field: 'cert' })
  // Verifiers enforcing ATIS-1000080 would refuse every PASSporT signed with it (STI_CERT_POLICY).
  const policyProblem = (rules.policy ?? 'enforce') === 'enforce' ? missingShakenPolicy(leaf) : null
  if (policyProblem !== null) throw new ValidationError(`${policyProblem} (STI_CERT_POLICY=enforce)`, { field: 'cert' })
  try {
    // The verifiers that fetch it apply the same rules: a URL they would refuse is no x5u.
    checkOutboundUrl(input.x5u, rules.allowPrivate, rules.allowHttp)
  } catch (err) {
    if (err instanceof OutboundRefusedError) {
      const lift = err.code === 'URL_NOT_ALLOWED' ? 'X5U_ALLOW_HTTP' : 'X5U_ALLOW_PRIVATE'
      throw new ValidationError(`x5u: ${err.message} (a server started with ${lift}=true allows it, for development)`, { field: 'x5u' })
    }
    throw err
  }
  const row: CredentialRow = {
    name: input.name, key_sealed: box.seal(key.export({ type: 'pkcs8', format: 'pem' }).toString()), chain_pem: chain.map((c) => c.toString()).join(''),
    x5u: input.x5u, subject: nameOf(leaf.subject), not_after: leaf.validToDate.getTime(), created_at: Date.now(), display_name: input.displayName ?? null,
  }
  await db.transaction(async (tx) => {
    const inserted = await tx.run(`INSERT INTO shaken_credentials (name, key_sealed, chain_pem, x5u, subject, not_after, created_at, display_name)
      VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (name) DO NOTHING`,
    [row.name, row.key_sealed, row.chain_pem, row.x5u, row.subject, row.not_after, row.created_at, row.display_name])
    if (inserted === 0) throw new ConflictError(`a credential named ${row.name} exists: remove it first`, { field: 'name' })
    await signalChange(tx, CALLER_TOPIC, CREDENTIALS_SUBJECT)
  })
  return describe(row)
}

export async function listCredentials(db: Executor): Promise<Credential[]> {
  return (await db.all<CredentialRow>('SELECT * FROM shaken_credentials ORDER BY name')).map(describe)
}

export async function removeCredential(db: Database, name: string): Promise<void> {
  await db.transaction(async (tx) => {
    if (await tx.run('DELETE FROM shaken_credentials WHERE name = $1', [name]) === 0) throw new NotFoundError(`no credential ${name}`, { field: 'name' })
    await signalChange(tx, CALLER_TOPIC, CREDENTIALS_SUBJECT)
  })
}

/**
 * The credentials with their keys opened, cached per process (signing is a hot path), dropped
 * when the change signal says they changed.
 */
export class Credentials {
  /**
   * PASSporTs this process signed, by credential (its name: operator-made, a handful) and ppt
   * (shaken or div), for /metrics; each credential's start at 0 once the credentials are read.
   */
  readonly signatures = new Tally<'credential' | 'ppt'>(['credential', 'ppt'])
  readonly #db: Executor
  readonly #box: () => SealedBox
  #loaded: Promise<Map<string, SigningCredential>> | undefined

  constructor(db: Executor, box: () => SealedBox) {
    this.#db = db
    this.#box = box
  }

  all(): Promise<Map<string, SigningCredential>> {
    this.#loaded ??= this.#load().catch((err: unknown) => {
      this.#loaded = undefined
      throw err
    })
    return this.#loaded
  }

  /** A PASSporT was signed with `credential`. */
  signed(credential: Credential, ppt: 'shaken' | 'div'): void {
    this.signatures.add({ credential: credential.name, ppt })
  }

  async #load(): Promise<Map<string, SigningCredential>> {
    const rows = await this.#db.all<CredentialRow>('SELECT * FROM shaken_credentials ORDER BY name')
    for (const row of rows) for (const ppt of ['shaken', 'div']) this.signatures.add({ credential: row.name, ppt }, 0)
    const box = rows.length === 0 ? null : this.#box()
    return new Map(rows.map((row) => [row.name, {
      ...describe(row), chainPem: row.chain_pem, key: createPrivateKey(box!.open(row.key_sealed)),
      tnAuthList: certificateFacts(parseCertificates(Buffer.from(row.chain_pem))[0]!).tnAuthList as TnAuthList,
    }]))
  }

  invalidate(): void {
    this.#loaded = undefined
  }

  subscribe(changes: ChangeWatcher): void {
    changes.on('change', (topic, subject) => {
      if (topic === CALLER_TOPIC && (subject === null || subject === CREDENTIALS_SUBJECT)) this.invalidate()
    })
  }
}
