/**
 * Helpers for the caller-verification tests (test/caller/): signing keys, PASSporTs signed
 * independently of src/ (node:crypto by hand, `jose`, the `openssl` command), numbers with
 * linked keystores on the embedded ledger, and assertions on the verification verdicts.
 */
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { createHash, generateKeyPairSync, randomBytes, randomInt, randomUUID, sign, type KeyObject } from 'node:crypto'
import { join } from 'node:path'
import type { LightMyRequestResponse } from 'fastify'
import { importPKCS8, SignJWT, type JWTHeaderParameters } from 'jose'
import { startHarness, type Harness } from '../helpers.ts'
import { linkNumber } from '../../src/identity/numbers.ts'
import { LocalLedger } from '../../src/ledger/local-ledger.ts'

export type Response = LightMyRequestResponse

/** The pipeline's steps, in order (src/caller/verify-call.ts). */
export const STEPS = ['check_jws_format', 'check_header', 'check_claims', 'resolve_keys', 'verify_signature'] as const
export type StepName = typeof STEPS[number]

export const nowS = (): number => Math.floor(Date.now() / 1000)
export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

export function randomPhone(): string {
  return `+4420${String(randomInt(0, 100_000_000)).padStart(8, '0')}`
}

export function randomObjectId(): string {
  return `0x${randomBytes(32).toString('hex')}`
}

export interface Signer {
  privateKey: KeyObject
  privatePem: string
  publicPem: string
  /** Base64 body of the SPKI PEM (header, footer and white space removed). */
  publicBody: string
  /** The domain.md convention, computed here independently of src/caller/keys.ts. */
  keyId: string
}

export function pemBodyOf(pem: string): string {
  return pem.replace(/-----[A-Z ]+-----/g, '').replace(/\s+/g, '')
}

export function conventionalKeyId(pem: string): string {
  return createHash('sha256').update(pemBodyOf(pem)).digest('hex').slice(0, 32)
}

/** A P-256 key pair (ES256). */
export function newSigner(): Signer {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' })
  const publicPem = publicKey.export({ type: 'spki', format: 'pem' }).toString()
  return {
    privateKey,
    privatePem: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
    publicPem,
    publicBody: pemBodyOf(publicPem),
    keyId: conventionalKeyId(publicPem),
  }
}

export const b64json = (value: unknown): string => Buffer.from(JSON.stringify(value)).toString('base64url')

/** A SHAKEN PASSporT payload for orig -> dest, fresh, with attestation A. */
export function claims(orig: string, dest: string, overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return { attest: 'A', dest: { tn: [dest] }, iat: nowS(), orig: { tn: orig }, origid: randomUUID(), ...overrides }
}

export function shakenHeader(kid: string | undefined, overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return { alg: 'ES256', typ: 'passport', ppt: 'shaken', ...(kid === undefined ? {} : { kid }), ...overrides }
}

/** Signs any header and payload with ES256 by hand (node:crypto, JOSE r||s form). */
export function signRaw(header: unknown, payload: unknown, privateKey: KeyObject): string {
  const input = `${b64json(header)}.${b64json(payload)}`
  const signature = sign('sha256', Buffer.from(input), { key: privateKey, dsaEncoding: 'ieee-p1363' })
  return `${input}.${signature.toString('base64url')}`
}

/** Same, DER-encoded signature (what `openssl dgst -sign` and Java's default produce). */
export function signRawDer(header: unknown, payload: unknown, privateKey: KeyObject): string {
  const input = `${b64json(header)}.${b64json(payload)}`
  const signature = sign('sha256', Buffer.from(input), { key: privateKey, dsaEncoding: 'der' })
  return `${input}.${signature.toString('base64url')}`
}

/** A PASSporT signed by `jose`, an independent JOSE implementation. */
export async function joseSign(signer: Signer, payload: Record<string, unknown>, header: Partial<JWTHeaderParameters> = {}): Promise<string> {
  const key = await importPKCS8(signer.privatePem, 'ES256')
  return new SignJWT(payload).setProtectedHeader({ alg: 'ES256', kid: signer.keyId, typ: 'passport', ppt: 'shaken', ...header }).sign(key)
}

