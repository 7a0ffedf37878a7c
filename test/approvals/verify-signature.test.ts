import { after, before, describe, test } from 'node:test'
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import type { Keypair } from '@mysten/sui/cryptography'
import { Ed25519Keypair } from '@mysten/sui/keypairs/ed25519'
import { Secp256k1Keypair } from '@mysten/sui/keypairs/secp256k1'
import { Secp256r1Keypair } from '@mysten/sui/keypairs/secp256r1'
import { startHarness, type Harness } from '../helpers.ts'
import {
  approvalBody, assertError, assertVerdict, createApproval, details, fakeZkLoginSignature, localLedger, ownedToken, post, randomApprovalNumber,
  setExpiry, signApproval, verifySignature,
} from '../support/kns.ts'

let h: Harness
let key: string

before(async () => {
  h = await startHarness()
  key = await h.key({ scopes: ['approvals'], vendor: 'Acme Bank' })
})
after(async () => { await h.close() })

const SCHEMES: [string, () => Keypair][] = [
  ['Ed25519', () => new Ed25519Keypair()],
  ['Secp256k1', () => new Secp256k1Keypair()],
  ['Secp256r1', () => new Secp256r1Keypair()],
]

/** A `sign` approval for a token that `owner` holds. */
async function signApprovalFor(owner: Keypair, method: 'sign' | 'event' = 'sign') {
  const token = await ownedToken(h, owner)
  const ref = await createApproval(h, key, approvalBody({ phoneNumber: token.phoneNumber }, { method }))
  return { ...token, ref }
}

async function signText(keypair: Keypair, text: string): Promise<string> {
  return (await keypair.signPersonalMessage(new TextEncoder().encode(text))).signature
}

describe('verify_signature: real wallet signatures', () => {
  for (const [scheme, make] of SCHEMES) {
    test(`${scheme}: the owner's signature over signMessage approves`, async () => {
      const owner = make()
      const { ref } = await signApprovalFor(owner)
      const before = await details(h, ref)
      assert.equal(before.wallet, owner.toSuiAddress())
      assertVerdict(await verifySignature(h, ref, await signApproval(h, owner, ref)), true)
      const d = await details(h, ref)
      assert.equal(d.approved, true)
      assert.equal(d.status, 'approved')
      assert.equal(d.wallet, owner.toSuiAddress())
    })

    test(`${scheme}: a non-owner's valid signature -> WRONG_SIGNER, still pending`, async () => {
      const owner = new Ed25519Keypair()
      const stranger = make()
      const { ref } = await signApprovalFor(owner)
      assertVerdict(await verifySignature(h, ref, await signApproval(h, stranger, ref)), 'WRONG_SIGNER')
      const d = await details(h, ref)
      assert.equal(d.approved, false)
      assert.equal(d.status, 'pending')
      assert.equal(d.wallet, owner.toSuiAddress())
    })
  }
})

