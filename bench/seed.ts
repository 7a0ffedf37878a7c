/**
 * Fresh databases and seed data for the benchmark: one API key with a high rate, numbers
 * whose tokens an Ed25519 keypair owns, registered users, and pending `sign` approvals; and
 * the area A endpoints' requests made from them.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { randomBytes } from 'node:crypto'
import pg from 'pg'
import { Ed25519Keypair } from '@mysten/sui/keypairs/ed25519'
import { loadConfig } from '../src/config.ts'
import { createApproval, type ApprovalRequest } from '../src/approvals/create-approval.ts'
import { registerOrLogin } from '../src/identity/register.ts'
import { linkNumber } from '../src/identity/numbers.ts'
import { createApiKey } from '../src/keys/api-keys.ts'
import { LocalLedger } from '../src/ledger/local-ledger.ts'
import { openService } from '../src/service.ts'
import type { Endpoint } from './bench-server.ts'

export type Engine = 'sqlite' | 'postgres'

export interface BenchDatabase {
  engine: Engine
  /** Environment for both the seeding process and the server child. */
  env: Record<string, string>
  cleanup(): Promise<void>
}

/** Same for seeding and serving, so signMessage (which names the service) matches. */
const PUBLIC_BASE_URL = 'http://bench.kns.local'

function baseEnv(dataDir: string): Record<string, string> {
  return {
    DATA_DIR: dataDir,
    LOG_LEVEL: 'silent',
    PUBLIC_RATE_LIMIT: '0',
    // The CAMARA clients' rate (src/http/camara/auth.ts), as high as the bench API key's.
    DEFAULT_KEY_RATE: '1000000',
    PUBLIC_BASE_URL,
    APPROVAL_TTL_S: '3600',
    LEDGER: 'local',
  }
}

export function sqliteDatabase(): BenchDatabase {
  const dataDir = mkdtempSync(join(tmpdir(), 'kns-bench-'))
  return {
    engine: 'sqlite',
    env: baseEnv(dataDir),
    async cleanup() { rmSync(dataDir, { recursive: true, force: true }) },
  }
}

/** A fresh schema on `baseUrl`, selected through search_path; throws when unreachable. */
export async function postgresDatabase(baseUrl: string): Promise<BenchDatabase> {
  const schema = `bench_${randomBytes(6).toString('hex')}`
  const admin = new pg.Client({ connectionString: baseUrl, connectionTimeoutMillis: 3000 })
  admin.on('error', () => {})
  try {
    await admin.connect()
    await admin.query(`CREATE SCHEMA ${schema}`)
  } finally {
    await admin.end().catch(() => {})
  }
  const url = new URL(baseUrl)
  url.searchParams.set('options', `-c search_path=${schema}`)
  const dataDir = mkdtempSync(join(tmpdir(), 'kns-bench-'))
  return {
    engine: 'postgres',
    env: { ...baseEnv(dataDir), DATABASE_URL: url.toString() },
    async cleanup() {
      const c = new pg.Client({ connectionString: baseUrl })
      await c.connect()
      await c.query(`DROP SCHEMA ${schema} CASCADE`)
      await c.end()
      rmSync(dataDir, { recursive: true, force: true })
    },
  }
}

/**
 * `fn` on a fresh database of each engine `engines` names (sqlite first), cleaned up after;
 * a PostgreSQL that cannot be reached is skipped, said through `skipped`.
 */
export async function onEngines<T>(engines: string[], pgUrl: string, skipped: (note: string) => void, fn: (db: BenchDatabase) => Promise<T>): Promise<T[]> {
  const results: T[] = []
  const open = { sqlite: async () => sqliteDatabase(), postgres: async () => postgresDatabase(pgUrl) }
  for (const [engine, opener] of Object.entries(open)) {
    if (!engines.includes(engine)) continue
    let db: BenchDatabase
    try {
      db = await opener()
    } catch (err) {
      skipped(`postgres: skipped, ${new URL(pgUrl).host} unreachable (${(err as Error).message})`)
      continue
    }
    try {
      results.push(await fn(db))
    } finally {
      await db.cleanup()
    }
  }
  return results
}

export interface SeedSizes {
  /** Numbers linked to tokens that `keypair` owns (targets of approval-phone). */
  ownedNumbers: number
  /** Registered users (the "log in again" half of register-user-login). */
  users: number
  /** Pending approvals read by transaction_details. */
  detailApprovals: number
  /** Pending approvals to be signed for verify_signature. */
  signApprovals: number
}

export interface Seed {
  apiKey: string
  keypair: Ed25519Keypair
  ownedPhones: string[]
  users: { email: string; phoneNumber: string }[]
  detailRefs: string[]
  signRefs: string[]
}

/** Runs `fn` over `items` with at most `limit` in flight (PostgreSQL round trips overlap). */
export async function inPool<T, R>(items: readonly T[], limit: number, fn: (item: T, index: number) => Promise<R>): Promise<R[]> {
  const out = new Array<R>(items.length)
  let next = 0
  const worker = async () => {
    while (next < items.length) {
      const i = next++
      out[i] = await fn(items[i]!, i)
    }
  }
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker))
  return out
}

const range = (n: number) => Array.from({ length: n }, (_, i) => i)
export const pad = (n: number, width: number) => String(n).padStart(width, '0')