/** ECDSA-Sig-Value (DER SEQUENCE of two INTEGERs) -> 64-byte r||s. */
export function derToJose(der: Buffer): Buffer {
  let offset = 0
  const expect = (tag: number) => {
    assert.equal(der[offset], tag, `DER tag ${tag} at ${offset}`)
    offset++
    let length = der[offset++]!
    if (length & 0x80) {
      const bytes = length & 0x7f
      length = 0
      for (let i = 0; i < bytes; i++) length = (length << 8) | der[offset++]!
    }
    return length
  }
  expect(0x30)
  const integer = () => {
    const length = expect(0x02)
    let value = der.subarray(offset, offset + length)
    offset += length
    while (value.length > 32 && value[0] === 0) value = value.subarray(1)
    assert.ok(value.length <= 32, 'INTEGER longer than 32 bytes')
    return Buffer.concat([Buffer.alloc(32 - value.length), value])
  }
  const r = integer()
  const s = integer()
  assert.equal(offset, der.length, 'trailing bytes after the DER signature')
  return Buffer.concat([r, s])
}

export function openssl(args: string[], input?: string | Buffer): Buffer {
  const result = spawnSync('openssl', args, { input, maxBuffer: 1 << 20 })
  assert.equal(result.status, 0, `openssl ${args.join(' ')}: ${result.stderr?.toString()}`)
  return result.stdout
}

/** A P-256 key pair made by the openssl command, in files under `dir`. */
export function opensslKeyPair(dir: string, name: string): { keyPath: string; publicPem: string; keyId: string } {
  const keyPath = join(dir, `${name}.key.pem`)
  openssl(['genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256', '-out', keyPath])
  const publicPem = openssl(['pkey', '-in', keyPath, '-pubout']).toString()
  return { keyPath, publicPem, keyId: conventionalKeyId(publicPem) }
}

/** `header.payload` signed by `openssl dgst -sha256 -sign`: the DER signature as openssl gives it. */
export function opensslSign(keyPath: string, header: unknown, payload: unknown): { input: string; der: Buffer } {
  const input = `${b64json(header)}.${b64json(payload)}`
  return { input, der: openssl(['dgst', '-sha256', '-sign', keyPath], input) }
}

export function localLedger(h: Harness | { service: Harness['service'] }): LocalLedger {
  assert.ok(h.service.ledger instanceof LocalLedger, 'these tests run on the embedded ledger')
  return h.service.ledger
}

export interface CallerNumber {
  phone: string
  tokenId: string
  keystoreIds: string[]
  /** signers[i] is the (first) key of keystoreIds[i]. */
  signers: Signer[]
}

/**
 * A fresh number with a token and `keystores` linked keystores (default 1), each holding one
 * fresh key under the conventional key ID. Links are made in order, a few ms apart, so the
 * link order (created_at) is the array order.
 */
export async function callerNumber(h: { service: Harness['service'] }, options: { keystores?: number; phone?: string } = {}): Promise<CallerNumber> {
  const ledger = localLedger(h)
  const token = await ledger.mintToken(randomObjectId())
  const phone = options.phone ?? randomPhone()
  await linkNumber(h.service.db, phone, token.objectId, 'linked')
  const keystoreIds: string[] = []
  const signers: Signer[] = []
  for (let i = 0; i < (options.keystores ?? 1); i++) {
    const signer = newSigner()
    const { objectId } = await ledger.keystores.create({ name: `Carrier ${i}`, creator: randomObjectId(), publicKey: signer.publicPem })
    if (i > 0) await sleep(3)
    await ledger.keystores.link(token.objectId, objectId)
    keystoreIds.push(objectId)
    signers.push(signer)
  }
  return { phone, tokenId: token.objectId, keystoreIds, signers }
}

export interface CallBody { origTN: string; destTN: string; jwt: string; debug?: boolean }

export function verifyCall(h: Harness, key: string | undefined, body: unknown): Promise<Response> {
  return h.app.inject({
    method: 'POST', url: '/numsys/call-signature-verification', payload: body as object,
    headers: key === undefined ? {} : { 'x-api-key': key },
  })
}

export interface Debug { reason?: string; steps: { name: string; ok: boolean; detail?: string }[] }

