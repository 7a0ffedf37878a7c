import { after, before, describe, test } from 'node:test'
import assert from 'node:assert/strict'
import type { Keypair } from '@mysten/sui/cryptography'
import { Ed25519Keypair } from '@mysten/sui/keypairs/ed25519'
import { Secp256k1Keypair } from '@mysten/sui/keypairs/secp256k1'
import { Secp256r1Keypair } from '@mysten/sui/keypairs/secp256r1'
import { fromBase58 } from '@mysten/sui/utils'
import { startHarness, type Harness } from '../helpers.ts'
import {
  approvalBody, assertError, assertVerdict, createApproval, details, fakeZkLoginSignature, ledgerApprove, localLedger, ownedToken, post,
  randomApprovalNumber, randomDigest, randomObjectId, setExpiry, signApproval, verifySignature, verifyTransaction,
} from '../support/kns.ts'
import { ledgerApproveMessage } from '../../src/ledger/approve.ts'
import { ForbiddenError, NotFoundError } from '../../src/errors.ts'

let h: Harness
let key: string

before(async () => {
  h = await startHarness()
  key = await h.key({ scopes: ['approvals'], vendor: 'Acme Bank' })
})
after(async () => { await h.close() })

async function eventApprovalFor(owner: Keypair | string, method: 'sign' | 'event' = 'event') {
  const token = await ownedToken(h, owner)
  const ref = await createApproval(h, key, approvalBody({ phoneNumber: token.phoneNumber }, { method }))
  return { ...token, ref }
}

async function ledgerDigest(owner: Keypair, objectId: string, ref: string): Promise<string> {
  const res = await ledgerApprove(h, owner, objectId, ref)
  assert.equal(res.statusCode, 200, res.body)
  const body = res.json() as { digest: string }
  assert.deepEqual(Object.keys(body), ['digest'])
  assert.equal(fromBase58(body.digest).length, 32)
  return body.digest
}

