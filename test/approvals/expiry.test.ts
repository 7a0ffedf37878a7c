import { after, before, describe, test } from 'node:test'
import assert from 'node:assert/strict'
import { Ed25519Keypair } from '@mysten/sui/keypairs/ed25519'
import { startHarness, type Harness } from '../helpers.ts'
import {
  approvalBody, assertError, assertVerdict, createApproval, details, ledgerApprove, ownedToken, post, signApproval, sleep,
  verifySignature, verifyTransaction,
} from '../support/kns.ts'

// Real expiry: APPROVAL_TTL_S=1 and wall-clock waiting, no database manipulation.
let h: Harness
let key: string

before(async () => {
  h = await startHarness({ APPROVAL_TTL_S: '1' })
  key = await h.key({ scopes: ['approvals'] })
})
after(async () => { await h.close() })

describe('APPROVAL_TTL_S', () => {
  test('approvals expire after the TTL: status expired, signatures and transactions refused, cancel refused', async () => {
    const owner = new Ed25519Keypair()
    const token = await ownedToken(h, owner)
    const signBody = approvalBody({ phoneNumber: token.phoneNumber })
    const signRef = await createApproval(h, key, signBody)
    const eventRef = await createApproval(h, key, approvalBody({ phoneNumber: token.phoneNumber }, { method: 'event' }))
    const cancelRef = await createApproval(h, key, approvalBody({ phoneNumber: token.phoneNumber }))

    const d = await details(h, signRef)
    assert.equal(d.status, 'pending')
    assert.equal(Date.parse(d.expiresAt as string) - Date.parse(d.createdAt as string), 1000)

    // Proofs made in time, presented too late.
    const signature = await signApproval(h, owner, signRef)
    const digest = (await ledgerApprove(h, owner, token.objectId, eventRef)).json().digest as string
    await sleep(1100)

    assert.equal((await details(h, signRef)).status, 'expired')
    assertVerdict(await verifySignature(h, signRef, signature), 'EXPIRED')
    assertVerdict(await verifyTransaction(h, eventRef, digest), 'EXPIRED')
    assertVerdict(await post(h, '/numsys/approval-cancel', { approvalNumber: cancelRef }), 'EXPIRED')
    for (const ref of [signRef, eventRef, cancelRef]) {
      const after = await details(h, ref)
      assert.equal(after.status, 'expired')
      assert.equal(after.approved, false)
    }

    // Retrying the creation of an expired request is a conflict; a new reference works.
    assertError(await post(h, '/numsys/approval-phone', signBody, { 'x-api-key': key }), 409, 'CONFLICT', 'referenceNumber')
    const fresh = await createApproval(h, key, approvalBody({ phoneNumber: token.phoneNumber }))
    assertVerdict(await verifySignature(h, fresh, await signApproval(h, owner, fresh)), true)
  })

  test('an approval decided in time stays approved after the TTL', async () => {
    const owner = new Ed25519Keypair()
    const token = await ownedToken(h, owner)
    const ref = await createApproval(h, key, approvalBody({ phoneNumber: token.phoneNumber }))
    const signature = await signApproval(h, owner, ref)
    assertVerdict(await verifySignature(h, ref, signature), true)
    await sleep(1100)
    const d = await details(h, ref)
    assert.equal(d.status, 'approved')
    assert.equal(d.approved, true)
    // Repeating the successful verification stays idempotent after the TTL.
    assertVerdict(await verifySignature(h, ref, signature), true)
  })
})