/** No key material in a debug answer: no PEM armour, no public key body (or a long slice of one). */
export function assertNoKeyMaterial(text: string, signers: Signer[] = []): void {
  assert.doesNotMatch(text, /BEGIN|PUBLIC KEY|PRIVATE KEY/)
  for (const s of signers) {
    for (let i = 0; i + 24 <= s.publicBody.length; i += 12) {
      assert.ok(!text.includes(s.publicBody.slice(i, i + 24)), 'a slice of a public key body leaked')
    }
  }
  // A base64 run long enough to be a key (an SPKI P-256 body is 124 characters).
  assert.doesNotMatch(text, /[A-Za-z0-9+/]{80,}/)
}

/**
 * A successful answer of the ledger path, without its extensions: `attestation` (what the
 * PASSporT claims) and `trust: 'ledger'` are checked to be there and set aside.
 */
export function ledgerVerdict(body: unknown): Record<string, unknown> {
  const { attestation, trust, verstat, sipReason, ...rest } = body as Record<string, unknown>
  if (rest.success === true) {
    assert.ok(attestation === 'A' || attestation === 'B' || attestation === 'C', `attestation ${String(attestation)}`)
    assert.equal(trust, 'ledger')
    assert.equal(verstat, 'TN-Validation-Passed')
    assert.equal(sipReason, undefined)
  } else {
    assert.ok(verstat === 'TN-Validation-Failed' || verstat === 'No-TN-Validation', `verstat ${String(verstat)}`)
    assert.match(String(sipReason), /^(403 Stale Date|436 Bad Identity Info|437 Unsupported Credential|438 Invalid Identity Header)$/)
  }
  return rest
}

/** success: true, plain and with debug (every step ok, no reason). */
export async function expectVerified(h: Harness, key: string, body: CallBody, signers: Signer[] = []): Promise<Debug> {
  const plain = await verifyCall(h, key, { ...body, debug: undefined })
  assert.equal(plain.statusCode, 200, plain.body)
  assert.deepEqual(ledgerVerdict(plain.json()), { success: true }, plain.body)
  const res = await verifyCall(h, key, { ...body, debug: true })
  assert.equal(res.statusCode, 200, res.body)
  const json = res.json() as { success: boolean; debug: Debug }
  assert.equal(json.success, true, res.body)
  assert.equal(json.debug.reason, undefined, res.body)
  assert.deepEqual(json.debug.steps.map((s) => s.name), [...STEPS])
  assert.ok(json.debug.steps.every((s) => s.ok), res.body)
  assertNoKeyMaterial(res.body, signers)
  return json.debug
}

/**
 * success: false, plain (exactly `{ success: false }` beside verstat and the SIP reason) and with debug: the reason code, the
 * failing step last and not ok, every earlier step ok and in pipeline order.
 */
export async function expectRejected(h: Harness, key: string, body: CallBody, code: string, step: StepName, signers: Signer[] = []): Promise<Debug> {
  const plain = await verifyCall(h, key, { ...body, debug: false })
  assert.equal(plain.statusCode, 200, plain.body)
  assert.deepEqual(ledgerVerdict(plain.json()), { success: false }, plain.body)
  const res = await verifyCall(h, key, { ...body, debug: true })
  assert.equal(res.statusCode, 200, res.body)
  const json = res.json() as { success: boolean; debug: Debug }
  assert.equal(json.success, false, res.body)
  assert.ok(json.debug.reason?.startsWith(`${code}: `), `expected reason ${code}, got ${res.body}`)
  const names = json.debug.steps.map((s) => s.name)
  assert.deepEqual(names, STEPS.slice(0, STEPS.indexOf(step) + 1), res.body)
  const last = json.debug.steps.at(-1)!
  assert.equal(last.ok, false, res.body)
  assert.equal(typeof last.detail, 'string')
  assert.ok(json.debug.steps.slice(0, -1).every((s) => s.ok), res.body)
  assertNoKeyMaterial(res.body, signers)
  return json.debug
}

export interface Verdict { success: boolean; reason?: string }

export interface Flip {
  /** Per probe: ms from the end of `action` to the first `success: false` (negative: before it ended; Infinity: never). */
  lag: number[]
  /** Per probe: ms from when the change was first seen committed (`committed`) to that first failure. */
  sinceCommit: number[]
  /** Per probe: the debug reason code of that first failure. */
  reasons: (string | undefined)[]
  /** How long `action` took (a CLI child: its start-up and shut-down included). */
  actionMs: number
}