describe('verify_signature: forgery and replay', () => {
  test('a signature over a tampered message -> INVALID_SIGNATURE', async () => {
    const owner = new Ed25519Keypair()
    const { ref } = await signApprovalFor(owner)
    const text = (await details(h, ref)).signMessage as string
    for (const tampered of [text.replace('Title: SIM replacement', 'Title: Nothing important'), `${text} `, text.slice(0, -1), text.toUpperCase()]) {
      assertVerdict(await verifySignature(h, ref, await signText(owner, tampered)), 'INVALID_SIGNATURE')
    }
    assert.equal((await details(h, ref)).status, 'pending')
  })

  test('a signature for approval A replayed on approval B (same owner, same token) fails', async () => {
    const owner = new Secp256k1Keypair()
    const { ref: refA, phoneNumber } = await signApprovalFor(owner)
    const refB = await createApproval(h, key, approvalBody({ phoneNumber }))
    const sigA = await signApproval(h, owner, refA)
    assertVerdict(await verifySignature(h, refB, sigA), 'INVALID_SIGNATURE')
    assert.equal((await details(h, refB)).status, 'pending')
    // Even once A is approved, its signature never approves B.
    assertVerdict(await verifySignature(h, refA, sigA), true)
    assertVerdict(await verifySignature(h, refB, sigA), 'INVALID_SIGNATURE')
    assert.equal((await details(h, refB)).approved, false)
  })

  test('a transaction-intent signature over the same bytes is not a personal-message signature', async () => {
    const owner = new Ed25519Keypair()
    const { ref } = await signApprovalFor(owner)
    const bytes = new TextEncoder().encode((await details(h, ref)).signMessage as string)
    const { signature } = await owner.signTransaction(bytes)
    assertVerdict(await verifySignature(h, ref, signature), 'INVALID_SIGNATURE')
  })

  test("a stranger's signature bytes with the owner's public key -> INVALID_SIGNATURE", async () => {
    const owner = new Ed25519Keypair()
    const stranger = new Ed25519Keypair()
    const { ref } = await signApprovalFor(owner)
    const raw = Buffer.from(await signApproval(h, stranger, ref), 'base64')
    const forged = Buffer.concat([raw.subarray(0, 65), Buffer.from(owner.getPublicKey().toRawBytes())]).toString('base64')
    assertVerdict(await verifySignature(h, ref, forged), 'INVALID_SIGNATURE')
    assert.equal((await details(h, ref)).approved, false)
  })

  test('well-formed base64 that is no Sui signature -> 200 INVALID_SIGNATURE', async () => {
    const { ref } = await signApprovalFor(new Ed25519Keypair())
    for (const signature of ['AAAA', Buffer.from([0x09, ...randomBytes(96)]).toString('base64'), randomBytes(97).toString('base64')]) {
      const res = await verifySignature(h, ref, signature)
      assert.equal(res.statusCode, 200, res.body)
      assert.equal(res.json().success, false)
    }
    assertVerdict(await verifySignature(h, ref, 'AAAA'), 'INVALID_SIGNATURE')
  })
})

describe('verify_signature: idempotency after approval', () => {
  test('the same valid signature again succeeds; the approval is unchanged', async () => {
    const owner = new Secp256r1Keypair()
    const { ref } = await signApprovalFor(owner)
    const signature = await signApproval(h, owner, ref)
    assertVerdict(await verifySignature(h, ref, signature), true)
    const first = await h.service.db.get('SELECT status, wallet, decided_at FROM approvals WHERE approval_number = $1', [ref])
    assertVerdict(await verifySignature(h, ref, signature), true)
    assert.deepEqual(await h.service.db.get('SELECT status, wallet, decided_at FROM approvals WHERE approval_number = $1', [ref]), first)
  })

  test('concurrent submissions of the valid signature all succeed', async () => {
    const owner = new Ed25519Keypair()
    const { ref } = await signApprovalFor(owner)
    const signature = await signApproval(h, owner, ref)
    const results = await Promise.all(Array.from({ length: 6 }, () => verifySignature(h, ref, signature)))
    for (const r of results) assertVerdict(r, true)
  })

  test("after approval, a new owner's valid signature fails and the approver stays", async () => {
    const first = new Ed25519Keypair()
    const second = new Secp256k1Keypair()
    const { ref, objectId } = await signApprovalFor(first)
    assertVerdict(await verifySignature(h, ref, await signApproval(h, first, ref)), true)
    await localLedger(h).transferToken(objectId, second.toSuiAddress())
    assertVerdict(await verifySignature(h, ref, await signApproval(h, second, ref)), 'WRONG_SIGNER')
    assert.equal((await details(h, ref)).wallet, first.toSuiAddress())
  })

  test('a former owner cannot approve a request made after the transfer', async () => {
    const first = new Ed25519Keypair()
    const second = new Ed25519Keypair()
    const token = await ownedToken(h, first)
    await localLedger(h).transferToken(token.objectId, second.toSuiAddress())
    const ref = await createApproval(h, key, approvalBody({ objectId: token.objectId }))
    assertVerdict(await verifySignature(h, ref, await signApproval(h, first, ref)), 'WRONG_SIGNER')
    assertVerdict(await verifySignature(h, ref, await signApproval(h, second, ref)), true)
  })
})