export function approvalBody(phoneNumber: string, referenceNumber: string): ApprovalRequest {
  return {
    title: 'Confirm payment',
    message: 'Pay 42.00 EUR to Example Shop\nOrder 12345',
    successRedirectUrl: 'https://shop.example/ok',
    cancelRedirectUrl: 'https://shop.example/cancel',
    referenceNumber,
    method: 'sign',
    phoneNumber,
  }
}

/** Seeds through the service's own functions, in this process, before the server starts. */
export async function seed(env: Record<string, string>, sizes: SeedSizes): Promise<Seed> {
  const config = loadConfig(env)
  const service = await openService(config)
  try {
    const { db, ledger } = service
    if (!(ledger instanceof LocalLedger)) throw new Error('the benchmark needs LEDGER=local')
    const key = await createApiKey(db, { vendor: 'Bench Bank', scopes: ['approvals'], rate: 1_000_000 })
    // node:sqlite is synchronous, so overlapping buys nothing there (and transactions queue).
    const parallel = db.engine === 'sqlite' ? 1 : 8
    const keypair = new Ed25519Keypair()
    const owner = keypair.toSuiAddress()

    const ownedPhones = range(sizes.ownedNumbers).map((i) => `+1415${pad(i, 7)}`)
    await inPool(ownedPhones, parallel, async (phone) => {
      const token = await ledger.mintToken(owner)
      await linkNumber(db, phone, token.objectId, 'linked')
    })

    const users = range(sizes.users).map((i) => ({ email: `user${i}@bench.example`, phoneNumber: `+4477${pad(i, 8)}` }))
    const deps = { db, ledger, secret: service.secret, zkLoginIssuer: config.zkLoginIssuer, zkLoginClientId: config.zkLoginClientId }
    await inPool(users, parallel, (user) => registerOrLogin(deps, user))

    const createDeps = { db, ledger, phoneLinks: service.phoneLinks, publicBaseUrl: config.publicBaseUrl, approvalTtlS: config.approvalTtlS, approvalCommit: config.approvalCommit }
    const create = (prefix: string, n: number) => inPool(range(n), parallel, async (i) =>
      (await createApproval(createDeps, key, approvalBody(ownedPhones[i % ownedPhones.length]!, `${prefix}-${i}`))).approvalNumber)
    const detailRefs = await create('seed-details', sizes.detailApprovals)
    const signRefs = await create('seed-sign', sizes.signApprovals)
    return { apiKey: key.key, keypair, ownedPhones, users, detailRefs, signRefs }
  } finally {
    await service.close()
  }
}

/** Signatures over each approval's signMessage, as a wallet gets it from transaction_details of the running server. */
export function walletSignatures(port: number, keypair: Ed25519Keypair, refs: string[]): Promise<{ approvalNumber: string; signature: string }[]> {
  return inPool(refs, 8, async (approvalNumber) => {
    const response = await fetch(`http://127.0.0.1:${port}/numsys/transaction_details?ref=${approvalNumber}`)
    if (!response.ok) throw new Error(`transaction_details ${approvalNumber}: ${response.status} ${await response.text()}`)
    const { signMessage } = await response.json() as { signMessage: string }
    const { signature } = await keypair.signPersonalMessage(new TextEncoder().encode(signMessage))
    return { approvalNumber, signature }
  })
}

const JSON_HEADERS = { 'content-type': 'application/json' }

/**
 * The area A endpoints, with requests made from the seed (`signed`: wallet signatures over signRefs' messages).
 * Only the seed's plain data, so the soak benchmark's load process can build them from what it is sent.
 */
export function areaAEndpoints(engine: Engine, data: Pick<Seed, 'apiKey' | 'ownedPhones' | 'users' | 'detailRefs'>,
  signed: { approvalNumber: string; signature: string }[]): Endpoint[] {
  let registrations = 0
  let newNumbers = 0
  let references = 0
  let reads = 0
  let verifications = 0
  return [{
    name: 'POST /numsys/register-user-login', method: 'POST', headers: JSON_HEADERS,
    // Alternately a number never seen before (mints a token) and a registered one (login).
    next() {
      const i = registrations++
      const user = i % 2 === 0
        ? { email: `new${newNumbers}@bench.example`, phoneNumber: `+49151${pad(newNumbers++, 8)}` }
        : data.users[(i >> 1) % data.users.length]!
      return { path: '/numsys/register-user-login', body: JSON.stringify(user) }
    },
    ok: (body) => body.includes('"success":true'),
  }, {
    name: 'POST /numsys/approval-phone', method: 'POST', headers: { ...JSON_HEADERS, 'x-api-key': data.apiKey },
    next() {
      const i = references++
      const body = approvalBody(data.ownedPhones[i % data.ownedPhones.length]!, `bench-${engine}-${i}`)
      return { path: '/numsys/approval-phone', body: JSON.stringify(body) }
    },
    ok: (body) => body.includes('"approvalNumber"'),
  }, {
    name: 'GET /numsys/transaction_details', method: 'GET', headers: {},
    next: () => ({ path: `/numsys/transaction_details?ref=${data.detailRefs[reads++ % data.detailRefs.length]}` }),
    ok: (body) => body.includes('"status":"pending"'),
  }, {
    name: 'POST /numsys/verify_signature', method: 'POST', headers: JSON_HEADERS,
    // The first round approves each approval; later rounds are idempotent successes.
    next: () => ({ path: '/numsys/verify_signature', body: JSON.stringify(signed[verifications++ % signed.length]) }),
    ok: (body) => body.includes('"success":true'),
  }]
}
