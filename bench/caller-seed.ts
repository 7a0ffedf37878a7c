/**
 * Seed data for the caller-verification benchmark (area B): certificate registries
 * (keystores) with one P-256 key each, numbers with KNS tokens linked to one of them, an API
 * key with scope `caller`, and PASSporTs signed for every number by its keystore's key.
 */
import { createPrivateKey, generateKeyPairSync, randomUUID, sign } from 'node:crypto'
import { Ed25519Keypair } from '@mysten/sui/keypairs/ed25519'
import { loadConfig } from '../src/config.ts'
import type { Executor } from '../src/db/engine.ts'
import { phoneCountry } from '../src/identity/phone.ts'
import { createApiKey } from '../src/keys/api-keys.ts'
import { LocalLedger } from '../src/ledger/local-ledger.ts'
import { openService } from '../src/service.ts'
import { inPool, pad } from './seed.ts'

export interface CallerSizes {
  /** Numbers with a token and a linked keystore; requests rotate over all of them. */
  numbers: number
  /** Keystores, one P-256 key each; number i is linked to keystore i mod keystores. */
  keystores: number
}

export interface CallerKeystore {
  objectId: string
  keyId: string
  /** PKCS#8 PEM, as `kns passport sign --key` reads it. */
  privateKeyPem: string
}

export interface CallerNumber {
  phone: string
  tokenId: string
  keystore: number
}

export interface CallerSeed {
  apiKey: string
  keystores: CallerKeystore[]
  numbers: CallerNumber[]
}

/** The called number of every benchmark PASSporT. */
export const CALLER_DEST = '+12125550100'

const range = (n: number) => Array.from({ length: n }, (_, i) => i)

/**
 * Seeds before the server starts: keystores and tokens through the embedded ledger's own
 * functions, the number and registry links in bulk (see below).
 */
export async function seedCaller(env: Record<string, string>, sizes: CallerSizes): Promise<CallerSeed> {
  const service = await openService(loadConfig(env), { watchChanges: false })
  try {
    const { db, ledger } = service
    if (!(ledger instanceof LocalLedger)) throw new Error('the benchmark needs LEDGER=local')
    const key = await createApiKey(db, { vendor: 'Bench Carrier', scopes: ['caller'], rate: 1_000_000 })
    const parallel = db.engine === 'sqlite' ? 1 : 8

    const keystores: CallerKeystore[] = []
    for (const i of range(sizes.keystores)) {
      const { publicKey, privateKey } = generateKeyPairSync('ec', { namedCurve: 'prime256v1' })
      const created = await ledger.keystores.create({
        name: `Bench carrier ${i}`, creator: 'kns bench', publicKey: publicKey.export({ type: 'spki', format: 'pem' }).toString(),
      })
      keystores.push({ ...created, privateKeyPem: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString() })
    }

    // Tokens through the embedded ledger (no change signal, so PostgreSQL can overlap batches).
    const owner = new Ed25519Keypair().toSuiAddress()
    const batches = range(Math.ceil(sizes.numbers / 250)).map((b) => range(Math.min(250, sizes.numbers - b * 250)))
    const tokens = (await inPool(batches, parallel, (batch) => db.transaction(async (tx) => {
      const out: string[] = []
      for (const _ of batch) out.push((await ledger.mintToken(owner, tx)).objectId)
      return out
    }))).flat()
    const numbers = tokens.map((tokenId, i): CallerNumber => ({ phone: `+1650${pad(i, 7)}`, tokenId, keystore: i % sizes.keystores }))
    // The number -> token and token -> keystore rows that linkNumber and `kns registry link`
    // write, in bulk: one transaction per row (each bumping the shared change counter) takes
    // ~40 s for 10 000 numbers on PostgreSQL. The server starts afterwards, so no cache to signal.
    const now = Date.now()
    await db.transaction(async (tx) => {
      await bulkInsert(tx, 'numbers (phone, object_id, source, country, created_at)',
        numbers.map((n) => [n.phone, n.tokenId, 'linked', phoneCountry(n.phone), now]))
      await bulkInsert(tx, 'ledger_keystore_links (token_id, keystore_id, created_at)',
        numbers.map((n) => [n.tokenId, keystores[n.keystore]!.objectId, now]))
    })
    return { apiKey: key.key, keystores, numbers }
  } finally {
    await service.close()
  }
}

async function bulkInsert(tx: Executor, into: string, rows: unknown[][]): Promise<void> {
  for (let start = 0; start < rows.length; start += 500) {
    const chunk = rows.slice(start, start + 500)
    const width = chunk[0]!.length
    const values = chunk.map((_, r) => `(${range(width).map((c) => `$${r * width + c + 1}`).join(', ')})`).join(', ')
    await tx.run(`INSERT INTO ${into} VALUES ${values}`, chunk.flat())
  }
}

/**
 * One request body per number: a PASSporT with kid, signed now by the number's keystore key.
 * The same token `signPassport` (the CLI's signer) makes, but with a prepared KeyObject:
 * signPassport parses the PEM on every call, ~0.4 ms each. CALL_MAX_AGE_S applies on the
 * server, so callers re-sign as bodies age.
 */
export function signCalls(seed: CallerSeed, nowS = Math.floor(Date.now() / 1000)): string[] {
  const signOne = callSigner(seed)
  return seed.numbers.map((n) => signOne(n, nowS))
}

/** Signs one number's request body at a time (the soak benchmark re-signs each as it ages, not all at once). */
export function callSigner(seed: CallerSeed): (n: CallerNumber, nowS: number) => string {
  const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url')
  const signers = seed.keystores.map((k) => ({
    key: createPrivateKey(k.privateKeyPem),
    header: b64({ alg: 'ES256', typ: 'passport', ppt: 'shaken', kid: k.keyId }),
  }))
  return (n, nowS) => {
    const signer = signers[n.keystore]!
    const payload = { attest: 'A', dest: { tn: [CALLER_DEST] }, iat: nowS, orig: { tn: n.phone }, origid: randomUUID() }
    const signingInput = `${signer.header}.${b64(payload)}`
    const signature = sign('sha256', Buffer.from(signingInput), { key: signer.key, dsaEncoding: 'ieee-p1363' })
    return JSON.stringify({ origTN: n.phone, destTN: CALLER_DEST, jwt: `${signingInput}.${signature.toString('base64url')}` })
  }
}
