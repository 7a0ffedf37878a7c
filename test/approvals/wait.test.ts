/**
 * `transaction_details?wait=`: answered as soon as the approval is decided (in this process or
 * another), at its expiry, or when the time is up; at once when it is decided already.
 */
import { after, before, describe, test } from 'node:test'
import assert from 'node:assert/strict'
import { cancelApproval } from '../../src/approvals/cancel-approval.ts'
import { openService, type Service } from '../../src/service.ts'
import { startHarness, type Harness } from '../helpers.ts'
import { approvalBody, createApproval, newKeypair, ownedToken, setExpiry, signApproval, verifySignature } from '../support/kns.ts'

let h: Harness
let key: string
let other: Service

before(async () => {
  h = await startHarness()
  key = await h.key({ scopes: ['approvals'] })
  // A second service on the same database: another process, as far as the change signal goes.
  other = await openService(h.service.config)
})
after(async () => {
  await other?.close()
  await h.close()
})

async function pending(): Promise<{ ref: string; owner: ReturnType<typeof newKeypair> }> {
  const owner = newKeypair()
  const token = await ownedToken(h, owner)
  return { ref: await createApproval(h, key, approvalBody({ phoneNumber: token.phoneNumber })), owner }
}

async function waitFor(ref: string, seconds: number): Promise<{ status: number; body: Record<string, unknown>; ms: number }> {
  const started = performance.now()
  const res = await h.app.inject({ method: 'GET', url: `/numsys/transaction_details?ref=${ref}&wait=${seconds}` })
  return { status: res.statusCode, body: res.json(), ms: performance.now() - started }
}

/** kns_decision_waits on /metrics (what a cluster test polls to know a wait is held before deciding elsewhere). */
async function heldWaits(): Promise<number> {
  const metrics = (await h.app.inject({ method: 'GET', url: '/metrics' })).body
  return Number(/^kns_decision_waits (\S+)$/m.exec(metrics)?.[1] ?? Number.NaN)
}

describe('transaction_details?wait=', () => {
  test('answers when the approval is approved, not before, not at the end of the wait', async () => {
    const { ref, owner } = await pending()
    const signature = await signApproval(h, owner, ref)
    const waiting = waitFor(ref, 20)
    setTimeout(() => { void verifySignature(h, ref, signature) }, 300)
    const answer = await waiting
    assert.equal(answer.status, 200)
    assert.equal(answer.body.status, 'approved')
    assert.ok(answer.ms >= 250 && answer.ms < 10_000, `answered after ${answer.ms} ms`)
    assert.equal(h.service.decisionWaiters.size, 0, 'no waiter left behind')
  })

  test('a decision taken by another process wakes the wait (the change signal)', async () => {
    const { ref } = await pending()
    const waiting = waitFor(ref, 20)
    setTimeout(() => { void cancelApproval(other.db, ref) }, 200)
    const answer = await waiting
    assert.equal(answer.body.status, 'cancelled')
    assert.ok(answer.ms < 10_000, `answered after ${answer.ms} ms`)
  })

  test('still pending when the time is up: the same body, pending', async () => {
    const { ref } = await pending()
    const answer = await waitFor(ref, 1)
    assert.equal(answer.body.status, 'pending')
    assert.ok(answer.ms >= 950, `answered after ${answer.ms} ms`)
  })

  test('an expiry due before the end of the wait ends it, answering expired', async () => {
    const { ref } = await pending()
    await setExpiry(h, ref, Date.now() + 400)
    const answer = await waitFor(ref, 30)
    assert.equal(answer.body.status, 'expired')
    assert.ok(answer.ms < 5_000, `answered after ${answer.ms} ms`)
  })

  test('decided already, or wait=0: at once; unknown approval: 404; wait over 60: 400', async () => {
    const { ref } = await pending()
    await cancelApproval(h.service.db, ref)
    const decided = await waitFor(ref, 30)
    assert.equal(decided.body.status, 'cancelled')
    assert.ok(decided.ms < 2_000)
    assert.equal((await waitFor('a'.repeat(24), 5)).status, 404)
    assert.equal((await waitFor(ref, 61)).status, 400)
    assert.equal(h.service.decisionWaiters.size, 0)
  })

  test('100 waiters on one approval are all released by its decision; /metrics shows the waits held', async () => {
    const { ref } = await pending()
    const waits = Array.from({ length: 100 }, () => waitFor(ref, 30))
    await new Promise((resolve) => setTimeout(resolve, 100))
    assert.equal(h.service.decisionWaiters.size, 100)
    assert.equal(await heldWaits(), 100)
    await cancelApproval(h.service.db, ref)
    const answers = await Promise.all(waits)
    assert.ok(answers.every((a) => a.body.status === 'cancelled'))
    assert.equal(h.service.decisionWaiters.size, 0)
    assert.equal(await heldWaits(), 0)
  })
})

describe('transaction_details?wait= and its limits', () => {
  test('a spurious wake-up (changes missed: every waiter woken) does not end the wait early', async () => {
    const { ref } = await pending()
    const waiting = waitFor(ref, 2)
    await new Promise((resolve) => setTimeout(resolve, 150))
    // What a lost LISTEN connection does: wake everyone with "anything may have changed".
    h.service.decisionWaiters.wake(ref)
    const answer = await waiting
    assert.equal(answer.body.status, 'pending')
    assert.ok(answer.ms >= 1900, `answered after ${answer.ms} ms, before the time was up`)
  })

  test('closing the server answers every wait at once, with the current state', async () => {
    const own = await startHarness()
    try {
      const ownKey = await own.key({ scopes: ['approvals'] })
      const token = await ownedToken(own, newKeypair())
      const ref = await createApproval(own, ownKey, approvalBody({ phoneNumber: token.phoneNumber }))
      const started = performance.now()
      const waiting = own.app.inject({ method: 'GET', url: `/numsys/transaction_details?ref=${ref}&wait=60` })
      await new Promise((resolve) => setTimeout(resolve, 150))
      await own.app.close()
      const res = await waiting
      assert.equal(res.json().status, 'pending')
      assert.ok(performance.now() - started < 5_000, 'closing did not wait the minute out')
    } finally {
      await own.close()
    }
  })
})
