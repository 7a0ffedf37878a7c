/**
 * One vendor's dead endpoint costs the others nothing (issue "Production under pressure", item
 * 4): as measured, a subscription whose endpoint never answers plus 150 of that vendor's own
 * decisions, beside another vendor's live endpoint. Per-endpoint concurrency and round-robin
 * claiming let the live one's delivery through at once; after failed attempts in a row the dead
 * one is paused (its breaker state in `kns webhook list`'s data and /metrics), and when it
 * answers again everything it missed is sent: nothing is lost.
 */
import assert from 'node:assert/strict'
import { createServer, type Server, type Socket } from 'node:net'
import { after, before, test } from 'node:test'
import { cancelApproval } from '../../src/approvals/cancel-approval.ts'
import { addSubscription, breakerState, findSubscription } from '../../src/events/webhooks/subscriptions.ts'
import { startHarness, type Harness } from '../helpers.ts'
import { approvalBody, createApproval, newKeypair, ownedToken } from '../support/kns.ts'
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.ts'

let h: Harness
let live: WebhookReceiver
let dead: Server
const held: Socket[] = []
/** While true the "dead" endpoint accepts connections and never answers. */
let silent = true
let deadUrl = ''

before(async () => {
  h = await startHarness({ WEBHOOK_ALLOW_PRIVATE: 'true', WEBHOOK_TIMEOUT_MS: '1500', WEBHOOK_RETRY_BASE_MS: '100' }, { events: true })
  live = await startWebhookReceiver()
  dead = createServer((socket) => {
    socket.on('error', () => {})
    if (silent) { held.push(socket); return }
    socket.once('data', () => socket.end('HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n'))
  })
  await new Promise<void>((resolve) => dead.listen(0, '127.0.0.1', resolve))
  const address = dead.address()
  deadUrl = `http://127.0.0.1:${typeof address === 'object' && address !== null ? address.port : 0}/hooks`
})
after(async () => {
  for (const s of held) s.destroy()
  await new Promise((resolve) => dead?.close(resolve))
  await live?.close()
  await h?.close()
})

async function vendor(name: string, url: string) {
  const key = await h.key({ scopes: ['approvals'], vendor: name })
  const keyId = (await h.service.db.get<{ id: string }>('SELECT id FROM api_keys WHERE vendor = $1', [name]))!.id
  const sub = await addSubscription(h.service.db, h.service.events.box, { keyId, url }, { allowPrivate: true })
  return { key, sub }
}

test('a dead endpoint with 150 deliveries queued does not delay another vendor\'s webhook; it is paused, then gets everything when it answers', async () => {
  const a = await vendor('Dead Endpoint Bank', deadUrl)
  const b = await vendor('Live Bank', live.url)
  live.secret = b.sub.secret
  // 150 decisions for the dead endpoint's vendor.
  const refs: string[] = []
  for (let i = 0; i < 150; i++) {
    const token = await ownedToken(h, newKeypair())
    refs.push(await createApproval(h, a.key, approvalBody({ phoneNumber: token.phoneNumber })))
  }
  for (const ref of refs) await cancelApproval(h.service.db, ref)
  h.service.events.deliveries.wake()
  await new Promise((resolve) => setTimeout(resolve, 300))

  // Then one for the live vendor: it arrives at once (it used to wait behind the dead one's slots).
  const token = await ownedToken(h, newKeypair())
  const ref = await createApproval(h, b.key, approvalBody({ phoneNumber: token.phoneNumber }))
  const decidedAt = Date.now()
  await cancelApproval(h.service.db, ref)
  h.service.events.deliveries.wake()
  const [delivery] = await live.waitFor(1, 10_000)
  const took = delivery!.receivedAt - decidedAt
  assert.ok(took < 1000, `the live vendor's webhook took ${took} ms`)
  // The dead endpoint never had more than its share of attempts in flight.
  assert.ok(held.length <= 8, `${held.length} connections to the dead endpoint at once`)

  // After failed attempts in a row it is paused: nothing more is sent to it meanwhile.
  const deadline = Date.now() + 15_000
  let state = ''
  while (Date.now() < deadline) {
    state = breakerState(await findSubscription(h.service.db, a.sub.id), h.service.config.webhookBreakerFailures)
    if (state === 'paused') break
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  assert.equal(state, 'paused')
  const metrics = await h.app.inject({ method: 'GET', url: '/metrics' })
  assert.match(metrics.body, new RegExp(`kns_webhook_endpoint_paused\\{webhook="${a.sub.id}"\\} 1`))
  const listed = await h.app.inject({ method: 'GET', url: '/api/v1/admin/webhooks', headers: { 'x-api-key': await h.key({ scopes: ['webhooks'] }) } })
  const entry = (listed.json() as { webhooks: Array<{ id: string; delivery: { state: string; consecutiveFailures: number } }> }).webhooks.find((w) => w.id === a.sub.id)!
  assert.equal(entry.delivery.state, 'paused')
  assert.ok(entry.delivery.consecutiveFailures >= h.service.config.webhookBreakerFailures)
  const given = await h.service.db.get<{ n: number }>(`SELECT COUNT(*) AS n FROM webhook_deliveries WHERE subscription_id = $1 AND state = 'failed'`, [a.sub.id])
  assert.equal(Number(given!.n), 0, 'nothing given up while paused')

  // The endpoint answers again; the pause ends (here: at once), one probe, then the backlog.
  silent = false
  for (const s of held.splice(0)) s.destroy()
  // The attempts that were hanging fail now and are recorded (they may pause it again): wait for them first.
  const settled = Date.now() + 10_000
  while (Date.now() < settled) {
    const busy = await h.service.db.get<{ n: number }>(`SELECT COUNT(*) AS n FROM webhook_deliveries WHERE subscription_id = $1 AND state = 'pending' AND claim IS NOT NULL`, [a.sub.id])
    if (Number(busy!.n) === 0) break
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  await h.service.db.run('UPDATE webhook_subscriptions SET paused_until = $1 WHERE id = $2', [Date.now() - 1, a.sub.id])
  await h.service.db.run(`UPDATE webhook_deliveries SET next_attempt_at = $1 WHERE subscription_id = $2 AND state = 'pending'`, [Date.now() - 1, a.sub.id])
  h.service.events.deliveries.wake()
  const done = Date.now() + 30_000
  let delivered = 0
  while (Date.now() < done) {
    delivered = Number((await h.service.db.get<{ n: number }>(`SELECT COUNT(*) AS n FROM webhook_deliveries WHERE subscription_id = $1 AND state = 'delivered'`, [a.sub.id]))!.n)
    if (delivered === 150) break
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  assert.equal(delivered, 150, 'every delivery the paused endpoint missed was sent when it answered')
  assert.equal(breakerState(await findSubscription(h.service.db, a.sub.id), h.service.config.webhookBreakerFailures), 'active')
})
