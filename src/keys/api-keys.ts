import { createHash, randomBytes, timingSafeEqual } from 'node:crypto'
import type { Executor } from '../db/engine.ts'
import { NotFoundError, UnauthorizedError, ValidationError } from '../errors.ts'
import { SingleFlight } from '../lib/single-flight.ts'

/**
 * What a key may do: `approvals` (the vendor's approval requests), `caller` (call verification),
 * `signing` (the STI-AS), and operator scopes kept apart so that one cannot reach
 * another's data: `stats` (statistics uploads), `webhooks` (subscriptions to any vendor's
 * decisions, their deliveries and replays), `oidc` (the login provider's clients), `sim-changes`
 * (the SIM and device changes the operator reports, what SIM Swap answers from). The first three
 * were one `admin` scope until migration 14, which left existing `admin` keys with `stats` only.
 */
export const SCOPES = ['approvals', 'caller', 'signing', 'stats', 'webhooks', 'oidc', 'sim-changes'] as const
export type Scope = (typeof SCOPES)[number]
export const DEFAULT_SCOPES: Scope[] = ['approvals', 'caller']

export type Attestation = 'A' | 'B' | 'C'

/**
 * What a `signing` key may sign (RFC 8224 6.1: an authentication service signs only for what
 * it is authoritative for): the credentials it may use (by name), the attestation levels it
 * may claim, and, optionally, the numbers it may sign for (E.164, or a prefix ending in `*`: the
 * numbers that extend it by at least one digit),
 * on top of what each credential's TNAuthList covers. null: bound to nothing, signs nothing.
 */
export interface SigningBinding {
  credentials: string[]
  attest: Attestation[]
  /** null: any number the credential covers. */
  numbers: string[] | null
}

export interface ApiKey {
  id: string
  vendor: string
  scopes: Scope[]
  signing: SigningBinding | null
  /** Requests per second (token bucket refill rate). */
  rate: number
  createdAt: number
  revokedAt: number | null
}

interface ApiKeyRow {
  id: string; secret_hash: string; vendor: string; scopes: string; rate: number; created_at: number; revoked_at: number | null
  signing_binding: string | null
}

