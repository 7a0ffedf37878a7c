import { after, before, describe, test } from 'node:test'
import assert from 'node:assert/strict'
import { Ed25519Keypair } from '@mysten/sui/keypairs/ed25519'
import { startHarness, type Harness } from '../helpers.ts'
import {
  approvalBody, assertError, assertVerdict, createApproval, details, ledgerApprove, ownedToken, post, randomApprovalNumber,
  setExpiry, signApproval, verifySignature, verifyTransaction,
} from '../support/kns.ts'

const URL = '/numsys/approval-cancel'
let h: Harness
let key: string

before(async () => {
  h = await startHarness()
  key = await h.key({ scopes: ['approvals'] })
})
after(async () => { await h.close() })

async function pending(method: 'sign' | 'event' = 'sign') {
  const owner = new Ed25519Keypair()
  const token = await ownedToken(h, owner)
  const ref = await createApproval(h, key, approvalBody({ phoneNumber: token.phoneNumber }, { method }))
  return { ...token, owner, ref }
}

const cancel = (approvalNumber: unknown) => post(h, URL, { approvalNumber })

describe('approval-cancel', () => {
  test('pending -> cancelled: visible in the details, approved stays false, the reason defaults to denied', async () => {
    const { ref, owner } = await pending()
    assertVerdict(await cancel(ref), true)
    const d = await details(h, ref)
    assert.equal(d.status, 'cancelled')
    assert.equal(d.approved, false)
    assert.equal(d.wallet, owner.toSuiAddress())
    assert.equal(d.cancelReason, 'denied')
  })

  test('"This wasn\'t me": reason not_me, in the details and in the approval.cancelled event', async () => {
    const { ref } = await pending()
    assertVerdict(await post(h, URL, { approvalNumber: ref, reason: 'not_me' }), true)
    assert.equal((await details(h, ref)).cancelReason, 'not_me')
    const event = await h.service.db.get<{ body: string }>(
      'SELECT body FROM approval_events WHERE approval_number = $1 AND type = $2', [ref, 'approval.cancelled'])
    const { data } = JSON.parse(event!.body) as { data: Record<string, unknown> }
    assert.equal(data.cancelReason, 'not_me')
    assert.equal(data.status, 'cancelled')
  })

  test('cancelling twice is idempotent: the first reason stays', async () => {
    const { ref } = await pending()
    assertVerdict(await post(h, URL, { approvalNumber: ref, reason: 'not_me' }), true)
    const first = await h.service.db.get('SELECT status, decided_at, cancel_reason FROM approvals WHERE approval_number = $1', [ref])
    assertVerdict(await cancel(ref), true)
    assertVerdict(await post(h, URL, { approvalNumber: ref, reason: 'denied' }), true)
    assert.deepEqual(await h.service.db.get('SELECT status, decided_at, cancel_reason FROM approvals WHERE approval_number = $1', [ref]), first)
    assert.equal((await details(h, ref)).cancelReason, 'not_me')
  })

  test('an unknown reason is a 400 and cancels nothing', async () => {
    const { ref } = await pending()
    for (const reason of ['fraud', '', 7, null]) {
      const body = assertError(await post(h, URL, { approvalNumber: ref, reason }), 400, 'INVALID_REQUEST', 'reason')
      // A string outside the list is told the list (the schema is an enum: docs/openapi.json shows it too).
      if (typeof reason === 'string') assert.equal(body.error, 'body: reason must be one of denied, not_me')
    }
    assert.equal((await details(h, ref)).status, 'pending')
  })

  test('an approved request cannot be cancelled', async () => {
    const { ref, owner } = await pending()
    assertVerdict(await verifySignature(h, ref, await signApproval(h, owner, ref)), true)
    assertVerdict(await cancel(ref), 'ALREADY_APPROVED')
    const d = await details(h, ref)
    assert.equal(d.status, 'approved')
    assert.equal(d.approved, true)
  })

  test('an approved event request cannot be cancelled either', async () => {
    const { ref, owner, objectId } = await pending('event')
    const digest = (await ledgerApprove(h, owner, objectId, ref)).json().digest as string
    assertVerdict(await verifyTransaction(h, ref, digest), true)
    assertVerdict(await cancel(ref), 'ALREADY_APPROVED')
  })

  test('an expired request cannot be cancelled', async () => {
    const { ref } = await pending()
    await setExpiry(h, ref, Date.now() - 1)
    assertVerdict(await cancel(ref), 'EXPIRED')
    assert.equal((await details(h, ref)).status, 'expired')
  })

  test('a cancelled request can no longer be approved, by signature or transaction', async () => {
    const sign = await pending()
    const signature = await signApproval(h, sign.owner, sign.ref)
    assertVerdict(await cancel(sign.ref), true)
    assertVerdict(await verifySignature(h, sign.ref, signature), 'CANCELLED')

    const event = await pending('event')
    const digest = (await ledgerApprove(h, event.owner, event.objectId, event.ref)).json().digest as string
    assertVerdict(await cancel(event.ref), true)
    assertVerdict(await verifyTransaction(h, event.ref, digest), 'CANCELLED')
    assert.equal((await details(h, event.ref)).approved, false)
  })

  test('unknown approval -> 404; malformed -> 400', async () => {
    assertError(await cancel(randomApprovalNumber()), 404, 'NOT_FOUND', 'approvalNumber')
    for (const bad of ['', 'nope', randomApprovalNumber().toUpperCase(), 7]) {
      assertError(await cancel(bad), 400, 'INVALID_REQUEST', 'approvalNumber')
    }
    assertError(await post(h, URL, {}), 400, 'INVALID_REQUEST', 'approvalNumber')
  })

  test('needs no API key', async () => {
    const { ref } = await pending()
    const res = await h.app.inject({ method: 'POST', url: URL, payload: { approvalNumber: ref } })
    assertVerdict(res, true)
  })
})
