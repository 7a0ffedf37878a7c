/**
 * Decisions become events, delivered as Standard Webhooks to the vendor whose key created the
 * approval: verified by an independent implementation (`standardwebhooks`) in a real HTTP
 * receiver, retried with the same webhook-id, in order, and given up after the schedule.
 */
import { after, before, beforeEach, describe, test } from 'node:test'
import assert from 'node:assert/strict'
import { cancelApproval } from '../../src/approvals/cancel-approval.ts'
import { addSubscription, removeSubscription } from '../../src/events/webhooks/subscriptions.ts'
import { listDeliveries, replayEvent } from '../../src/events/webhooks/deliveries.ts'
import { startHarness, type Harness } from '../helpers.ts'
import { approvalBody, createApproval, details, newKeypair, ownedToken, setExpiry, signApproval, verifySignature } from '../support/kns.ts'
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.ts'

let h: Harness
let receiver: WebhookReceiver
let keyId: string
let key: string

async function newKey(vendor: string): Promise<{ key: string; keyId: string }> {
  const raw = await h.key({ scopes: ['approvals'], vendor })
  const row = await h.service.db.get<{ id: string }>('SELECT id FROM api_keys WHERE vendor = $1 ORDER BY created_at DESC', [vendor])
  return { key: raw, keyId: row!.id }
}

async function subscribe(url: string, forKey: string, events?: string): Promise<string> {
  const sub = await addSubscription(h.service.db, h.service.events.box, { keyId: forKey, url, ...(events === undefined ? {} : { events }) }, { allowPrivate: true })
  return sub.secret
}

async function pendingApproval(withKey = key): Promise<{ ref: string; owner: ReturnType<typeof newKeypair> }> {
  const owner = newKeypair()
  const token = await ownedToken(h, owner)
  return { ref: await createApproval(h, withKey, approvalBody({ phoneNumber: token.phoneNumber })), owner }
}

before(async () => {
  h = await startHarness({ WEBHOOK_ALLOW_PRIVATE: 'true', WEBHOOK_RETRY_BASE_MS: '100', WEBHOOK_TIMEOUT_MS: '2000' }, { events: true })
  receiver = await startWebhookReceiver()
  ;({ key, keyId } = await newKey('Acme Bank'))
  receiver.secret = await subscribe(receiver.url, keyId)
})
after(async () => {
  await receiver?.close()
  await h?.close()
})
beforeEach(() => {
  receiver.received.length = 0
  receiver.respond = (_d, res) => { res.writeHead(204).end() }
})