describe('POST /ledger/v1/approve + verify_transaction', () => {
  for (const [scheme, make] of [['Ed25519', () => new Ed25519Keypair()], ['Secp256k1', () => new Secp256k1Keypair()],
    ['Secp256r1', () => new Secp256r1Keypair()]] as const) {
    test(`${scheme}: the owner's kns::approve transaction approves the event request`, async () => {
      const owner = make()
      const { ref, objectId } = await eventApprovalFor(owner)
      const digest = await ledgerDigest(owner, objectId, ref)

      const tx = await localLedger(h).getTransaction(digest)
      assert.ok(tx)
      assert.equal(tx.success, true)
      assert.equal(tx.sender, owner.toSuiAddress())
      assert.deepEqual(tx.events.map((e) => [e.type, e.json]), [[h.service.ledger.approvalEventType, { object_id: objectId, ref }]])

      assertVerdict(await verifyTransaction(h, ref, digest), true)
      const d = await details(h, ref)
      assert.equal(d.approved, true)
      assert.equal(d.status, 'approved')
      assert.equal(d.wallet, owner.toSuiAddress())
      // Idempotent.
      assertVerdict(await verifyTransaction(h, ref, digest), true)
    })
  }

  test('the signed text is the documented one; an upper-case object ID names the same token', async () => {
    const owner = new Ed25519Keypair()
    const { ref, objectId } = await eventApprovalFor(owner)
    assert.equal(ledgerApproveMessage(objectId, ref), `KNS embedded ledger: kns::approve\nObject: ${objectId}\nRef: ${ref}`)
    const upper = `0x${objectId.slice(2).toUpperCase()}`
    const digest = await ledgerDigest(owner, upper, ref)
    assertVerdict(await verifyTransaction(h, ref, digest), true)
  })

  test("a non-owner's signature -> 403 FORBIDDEN, nothing recorded", async () => {
    const owner = new Ed25519Keypair()
    const stranger = new Ed25519Keypair()
    const { ref, objectId } = await eventApprovalFor(owner)
    const count = async () => Number((await h.service.db.get<{ n: number }>('SELECT COUNT(*) AS n FROM ledger_transactions'))?.n)
    const before = await count()
    assertError(await ledgerApprove(h, stranger, objectId, ref), 403, 'FORBIDDEN')
    assert.equal(await count(), before)
  })

  test('a signature over another ref or object -> 403', async () => {
    const owner = new Ed25519Keypair()
    const { ref, objectId } = await eventApprovalFor(owner)
    const other = randomApprovalNumber()
    const { signature } = await owner.signPersonalMessage(new TextEncoder().encode(ledgerApproveMessage(objectId, other)))
    assertError(await post(h, '/ledger/v1/approve', { objectId, ref, signature }), 403, 'FORBIDDEN')
    const { signature: sig2 } = await owner.signPersonalMessage(new TextEncoder().encode(ledgerApproveMessage(randomObjectId(), ref)))
    assertError(await post(h, '/ledger/v1/approve', { objectId, ref, signature: sig2 }), 403, 'FORBIDDEN')
  })

  test('the same signed approve again (a replay) -> 409 naming the first transaction, and no second event; a cancelled request -> 409', async () => {
    const owner = new Ed25519Keypair()
    const { ref, objectId } = await eventApprovalFor(owner)
    const { signature } = await owner.signPersonalMessage(new TextEncoder().encode(ledgerApproveMessage(objectId, ref)))
    const first = await post(h, '/ledger/v1/approve', { objectId, ref, signature })
    assert.equal(first.statusCode, 200, first.body)
    const { digest } = first.json() as { digest: string }
    for (let i = 0; i < 3; i++) {
      const again = assertError(await post(h, '/ledger/v1/approve', { objectId, ref, signature }), 409, 'CONFLICT', 'ref')
      assert.match(again.message as string, new RegExp(`already approved ref ${ref} \\(transaction ${digest}\\)`))
    }
    const feed = await localLedger(h).approvalEvents(null, 100_000)
    assert.equal(feed.events.filter((e) => e.json.ref === ref).length, 1)

    const cancelled = await eventApprovalFor(owner)
    assert.equal((await post(h, '/numsys/approval-cancel', { approvalNumber: cancelled.ref })).statusCode, 200)
    assertError(await ledgerApprove(h, owner, cancelled.objectId, cancelled.ref), 409, 'CONFLICT', 'ref')
  })

  test('a ref that is no approval request of this token -> 404, whatever the token; malformed fields -> 400', async () => {
    const owner = new Ed25519Keypair()
    assertError(await ledgerApprove(h, owner, randomObjectId(), randomApprovalNumber()), 404, 'NOT_FOUND', 'ref')
    const { ref, objectId } = await eventApprovalFor(owner)
    // Another token's request, signed by its own owner: the ref does not belong to this token.
    const other = await ownedToken(h, owner)
    assertError(await ledgerApprove(h, owner, other.objectId, ref), 404, 'NOT_FOUND', 'ref')
    const feed = await localLedger(h).approvalEvents(null, 100_000)
    assert.ok(!feed.events.some((e) => e.json.ref === ref), 'nothing was recorded')
    const url = '/ledger/v1/approve'
    const unknownScheme = Buffer.from([0x09, ...new Uint8Array(96)]).toString('base64')
    assertError(await post(h, url, { objectId, ref, signature: unknownScheme }), 400, 'INVALID_REQUEST', 'signature')
    // Too short to carry a signature and a key: refused, whether as malformed or as not verifying.
    const short = await post(h, url, { objectId, ref, signature: 'AAAA' })
    assert.ok(short.statusCode === 400 || short.statusCode === 403, short.body)
    assertError(await post(h, url, { objectId, ref, signature: 'not base64!' }), 400, 'INVALID_REQUEST', 'signature')
    // A zkLogin signature whose proof the embedded ledger cannot check in the clear (a Groth16 one): refused.
    assertError(await post(h, url, { objectId, ref, signature: await fakeZkLoginSignature() }), 403, 'FORBIDDEN')
    assertError(await post(h, url, { objectId: '0x12', ref, signature: 'AAAA' }), 400, 'INVALID_REQUEST', 'objectId')
    assertError(await post(h, url, { objectId, signature: 'AAAA' }), 400, 'INVALID_REQUEST', 'ref')
    assertError(await post(h, url, { objectId, ref: '', signature: 'AAAA' }), 400, 'INVALID_REQUEST', 'ref')
    assertError(await post(h, url, { objectId, ref }), 400, 'INVALID_REQUEST', 'signature')
  })
})