/** `kns_<16 hex id>_<43 base64url secret>`: the id finds the row, the secret is compared in constant time. */
const KEY_FORMAT = /^kns_([0-9a-f]{16})_([A-Za-z0-9_-]{43})$/
const VENDOR_FORMAT = /^[\p{L}\p{N}][\p{L}\p{N} .,&'()_-]{0,63}$/u
/** How long a looked-up key may be reused: bounds how late a revocation takes effect. */
const CACHE_TTL_MS = 500
/**
 * A key in use is read again in the background when its entry has less than this left, so
 * requests never wait for the database on expiry (on PostgreSQL every request in flight
 * would otherwise query at once, twice a second, which showed in the p99).
 */
const REFRESH_AHEAD_MS = 200

function hashSecret(secret: string): Buffer {
  return createHash('sha256').update(secret).digest()
}

function fromRow(row: ApiKeyRow): ApiKey {
  return {
    id: row.id,
    vendor: row.vendor,
    scopes: row.scopes.split(',').filter(Boolean) as Scope[],
    signing: row.signing_binding === null ? null : JSON.parse(row.signing_binding) as SigningBinding,
    rate: Number(row.rate),
    createdAt: Number(row.created_at),
    revokedAt: row.revoked_at === null ? null : Number(row.revoked_at),
  }
}

export function parseScopes(raw: string): Scope[] {
  const scopes = [...new Set(raw.split(',').map((s) => s.trim()).filter(Boolean))]
  if (scopes.length === 0) throw new ValidationError('at least one scope is required', { field: 'scopes' })
  for (const scope of scopes) {
    if (scope === 'admin') {
      throw new ValidationError('the admin scope was split: stats (statistics uploads), webhooks (webhook subscriptions, deliveries, replays), ' +
        'oidc (the login provider\'s clients)', { field: 'scopes' })
    }
    if (!(SCOPES as readonly string[]).includes(scope)) {
      throw new ValidationError(`unknown scope "${scope}" (allowed: ${SCOPES.join(', ')})`, { field: 'scopes' })
    }
  }
  return scopes as Scope[]
}

const CREDENTIAL_NAME = /^[a-z0-9][a-z0-9_-]{0,63}$/
/** An E.164 number (at most 15 digits), or a prefix of at most 14 digits and `*` (a 15-digit prefix has no number extending it). */
const NUMBER_PATTERN = /^\+[1-9](?:\d{0,14}|\d{0,13}\*)$/

/** `--credentials a,b --attest A,B --numbers +1202555*,+14155550100` as the CLI gives them. */
export function parseSigningBinding(raw: { credentials: string; attest?: string; numbers?: string }): SigningBinding {
  const list = (value: string) => [...new Set(value.split(',').map((s) => s.trim()).filter(Boolean))]
  const credentials = list(raw.credentials)
  if (credentials.length === 0 || credentials.length > 32) throw new ValidationError('name 1-32 signing credentials (kns shaken credential list)', { field: 'credentials' })
  const bad = credentials.find((c) => !CREDENTIAL_NAME.test(c))
  if (bad !== undefined) throw new ValidationError(`${JSON.stringify(bad)} is not a credential name`, { field: 'credentials' })
  const attest = list(raw.attest ?? 'A,B,C')
  if (attest.length === 0 || !attest.every((a) => a === 'A' || a === 'B' || a === 'C')) throw new ValidationError('--attest lists A, B and/or C', { field: 'attest' })
  let numbers: string[] | null = null
  if (raw.numbers !== undefined) {
    numbers = list(raw.numbers)
    if (numbers.length === 0 || numbers.length > 1000) throw new ValidationError('--numbers lists 1-1000 numbers or prefixes', { field: 'numbers' })
    const wrong = numbers.find((n) => !NUMBER_PATTERN.test(n))
    if (wrong !== undefined) throw new ValidationError(`${JSON.stringify(wrong)} is not an E.164 number or a prefix ending in * (+1202555*)`, { field: 'numbers' })
  }
  return { credentials, attest: (['A', 'B', 'C'] as const).filter((a) => attest.includes(a)), numbers }
}

/** Whether a binding lets its key sign for `tn` (E.164 digits without +). */
export function bindingCoversNumber(binding: SigningBinding, tn: string): boolean {
  if (binding.numbers === null) return true
  const e164 = `+${tn}`
  return binding.numbers.some((n) => (n.endsWith('*') ? extendsPrefix(e164, n.slice(0, -1)) : e164 === n))
}

/** `+1202555*` covers the numbers that begin with +1202555 and have at least one digit more: not +1202555 itself. */
function extendsPrefix(e164: string, prefix: string): boolean {
  return e164.length > prefix.length && e164.startsWith(prefix)
}

/** `kns api-key bind`: a key's signing binding replaced (a key made before bindings existed signs nothing until bound). */
export async function bindSigningKey(db: Executor, id: string, binding: SigningBinding): Promise<ApiKey> {
  const row = await db.get<ApiKeyRow>('SELECT * FROM api_keys WHERE id = $1', [id])
  if (row === undefined) throw new NotFoundError(`no API key with id ${id}`, { field: 'id' })
  if (!row.scopes.split(',').includes('signing')) throw new ValidationError(`API key ${id} has no signing scope`, { field: 'id' })
  await db.run('UPDATE api_keys SET signing_binding = $1 WHERE id = $2', [JSON.stringify(binding), id])
  return fromRow({ ...row, signing_binding: JSON.stringify(binding) })
}

export async function createApiKey(db: Executor, input: { vendor: string; scopes?: Scope[]; rate: number; signing?: SigningBinding }): Promise<ApiKey & { key: string }> {
  const vendor = input.vendor.trim()
  if (!VENDOR_FORMAT.test(vendor)) {
    throw new ValidationError('vendor must be 1-64 letters, digits, spaces or .,&\'()_- and start with a letter or digit', { field: 'vendor' })
  }
  if (!Number.isInteger(input.rate) || input.rate < 1 || input.rate > 1_000_000) {
    throw new ValidationError('rate must be a whole number of requests per second between 1 and 1000000', { field: 'rate' })
  }
  const scopes = input.scopes ?? DEFAULT_SCOPES
  if (input.signing !== undefined && !scopes.includes('signing')) throw new ValidationError('--credentials binds a signing key: add the signing scope', { field: 'credentials' })
  const signing = input.signing ?? null
  const id = randomBytes(8).toString('hex')
  const secret = randomBytes(32).toString('base64url')
  const createdAt = Date.now()
  await db.run('INSERT INTO api_keys (id, secret_hash, vendor, scopes, rate, created_at, signing_binding) VALUES ($1, $2, $3, $4, $5, $6, $7)',
    [id, hashSecret(secret).toString('hex'), vendor, scopes.join(','), input.rate, createdAt, signing === null ? null : JSON.stringify(signing)])
  return { id, key: `kns_${id}_${secret}`, vendor, scopes, signing, rate: input.rate, createdAt, revokedAt: null }
}

/** One key by its id (not its secret): what an operator names in settings (SIP_SIGNING_KEY). */
export async function findApiKey(db: Executor, id: string): Promise<ApiKey | null> {
  const row = await db.get<ApiKeyRow>('SELECT * FROM api_keys WHERE id = $1', [id])
  return row === undefined ? null : fromRow(row)
}

export async function listApiKeys(db: Executor): Promise<ApiKey[]> {
  const rows = await db.all<ApiKeyRow>('SELECT * FROM api_keys ORDER BY created_at, id')
  return rows.map(fromRow)
}

export async function revokeApiKey(db: Executor, id: string): Promise<ApiKey> {
  await db.run('UPDATE api_keys SET revoked_at = $1 WHERE id = $2 AND revoked_at IS NULL', [Date.now(), id])
  const row = await db.get<ApiKeyRow>('SELECT * FROM api_keys WHERE id = $1', [id])
  if (row === undefined) throw new NotFoundError(`no API key with id ${id}`, { field: 'id' })
  return fromRow(row)
}

export async function countApiKeys(db: Executor): Promise<number> {
  const row = await db.get<{ n: number }>('SELECT COUNT(*) AS n FROM api_keys')
  return Number(row?.n ?? 0)
}

/**
 * Resolves `x-api-key` values to keys. Rows are cached for CACHE_TTL_MS so the hot path
 * rarely touches the database, yet a revocation (by any process, through the CLI too)
 * takes effect within that bound.
 */
export class ApiKeyAuthenticator {
  readonly #db: Executor
  readonly #cache = new Map<string, { row: ApiKeyRow | undefined; until: number }>()
  readonly #reading = new SingleFlight<string, ApiKeyRow | undefined>()
  /** Presented key -> the key verified against a cached row: no re-hash while that row stays cached. */
  readonly #verified = new Map<string, { key: ApiKey; id: string; row: ApiKeyRow }>()

  constructor(db: Executor) {
    this.#db = db
  }

  async authenticate(presented: string | undefined): Promise<ApiKey> {
    if (presented === undefined || presented === '') throw new UnauthorizedError('missing API key: send it in the x-api-key header')
    const known = this.#verified.get(presented)
    // Still the row it was verified against (a re-read replaces the row object), and fresh.
    if (known !== undefined && this.#fresh(known.id)?.row === known.row) return known.key
    const match = KEY_FORMAT.exec(presented)
    if (match === null) throw new UnauthorizedError('invalid API key')
    const [, id, secret] = match as unknown as [string, string, string]
    const row = await this.#lookup(id)
    // Hash even when the id is unknown, so timing does not tell which ids exist.
    const expected = row === undefined ? Buffer.alloc(32) : Buffer.from(row.secret_hash, 'hex')
    const matches = timingSafeEqual(hashSecret(secret), expected)
    if (row === undefined || !matches) throw new UnauthorizedError('invalid API key')
    if (row.revoked_at !== null) throw new UnauthorizedError('API key revoked')
    const key = fromRow(row)
    if (this.#verified.size > 10_000) this.#verified.clear()
    this.#verified.set(presented, { key, id, row })
    return key
  }

  /**
   * The id of the key `presented` was verified as, while that key's last-read row still has
   * the secret it was verified against and is not revoked; null for anything else (a value
   * never verified, a forged one). Synchronous and without hashing: for admission control,
   * which must tell clients apart before a request is authenticated. Only values that once
   * passed authenticate() are ever remembered, so guessed keys cannot fill the cache.
   */
  verifiedId(presented: string): string | null {
    const known = this.#verified.get(presented)
    if (known === undefined) return null
    const row = this.#cache.get(known.id)?.row
    return row !== undefined && row.secret_hash === known.row.secret_hash && row.revoked_at === null ? known.id : null
  }

  async #lookup(id: string): Promise<ApiKeyRow | undefined> {
    const entry = this.#fresh(id)
    return entry !== undefined ? entry.row : this.#read(id)
  }

  /** The cached entry of `id` while fresh, re-read in the background ahead of its expiry; undefined once expired. */
  #fresh(id: string): { row: ApiKeyRow | undefined } | undefined {
    const entry = this.#cache.get(id)
    const now = Date.now()
    if (entry === undefined || entry.until <= now) return undefined
    // A failed background read changes nothing: the entry still expires on time.
    if (entry.until - now < REFRESH_AHEAD_MS) this.#read(id).catch(() => {})
    return entry
  }

  /** One read per key at a time; concurrent callers share it. */
  #read(id: string): Promise<ApiKeyRow | undefined> {
    return this.#reading.run(id, async () => {
      const startedAt = Date.now()
      const row = await this.#db.get<ApiKeyRow>('SELECT * FROM api_keys WHERE id = $1', [id])
      if (this.#cache.size > 10_000) this.#cache.clear()
      // From when the read started: the row may have changed since.
      this.#cache.set(id, { row, until: startedAt + CACHE_TTL_MS })
      return row
    })
  }
}