describe('webhook deliveries', () => {
  test('an approval sends approval.approved, signed as Standard Webhooks, with the transaction_details fields', async () => {
    const { ref, owner } = await pendingApproval()
    const res = await verifySignature(h, ref, await signApproval(h, owner, ref))
    assert.equal(res.json().success, true)
    const [delivery] = await receiver.waitFor(1)
    assert.equal(delivery!.verifyError, null, 'standardwebhooks verifies the signature')
    const event = delivery!.verified!
    assert.equal(event.type, 'approval.approved')
    assert.equal(event.id, delivery!.id)
    assert.match(String(event.id), /^evt_[0-9a-f]{32}$/)
    const data = event.data as Record<string, unknown>
    const current = await details(h, ref)
    for (const field of ['approvalNumber', 'status', 'approved', 'wallet', 'objectId', 'title', 'message', 'method', 'vendorBrand', 'createdAt', 'expiresAt', 'phoneNumber']) {
      assert.deepEqual(data[field], current[field], field)
    }
    assert.equal(data.status, 'approved')
    assert.equal(data.signMessage, undefined)
    assert.ok(Math.abs(Date.parse(String(event.timestamp)) - Date.now()) < 10_000)
  })

  test('a cancellation sends approval.cancelled; an expiry sends approval.expired once, with nobody asking', async () => {
    const cancelled = await pendingApproval()
    assert.equal((await cancelApproval(h.service.db, cancelled.ref)).success, true)
    const expiring = await pendingApproval()
    const expiresAt = Date.now() - 1
    await setExpiry(h, expiring.ref, expiresAt)
    const deliveries = await receiver.waitFor(2)
    const byRef = new Map(deliveries.map((d) => [(d.verified!.data as { approvalNumber: string }).approvalNumber, d.verified!]))
    assert.equal(byRef.get(cancelled.ref)?.type, 'approval.cancelled')
    const expired = byRef.get(expiring.ref)!
    assert.equal(expired.type, 'approval.expired')
    assert.equal(expired.timestamp, new Date(expiresAt).toISOString(), 'an expiry happens at the expiry instant')
    assert.equal((expired.data as { status: string }).status, 'expired')
    assert.equal((await details(h, expiring.ref)).status, 'expired')
    await h.service.events.sweeper.sweep()
    await new Promise((resolve) => setTimeout(resolve, 300))
    assert.equal(receiver.received.filter((d) => (d.verified!.data as { approvalNumber: string }).approvalNumber === expiring.ref).length, 1, 'expired once')
  })

  test('a vendor hears only of approvals made with its own key, and only the types it asked for', async () => {
    const other = await newKey('Other Bank')
    const otherReceiver = await startWebhookReceiver('/other')
    try {
      otherReceiver.secret = await subscribe(otherReceiver.url, other.keyId, 'approval.cancelled')
      const mine = await pendingApproval()
      await cancelApproval(h.service.db, mine.ref)
      const theirs = await pendingApproval(other.key)
      const approvedTheirs = await pendingApproval(other.key)
      await verifySignature(h, approvedTheirs.ref, await signApproval(h, approvedTheirs.owner, approvedTheirs.ref))
      await cancelApproval(h.service.db, theirs.ref)
      const [got] = await otherReceiver.waitFor(1)
      assert.equal((got!.verified!.data as { approvalNumber: string }).approvalNumber, theirs.ref)
      await receiver.waitFor(1)
      await new Promise((resolve) => setTimeout(resolve, 500))
      assert.equal(otherReceiver.received.length, 1, 'not the approved one (not subscribed), not the other vendor\'s')
      assert.deepEqual(receiver.received.map((d) => (d.verified!.data as { approvalNumber: string }).approvalNumber), [mine.ref])
    } finally {
      await otherReceiver.close()
    }
  })

  test('an endpoint that fails (5xx, redirect) is retried with the same webhook-id and body until it answers 2xx', async () => {
    let answers = 0
    receiver.respond = (_d, res) => {
      answers++
      if (answers === 1) res.writeHead(503).end('down for maintenance')
      else if (answers === 2) res.writeHead(302, { location: 'http://127.0.0.1:1/elsewhere' }).end()
      else res.writeHead(200).end('ok')
    }
    const { ref } = await pendingApproval()
    await cancelApproval(h.service.db, ref)
    const attempts = await receiver.waitFor(3)
    assert.equal(new Set(attempts.map((a) => a.id)).size, 1, 'one webhook-id on every attempt')
    assert.equal(new Set(attempts.map((a) => a.body)).size, 1, 'the same body')
    assert.ok(attempts.every((a) => a.verifyError === null))
    await waitUntil(async () => (await listDeliveries(h.service.db, { eventId: attempts[0]!.id, limit: 5 }))[0]?.state === 'delivered')
    const [record] = await listDeliveries(h.service.db, { eventId: attempts[0]!.id, limit: 5 })
    assert.equal(record!.attempts, 3)
    assert.equal(record!.lastStatus, 200)
    await new Promise((resolve) => setTimeout(resolve, 400))
    assert.equal(receiver.received.length, 3, 'nothing after the 2xx')
  })

  test('an endpoint that is down (connection refused) for a while gets the event once it is back', async () => {
    const down = await startWebhookReceiver('/down')
    const port = Number(new URL(down.url).port)
    const secret = await subscribe(down.url, keyId)
    await down.close()
    const { ref } = await pendingApproval()
    await cancelApproval(h.service.db, ref)
    await waitUntil(async () => {
      const [d] = await h.service.db.all<{ attempts: number }>(
        `SELECT d.attempts FROM webhook_deliveries d JOIN webhook_subscriptions s ON s.id = d.subscription_id WHERE s.url = $1 AND d.approval_number = $2`, [down.url, ref])
      return (d?.attempts ?? 0) >= 2
    })
    const back = await startWebhookReceiver('/down', port)
    try {
      back.secret = secret
      const [delivery] = await back.waitFor(1)
      assert.equal(delivery!.verifyError, null)
      assert.equal((delivery!.verified!.data as { approvalNumber: string }).approvalNumber, ref)
    } finally {
      await back.close()
      const sub = await h.service.db.get<{ id: string }>('SELECT id FROM webhook_subscriptions WHERE url = $1', [down.url])
      await removeSubscription(h.service.db, sub!.id)
    }
    await receiver.waitFor(1)
  })

  test('a removed subscription hears nothing more; a replay sends the same event again', async () => {
    const { ref } = await pendingApproval()
    await cancelApproval(h.service.db, ref)
    const [first] = await receiver.waitFor(1)
    const replayed = await replayEvent(h.service.db, first!.id)
    assert.equal(replayed.deliveries, 1)
    h.service.events.deliveries.wake()
    const [, again] = await receiver.waitFor(2)
    assert.equal(again!.id, first!.id)
    assert.equal(again!.body, first!.body)

    const extra = await startWebhookReceiver('/removed')
    try {
      const sub = await addSubscription(h.service.db, h.service.events.box, { keyId, url: extra.url }, { allowPrivate: true })
      await removeSubscription(h.service.db, sub.id)
      const next = await pendingApproval()
      await cancelApproval(h.service.db, next.ref)
      await receiver.waitFor(3)
      await new Promise((resolve) => setTimeout(resolve, 300))
      assert.equal(extra.received.length, 0)
    } finally {
      await extra.close()
    }
  })

  test('a decision and its event commit together: when the event cannot be written, the decision is not taken either', async () => {
    const { ref } = await pendingApproval()
    await h.service.db.exec('ALTER TABLE webhook_subscriptions RENAME TO webhook_subscriptions_away')
    try {
      await assert.rejects(cancelApproval(h.service.db, ref))
    } finally {
      await h.service.db.exec('ALTER TABLE webhook_subscriptions_away RENAME TO webhook_subscriptions')
    }
    assert.equal((await details(h, ref)).status, 'pending', 'no decision without its event')
    const events = await h.service.db.all('SELECT * FROM approval_events WHERE approval_number = $1', [ref])
    assert.equal(events.length, 0, 'no event without its decision')
    assert.equal((await cancelApproval(h.service.db, ref)).success, true)
    const [delivery] = await receiver.waitFor(1)
    assert.equal(delivery!.verified!.type, 'approval.cancelled')
  })
})

describe('observability', () => {
  test('/metrics counts deliveries and expiries; /readyz reports the watcher and stays ready', async () => {
    const metrics = (await h.app.inject({ method: 'GET', url: '/metrics' })).body
    const value = (line: RegExp) => Number(line.exec(metrics)?.[1] ?? Number.NaN)
    assert.ok(value(/^kns_webhook_deliveries_total\{result="delivered"\} (\d+)/m) >= 5, metrics)
    assert.ok(value(/^kns_webhook_deliveries_total\{result="retried"\} (\d+)/m) >= 2)
    assert.ok(value(/^kns_approvals_expired_total (\d+)/m) >= 1)
    assert.ok(value(/^kns_webhook_oldest_pending_age_seconds (\S+)/m) < 5, 'nothing left waiting')
    assert.match(metrics, /^kns_ledger_watch_lag_seconds \S+/m)
    const ready = await h.app.inject({ method: 'GET', url: '/readyz' })
    assert.equal(ready.statusCode, 200)
    assert.match(ready.json().watcher, /^watching/)
  })
})

async function waitUntil(condition: () => Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error('condition not met in time')
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}
