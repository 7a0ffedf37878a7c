/**
 * Shared helpers for the area A HTTP tests: request bodies, registered numbers, wallets that
 * own tokens on the embedded ledger, signatures, and error-body assertions.
 */
import assert from 'node:assert/strict'
import { randomBytes, randomInt } from 'node:crypto'
import type { LightMyRequestResponse } from 'fastify'
import type { Keypair } from '@mysten/sui/cryptography'
import { Ed25519Keypair } from '@mysten/sui/keypairs/ed25519'
import { toBase58 } from '@mysten/sui/utils'
import { getZkLoginSignature } from '@mysten/sui/zklogin'
import type { Harness } from '../helpers.ts'
import { linkNumber } from '../../src/identity/numbers.ts'
import { LocalLedger } from '../../src/ledger/local-ledger.ts'
import { ledgerApproveMessage } from '../../src/ledger/approve.ts'

export type Response = LightMyRequestResponse

/** A fresh number that no other test uses: +44 20 and 8 random digits (unique enough per run). */
export function randomPhone(): string {
  return `+4420${String(randomInt(0, 100_000_000)).padStart(8, '0')}`
}

export function randomObjectId(): string {
  return `0x${randomBytes(32).toString('hex')}`
}

export function randomApprovalNumber(): string {
  return randomBytes(12).toString('hex')
}

export function randomDigest(): string {
  return toBase58(randomBytes(32))
}

export function randomReference(): string {
  return `ref-${randomBytes(6).toString('hex')}`
}

export interface ApprovalBody {
  title: string
  message: string
  successRedirectUrl: string
  cancelRedirectUrl: string
  referenceNumber: string
  method: 'sign' | 'event'
  phoneNumber?: string
  objectId?: string
}

/** A valid approval request body (fresh referenceNumber) for the given target. */
export function approvalBody(target: { phoneNumber: string } | { objectId: string }, overrides: Partial<ApprovalBody> = {}): ApprovalBody {
  return {
    title: 'SIM replacement',
    message: 'Approve the replacement of your SIM card in store #12.',
    successRedirectUrl: 'https://vendor.example/approved',
    cancelRedirectUrl: 'https://vendor.example/cancelled',
    referenceNumber: randomReference(),
    method: 'sign',
    ...target,
    ...overrides,
  }
}

export function localLedger(h: Harness): LocalLedger {
  assert.ok(h.service.ledger instanceof LocalLedger, 'these tests run on the embedded ledger')
  return h.service.ledger
}

export async function post(h: Harness, url: string, payload: unknown, headers: Record<string, string> = {}): Promise<Response> {
  return h.app.inject({ method: 'POST', url, payload: payload as object, headers })
}

export async function register(h: Harness, phoneNumber = randomPhone(), email = `user-${randomBytes(4).toString('hex')}@example.com`) {
  const res = await post(h, '/numsys/register-user-login', { email, phoneNumber })
  assert.equal(res.statusCode, 200, res.body)
  const body = res.json() as { success: boolean; message: string; userId: string; identifiers: { type: string; identifier: string }[]; zkAddress: string }
  return { ...body, phoneNumber: phoneNumber.startsWith('+') ? phoneNumber : `+${phoneNumber}`, email }
}

/**
 * `count` fresh numbers registered one after another: a process refuses a client's
 * registrations past four at once (503 with Retry-After; MAX_REGISTRATIONS_IN_PROGRESS), as a
 * client that fires them all together would be told.
 */
export async function registerEach(h: Harness, count: number): Promise<Array<Awaited<ReturnType<typeof register>>>> {
  const users: Array<Awaited<ReturnType<typeof register>>> = []
  for (let i = 0; i < count; i++) users.push(await register(h, randomPhone()))
  return users
}

/** A token owned by `owner` (a keypair or address), linked to a fresh phone number unless `link` is false. */
export async function ownedToken(h: Harness, owner: Keypair | string, options: { link?: boolean; phone?: string } = {}) {
  const address = typeof owner === 'string' ? owner : owner.toSuiAddress()
  const token = await localLedger(h).mintToken(address)
  const phoneNumber = options.phone ?? randomPhone()
  if (options.link !== false) await linkNumber(h.service.db, phoneNumber, token.objectId, 'linked')
  return { objectId: token.objectId, owner: address, phoneNumber }
}

/** Creates an approval through the API and returns its number (asserting 200). */
export async function createApproval(h: Harness, key: string, body: ApprovalBody): Promise<string> {
  const url = body.objectId !== undefined ? '/numsys/approval-object-id' : '/numsys/approval-phone'
  const res = await post(h, url, body, { 'x-api-key': key })
  assert.equal(res.statusCode, 200, res.body)
  return (res.json() as { approvalNumber: string }).approvalNumber
}

/**
 * LEDGER=sui: a fresh token owned by `owner` in the GraphQL stub's world, and an `event`
 * approval on it through the API.
 */