describe('verify_transaction: failures', () => {
  test('a digest of an approve transaction for another ref -> EVENT_MISSING', async () => {
    const owner = new Ed25519Keypair()
    const { ref: refA, objectId, phoneNumber } = await eventApprovalFor(owner)
    const refB = await createApproval(h, key, approvalBody({ phoneNumber }, { method: 'event' }))
    const digestA = await ledgerDigest(owner, objectId, refA)
    assertVerdict(await verifyTransaction(h, refB, digestA), 'EVENT_MISSING')
    assert.equal((await details(h, refB)).approved, false)
    assertVerdict(await verifyTransaction(h, refA, digestA), true)
  })

  test('a digest of an approve transaction for another token with the right ref -> EVENT_MISSING', async () => {
    const owner = new Ed25519Keypair()
    const { ref } = await eventApprovalFor(owner)
    const otherToken = await ownedToken(h, owner)
    // The route refuses a ref of another token; on Sui the Move call would not: made on the ledger itself.
    const { digest } = await localLedger(h).approve(otherToken.objectId, ref, owner.toSuiAddress())
    assertVerdict(await verifyTransaction(h, ref, digest), 'EVENT_MISSING')
  })

  test('a digest of a transaction without ApprovalEvent (a transfer) -> EVENT_MISSING', async () => {
    const owner = new Ed25519Keypair()
    const { ref } = await eventApprovalFor(owner)
    const other = await ownedToken(h, owner)
    const { digest } = await localLedger(h).transferToken(other.objectId, owner.toSuiAddress())
    assertVerdict(await verifyTransaction(h, ref, digest), 'EVENT_MISSING')
  })

  test('unknown digest -> TRANSACTION_NOT_FOUND', async () => {
    const { ref } = await eventApprovalFor(new Ed25519Keypair())
    assertVerdict(await verifyTransaction(h, ref, randomDigest()), 'TRANSACTION_NOT_FOUND')
  })

  test('a transaction by an owner who has since transferred the token -> WRONG_SIGNER', async () => {
    const first = new Ed25519Keypair()
    const second = new Ed25519Keypair()
    const { ref, objectId } = await eventApprovalFor(first)
    const digest = await ledgerDigest(first, objectId, ref)
    await localLedger(h).transferToken(objectId, second.toSuiAddress())
    assertVerdict(await verifyTransaction(h, ref, digest), 'WRONG_SIGNER')
    assert.equal((await details(h, ref)).wallet, second.toSuiAddress())
  })

  test('a sign approval rejects transactions -> WRONG_METHOD', async () => {
    const owner = new Ed25519Keypair()
    const { ref, objectId } = await eventApprovalFor(owner, 'sign')
    const digest = await ledgerDigest(owner, objectId, ref)
    assertVerdict(await verifyTransaction(h, ref, digest), 'WRONG_METHOD')
    assert.equal((await details(h, ref)).approved, false)
    // ... while the signature route accepts the sign approval.
    assertVerdict(await verifySignature(h, ref, await signApproval(h, owner, ref)), true)
  })

  test('expired and cancelled event approvals -> EXPIRED / CANCELLED', async () => {
    const owner = new Ed25519Keypair()
    const expired = await eventApprovalFor(owner)
    const d1 = await ledgerDigest(owner, expired.objectId, expired.ref)
    await setExpiry(h, expired.ref, Date.now() - 1)
    assertVerdict(await verifyTransaction(h, expired.ref, d1), 'EXPIRED')

    const cancelled = await eventApprovalFor(owner)
    const d2 = await ledgerDigest(owner, cancelled.objectId, cancelled.ref)
    assertVerdict(await post(h, '/numsys/approval-cancel', { approvalNumber: cancelled.ref }), true)
    assertVerdict(await verifyTransaction(h, cancelled.ref, d2), 'CANCELLED')
  })

  test('malformed digests and missing fields -> 400; unknown approval -> 404', async () => {
    const { ref } = await eventApprovalFor(new Ed25519Keypair())
    const url = '/numsys/verify_transaction'
    for (const digest of ['', 'short', '0'.repeat(44), 'O'.repeat(44), 'l'.repeat(44), `${randomDigest()}1111111111`, 'a b'.repeat(12), 42]) {
      assertError(await post(h, url, { approvalNumber: ref, digest }), 400, 'INVALID_REQUEST', 'digest')
    }
    assertError(await post(h, url, { approvalNumber: ref }), 400, 'INVALID_REQUEST', 'digest')
    assertError(await post(h, url, { digest: randomDigest() }), 400, 'INVALID_REQUEST', 'approvalNumber')
    assertError(await post(h, url, { approvalNumber: 'nope', digest: randomDigest() }), 400, 'INVALID_REQUEST', 'approvalNumber')
    assertError(await verifyTransaction(h, randomApprovalNumber(), randomDigest()), 404, 'NOT_FOUND', 'approvalNumber')
  })
})

describe('LocalLedger.approve (the `kns ledger approve` path)', () => {
  test('the owner approves directly on the ledger; verify_transaction accepts the digest', async () => {
    const owner = new Secp256r1Keypair()
    const { ref, objectId } = await eventApprovalFor(owner)
    const { digest } = await localLedger(h).approve(objectId, ref, owner.toSuiAddress())
    assert.equal(fromBase58(digest).length, 32)
    assertVerdict(await verifyTransaction(h, ref, digest), true)
    assert.equal((await details(h, ref)).wallet, owner.toSuiAddress())
  })

  test('refused unless the sender owns the token; unknown token is NotFound', async () => {
    const owner = new Ed25519Keypair()
    const { ref, objectId } = await eventApprovalFor(owner)
    await assert.rejects(localLedger(h).approve(objectId, ref, new Ed25519Keypair().toSuiAddress()), ForbiddenError)
    await assert.rejects(localLedger(h).approve(randomObjectId(), ref, owner.toSuiAddress()), NotFoundError)
    assert.equal((await details(h, ref)).approved, false)
  })

  test('a token minted to a registered zkAddress can be approved by that address', async () => {
    const reg = await post(h, '/numsys/register-user-login', { email: 'zk@example.com', phoneNumber: '+447700900123' })
    const { zkAddress } = reg.json() as { zkAddress: string }
    const ref = await createApproval(h, key, approvalBody({ phoneNumber: '+447700900123' }, { method: 'event' }))
    const objectId = (await details(h, ref)).objectId as string
    const { digest } = await localLedger(h).approve(objectId, ref, zkAddress)
    assertVerdict(await verifyTransaction(h, ref, digest), true)
    assert.equal((await details(h, ref)).wallet, zkAddress)
  })
})