/**
 * Warms every probe (each must verify `warm` times in a row), then runs `action` (a change
 * that must make them fail) while polling all probes, and `committed` (is the change visible
 * in the database yet?), until every probe has failed or the timeout passed.
 */
export async function measureFlip(probes: (() => Promise<Verdict>)[], action: () => Promise<unknown>,
  options: { warm?: number; timeoutMs?: number; committed?: () => Promise<boolean> } = {}): Promise<Flip> {
  for (const [i, probe] of probes.entries()) {
    for (let n = 0; n < (options.warm ?? 3); n++) {
      const verdict = await probe()
      assert.equal(verdict.success, true, `probe ${i} did not verify before the change: ${verdict.reason}`)
    }
  }
  const started = performance.now()
  let done: number | undefined
  let commitAt: number | undefined
  const failAt: number[] = probes.map(() => Infinity)
  const reasons: (string | undefined)[] = probes.map(() => undefined)
  let failed = false
  const timedOut = () => failed || (done !== undefined && performance.now() > done + (options.timeoutMs ?? 5000))
  const pollers = probes.map(async (probe, i) => {
    while (!timedOut()) {
      const verdict = await probe()
      if (!verdict.success) {
        failAt[i] = performance.now()
        reasons[i] = verdict.reason?.split(':')[0]
        return
      }
      await sleep(5)
    }
  })
  const committed = options.committed
  const watcher = committed === undefined ? Promise.resolve() : (async () => {
    while (commitAt === undefined && !timedOut()) {
      if (await committed()) commitAt = performance.now()
      else await sleep(5)
    }
  })()
  let error: unknown
  try {
    await action()
  } catch (err) {
    error = err
    failed = true
  } finally {
    done = performance.now()
  }
  await Promise.all([...pollers, watcher])
  if (failed) throw error
  const end = done
  return {
    lag: failAt.map((t) => t - end),
    sinceCommit: failAt.map((t) => t - (commitAt ?? end)),
    reasons,
    actionMs: end - started,
  }
}

/** A probe over HTTP (a real server process): a freshly signed token for `n`, with debug. */
export function httpProbe(url: string, apiKey: string, n: CallerNumber, signer: Signer, dest: string, kid: string | null = signer.keyId): () => Promise<Verdict> {
  return async () => {
    const jwt = signRaw(shakenHeader(kid ?? undefined), claims(n.phone, dest), signer.privateKey)
    const res = await fetch(`${url}/numsys/call-signature-verification`, {
      method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': apiKey },
      body: JSON.stringify({ origTN: n.phone, destTN: dest, jwt, debug: true }), signal: AbortSignal.timeout(5000),
    })
    assert.equal(res.status, 200)
    const body = (await res.json()) as { success: boolean; debug: { reason?: string } }
    return { success: body.success, ...(body.debug.reason === undefined ? {} : { reason: body.debug.reason }) }
  }
}

/** The same through app.inject (in-process harness). */
export function injectProbe(h: Harness, apiKey: string, n: CallerNumber, signer: Signer, dest: string, kid: string | null = signer.keyId): () => Promise<Verdict> {
  return async () => {
    const jwt = signRaw(shakenHeader(kid ?? undefined), claims(n.phone, dest), signer.privateKey)
    const res = await verifyCall(h, apiKey, { origTN: n.phone, destTN: dest, jwt, debug: true })
    assert.equal(res.statusCode, 200, res.body)
    const body = res.json() as { success: boolean; debug: { reason?: string } }
    return { success: body.success, ...(body.debug.reason === undefined ? {} : { reason: body.debug.reason }) }
  }
}

export interface CallerSetup { h: Harness; key: string; num: CallerNumber; signer: Signer }

/** What the verification tests share: a harness, a key with scope `caller`, one number with its keystores, its first signer. */
export async function callerSetup(options: { keystores?: number } = {}): Promise<CallerSetup> {
  const h = await startHarness()
  const key = await h.key({ scopes: ['caller'] })
  const num = await callerNumber(h, options)
  return { h, key, num, signer: num.signers[0]! }
}