export async function suiEventApproval(h: Harness, key: string, stub: { world: { addToken(id: string, owner: string): unknown } }, owner: string):
  Promise<{ tokenId: string; ref: string }> {
  const tokenId = randomObjectId()
  stub.world.addToken(tokenId, owner)
  return { tokenId, ref: await createApproval(h, key, approvalBody({ objectId: tokenId }, { method: 'event' })) }
}

export async function details(h: Harness, ref: string): Promise<Record<string, unknown>> {
  const res = await h.app.inject({ method: 'GET', url: `/numsys/transaction_details?ref=${encodeURIComponent(ref)}` })
  assert.equal(res.statusCode, 200, res.body)
  return res.json() as Record<string, unknown>
}

/** The owner's personal-message signature over the approval's signMessage, as the approval page makes it. */
export async function signApproval(h: Harness, keypair: Keypair, ref: string): Promise<string> {
  const signMessage = (await details(h, ref)).signMessage as string
  return (await keypair.signPersonalMessage(new TextEncoder().encode(signMessage))).signature
}

export async function verifySignature(h: Harness, approvalNumber: string, signature: string): Promise<Response> {
  return post(h, '/numsys/verify_signature', { approvalNumber, signature })
}

export async function verifyTransaction(h: Harness, approvalNumber: string, digest: string): Promise<Response> {
  return post(h, '/numsys/verify_transaction', { approvalNumber, digest })
}

/** `POST /ledger/v1/approve` signed by `keypair`. */
export async function ledgerApprove(h: Harness, keypair: Keypair, objectId: string, ref: string): Promise<Response> {
  const { signature } = await keypair.signPersonalMessage(new TextEncoder().encode(ledgerApproveMessage(objectId, ref)))
  return post(h, '/ledger/v1/approve', { objectId, ref, signature })
}

export function newKeypair(): Ed25519Keypair {
  return new Ed25519Keypair()
}

/** Sets an approval's expiry in the past (or anywhere) directly in the database. */
export async function setExpiry(h: Harness, ref: string, expiresAt: number): Promise<void> {
  const changed = await h.service.db.run('UPDATE approvals SET expires_at = $1 WHERE approval_number = $2', [expiresAt, ref])
  assert.equal(changed, 1)
}

/**
 * The one error shape: `{ success: false, code, error, message, requestId, field? }`, with
 * `error` = `message`, the request ID echoed in the header, and nothing that looks like a stack.
 */
export function assertError(res: Response, status: number, code: string, field?: string): Record<string, unknown> {
  assert.equal(res.statusCode, status, `expected ${status} ${code}, got ${res.statusCode}: ${res.body}`)
  assert.match(String(res.headers['content-type']), /^application\/json/)
  const body = res.json() as Record<string, unknown>
  assert.equal(body.success, false)
  assert.equal(body.code, code, res.body)
  assert.equal(typeof body.message, 'string')
  assert.ok((body.message as string).length > 0)
  assert.equal(body.error, body.message)
  assert.equal(typeof body.requestId, 'string')
  assert.equal(body.requestId, res.headers['x-request-id'])
  if (field !== undefined) assert.equal(body.field, field, res.body)
  const allowed = new Set(['success', 'code', 'error', 'message', 'requestId', 'field'])
  for (const k of Object.keys(body)) assert.ok(allowed.has(k), `unexpected error field ${k}`)
  assertNoStack(res)
  return body
}

export function assertNoStack(res: Response): void {
  assert.doesNotMatch(res.body, /\bat .*\.(ts|js|mjs):\d+/, 'a stack trace leaked')
  assert.doesNotMatch(res.body, /"stack"/)
  assert.doesNotMatch(res.body, /node_modules|\/src\//)
}

/** A verification verdict: 200 with `{ success, error?, code? }`. */
export function assertVerdict(res: Response, expected: true | string): void {
  assert.equal(res.statusCode, 200, res.body)
  const body = res.json() as { success: boolean; code?: string; error?: string }
  if (expected === true) {
    assert.deepEqual(body, { success: true })
  } else {
    assert.equal(body.success, false, res.body)
    assert.equal(body.code, expected, res.body)
    assert.equal(typeof body.error, 'string')
    assert.ok(body.error!.length > 0)
  }
}

/**
 * A structurally valid zkLogin serialized signature with a dummy proof: enough to be
 * recognised as zkLogin, never to verify.
 */
export async function fakeZkLoginSignature(): Promise<string> {
  const { signature: userSignature } = await new Ed25519Keypair().signPersonalMessage(new TextEncoder().encode('x'))
  return getZkLoginSignature({
    inputs: {
      proofPoints: { a: ['1', '2', '1'], b: [['1', '2'], ['3', '4'], ['1', '0']], c: ['1', '2', '1'] },
      issBase64Details: { value: Buffer.from('"iss":"https://accounts.google.com",').toString('base64url'), indexMod4: 0 },
      headerBase64: 'eyJhbGciOiJSUzI1NiJ9',
      addressSeed: '12345',
    },
    maxEpoch: '10',
    userSignature,
  })
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))