describe('verify_signature: state and method', () => {
  test('expired -> EXPIRED, and stays unapproved', async () => {
    const owner = new Ed25519Keypair()
    const { ref } = await signApprovalFor(owner)
    const signature = await signApproval(h, owner, ref)
    await setExpiry(h, ref, Date.now() - 1)
    assertVerdict(await verifySignature(h, ref, signature), 'EXPIRED')
    const d = await details(h, ref)
    assert.equal(d.status, 'expired')
    assert.equal(d.approved, false)
  })

  test('an event approval rejects signatures -> WRONG_METHOD', async () => {
    const owner = new Ed25519Keypair()
    const { ref } = await signApprovalFor(owner, 'event')
    assertVerdict(await verifySignature(h, ref, await signApproval(h, owner, ref)), 'WRONG_METHOD')
    assert.equal((await details(h, ref)).approved, false)
  })

  test('cancelled -> CANCELLED', async () => {
    const owner = new Ed25519Keypair()
    const { ref } = await signApprovalFor(owner)
    const signature = await signApproval(h, owner, ref)
    assertVerdict(await post(h, '/numsys/approval-cancel', { approvalNumber: ref }), true)
    assertVerdict(await verifySignature(h, ref, signature), 'CANCELLED')
    assert.equal((await details(h, ref)).status, 'cancelled')
  })

  test('a zkLogin signature with a Groth16 proof on the embedded ledger -> INVALID_SIGNATURE, never taken on trust', async () => {
    const { ref } = await signApprovalFor(new Ed25519Keypair())
    const signature = await fakeZkLoginSignature()
    assertVerdict(await verifySignature(h, ref, signature), 'INVALID_SIGNATURE')
  })
})

describe('verify_signature: malformed requests and unknown approvals', () => {
  const URL = '/numsys/verify_signature'

  test('non-base64 signature -> 400 naming signature', async () => {
    const { ref } = await signApprovalFor(new Ed25519Keypair())
    for (const signature of ['not base64!', 'abc$', '====', '', 'AA=A']) {
      assertError(await post(h, URL, { approvalNumber: ref, signature }), 400, 'INVALID_REQUEST', 'signature')
    }
  })

  test('missing fields -> 400 naming them', async () => {
    assertError(await post(h, URL, { approvalNumber: randomApprovalNumber() }), 400, 'INVALID_REQUEST', 'signature')
    assertError(await post(h, URL, { signature: 'AAAA' }), 400, 'INVALID_REQUEST', 'approvalNumber')
    assertError(await post(h, URL, {}), 400, 'INVALID_REQUEST')
  })

  test('malformed approval numbers and non-string fields -> 400', async () => {
    for (const approvalNumber of ['', 'XYZ', randomApprovalNumber().toUpperCase(), `${randomApprovalNumber()}0`, 12345]) {
      assertError(await post(h, URL, { approvalNumber, signature: 'AAAA' }), 400, 'INVALID_REQUEST', 'approvalNumber')
    }
    assertError(await post(h, URL, { approvalNumber: randomApprovalNumber(), signature: 42 }), 400, 'INVALID_REQUEST', 'signature')
  })

  test('an absurdly long signature -> 400', async () => {
    assertError(await post(h, URL, { approvalNumber: randomApprovalNumber(), signature: 'A'.repeat(16388) }), 400, 'INVALID_REQUEST', 'signature')
  })

  test('unknown approval number -> 404 naming approvalNumber', async () => {
    const owner = new Ed25519Keypair()
    assertError(await verifySignature(h, randomApprovalNumber(), await signText(owner, 'anything')), 404, 'NOT_FOUND', 'approvalNumber')
  })
})
