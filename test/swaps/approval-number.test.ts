/**
 * A reported change may name the KNS approval that authorised it: only an approved request
 * for the same number is accepted; a pending, cancelled, expired or unknown one, or one for
 * another number, is a 400 naming the item, and nothing of the batch is stored.
 */
import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import { cancelApproval } from '../../src/approvals/cancel-approval.ts'
import { ChangeRejected } from '../../src/swaps/parse-change.ts'
import { startHarness, type Harness } from '../helpers.ts'
import {
  approvalBody, assertVerdict, createApproval, newKeypair, ownedToken, randomApprovalNumber, randomPhone, setExpiry, signApproval, verifySignature,
} from '../support/kns.ts'

let h: Harness
let key: string
const owner = newKeypair()
before(async () => {
  h = await startHarness()
  key = await h.key({ scopes: ['approvals'], vendor: 'Carrier Store' })
})
after(async () => { await h.close() })

let serial = 0
const change = (phoneNumber: string, approvalNumber: string) =>
  ({ eventId: `swap-${++serial}`, phoneNumber, kind: 'sim-change', changedAt: new Date(Date.now() - 60_000).toISOString(), approvalNumber })

/** A SIM-replacement approval for a fresh number, as a carrier's store asks for it. */
async function approvalFor(): Promise<{ ref: string; phone: string }> {
  const token = await ownedToken(h, owner)
  return { ref: await createApproval(h, key, approvalBody({ phoneNumber: token.phoneNumber })), phone: token.phoneNumber }
}

async function refused(phone: string, ref: string, pattern: RegExp): Promise<void> {
  const before = await h.service.db.get<{ n: number | string }>('SELECT COUNT(*) AS n FROM sim_changes')
  const ok = { eventId: `ok-${++serial}`, phoneNumber: randomPhone(), kind: 'activation', changedAt: new Date().toISOString() }
  await assert.rejects(h.service.swaps.record([ok, change(phone, ref)], 'test'), (err: unknown) => {
    assert.ok(err instanceof ChangeRejected, String(err))
    assert.equal(err.status, 400)
    assert.equal(err.field, 'changes.1.approvalNumber')
    assert.match(err.message, pattern)
    return true
  })
  const after = await h.service.db.get<{ n: number | string }>('SELECT COUNT(*) AS n FROM sim_changes')
  assert.equal(Number(after!.n), Number(before!.n), 'nothing of the batch is stored')
}

test('an approved request for the number is accepted and kept with the change', async () => {
  const { ref, phone } = await approvalFor()
  assertVerdict(await verifySignature(h, ref, await signApproval(h, owner, ref)), true)
  const item = change(phone, ref)
  assert.deepEqual(await h.service.swaps.record([item], 'test'), { recorded: 1, duplicates: 0, outsidePeriod: 0 })
  const row = await h.service.db.get<{ approval_number: string }>('SELECT approval_number FROM sim_changes WHERE event_id = $1', [item.eventId])
  assert.equal(row!.approval_number, ref)
  // The number written without its +: the same number.
  assert.equal((await h.service.swaps.record([{ ...change(phone.slice(1), ref) }], 'test')).recorded, 1)
})

test('a pending, expired, cancelled or unknown approval is refused', async () => {
  const pending = await approvalFor()
  await refused(pending.phone, pending.ref, /is pending, not approved/)
  const expired = await approvalFor()
  await setExpiry(h, expired.ref, Date.now() - 1000)
  await refused(expired.phone, expired.ref, /is expired, not approved/)
  const cancelled = await approvalFor()
  assert.deepEqual(await cancelApproval(h.service.db, cancelled.ref), { success: true })
  await refused(cancelled.phone, cancelled.ref, /is cancelled, not approved/)
  await refused(randomPhone(), randomApprovalNumber(), /names no KNS approval/)
})

test('an approval for another number is refused, without saying which number it was for', async () => {
  const { ref, phone } = await approvalFor()
  assertVerdict(await verifySignature(h, ref, await signApproval(h, owner, ref)), true)
  const other = randomPhone()
  await refused(other, ref, /for another number$/)
  await assert.rejects(h.service.swaps.record([change(other, ref)], 'test'), (err: Error) => !err.message.includes(phone))
})
