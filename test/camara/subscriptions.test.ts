import { test } from 'node:test'
import assert from 'node:assert/strict'
import { startHarness, type Harness } from '../helpers.ts'
import type { CamaraAccess } from '../../src/camara/access.ts'
import { CamaraError } from '../../src/camara/camara-error.ts'
import { CamaraSubscriptions } from '../../src/camara/subscriptions/subscriptions.ts'
import type { SubscriptionRequest } from '../../src/camara/subscriptions/create-subscription.ts'
import { SUBSCRIPTION_ENDED_TYPE, SWAPPED_TYPE } from '../../src/camara/subscriptions/subscription.ts'
import { subscriptionView } from '../../src/camara/subscriptions/subscription-view.ts'
import { replayEvent } from '../../src/events/webhooks/deliveries.ts'
import { startCloudEventsSink, type CloudEventsSink } from '../support/cloudevents-sink.ts'

const NUMBER = '+447700900123'
const OTHER = '+447700900456'
const twoLegged = (clientId = 'cl_bank'): CamaraAccess => ({ clientId, scopes: new Set(), phoneNumber: null, tokenId: 'jti-1' })
const threeLegged = (phoneNumber: string, clientId = 'cl_bank'): CamaraAccess => ({ clientId, scopes: new Set(), phoneNumber, tokenId: 'jti-2' })

function request(sink: string, overrides: Partial<SubscriptionRequest> & { phoneNumber?: string | null } = {}): SubscriptionRequest {
  const { phoneNumber, ...rest } = overrides
  return {
    protocol: 'HTTP', sink, types: [SWAPPED_TYPE],
    sinkCredential: { credentialType: 'ACCESSTOKEN', accessToken: 'sink-token-123', accessTokenType: 'bearer', accessTokenExpiresUtc: new Date(Date.now() + 3600_000).toISOString() },
    config: { subscriptionDetail: phoneNumber === null ? {} : { phoneNumber: phoneNumber ?? NUMBER } },
    ...rest,
  }
}

async function record(h: Harness, subscriptions: CamaraSubscriptions, phone: string, kind: string, changedAt: number, eventId: string): Promise<number> {
  const queued = await h.service.db.transaction(async (tx) => {
    await tx.run(`INSERT INTO sim_changes (event_id, phone, kind, changed_at, approval_number, recorded_by, recorded_at) VALUES ($1, $2, $3, $4, NULL, 'test', $5)`,
      [eventId, phone, kind, changedAt, Date.now()])
    return subscriptions.changesRecorded(tx, [{ phone, kind: kind as 'sim-change', changedAt }])
  })
  h.service.events.decided()
  return queued
}

async function withSubscriptions(fn: (h: Harness, subscriptions: CamaraSubscriptions, sink: CloudEventsSink) => Promise<void>): Promise<void> {
  const h = await startHarness({ WEBHOOK_ALLOW_PRIVATE: 'true', WEBHOOK_RETRY_BASE_MS: '50' }, { events: true })
  const sink = await startCloudEventsSink()
  ;(h.service.events.outbound as { ca?: string }).ca = sink.ca
  const subscriptions = new CamaraSubscriptions(h.service.config, h.service.db, h.service.events)
  try {
    // Known numbers: each has its activation on record.
    await record(h, subscriptions, NUMBER, 'activation', Date.now() - 86_400_000 * 30, 'act-1')
    await record(h, subscriptions, OTHER, 'activation', Date.now() - 86_400_000 * 30, 'act-2')
    await fn(h, subscriptions, sink)
  } finally {
    await subscriptions.stop()
    await sink.close()
    await h.close()
  }
}

const refusal = async (promise: Promise<unknown>, status: number, code: string) => {
  await assert.rejects(promise, (err: unknown) => err instanceof CamaraError && err.status === status && err.code === code, `expected ${status} ${code}`)
}

test('a recorded SIM change reaches the sink as a swapped CloudEvent with the sink credential; the view never shows the credential', async () => {
  await withSubscriptions(async (h, subscriptions, sink) => {
    const created = await subscriptions.create(twoLegged(), request(sink.url, { config: { subscriptionDetail: { phoneNumber: NUMBER }, subscriptionMaxEvents: 5 } }))
    const view = subscriptionView(created)
    assert.equal(view.status, 'ACTIVE')
    assert.deepEqual(view.config.subscriptionDetail, { phoneNumber: NUMBER })
    assert.equal(JSON.stringify(view).includes('sink-token-123'), false)
    const changedAt = Date.now()
    assert.equal(await record(h, subscriptions, NUMBER, 'sim-change', changedAt, 'swap-1'), 1)
    await record(h, subscriptions, OTHER, 'sim-change', changedAt, 'swap-2')
    await record(h, subscriptions, NUMBER, 'device-change', changedAt, 'dev-1')
    const [received] = await sink.waitFor(1)
    assert.equal(received!.headers['content-type'], 'application/cloudevents+json')
    assert.equal(received!.headers.authorization, 'Bearer sink-token-123')
    assert.equal(received!.headers['x-correlator'], received!.event.id)
    assert.equal(received!.event.type, SWAPPED_TYPE)
    assert.equal(received!.event.specversion, '1.0')
    assert.equal(received!.event.time, new Date(changedAt).toISOString())
    assert.deepEqual(received!.event.data, { phoneNumber: NUMBER, subscriptionId: created.id })
    await new Promise((resolve) => setTimeout(resolve, 300))
    assert.equal(sink.received.length, 1, 'another number\'s change and a device change send nothing')
  })
})

test('subscriptionMaxEvents: the last allowed event ends the subscription (MAX_EVENTS_REACHED), in order, even when changes are recorded together', async () => {
  await withSubscriptions(async (h, subscriptions, sink) => {
    const created = await subscriptions.create(threeLegged(NUMBER), request(sink.url, { phoneNumber: null, config: { subscriptionDetail: {}, subscriptionMaxEvents: 2 } }))
    const now = Date.now()
    await Promise.all([0, 1, 2, 3].map((i) => record(h, subscriptions, NUMBER, 'sim-change', now + i, `swap-${i}`).catch(() => 0)))
    const events = await sink.waitFor(3)
    await new Promise((resolve) => setTimeout(resolve, 300))
    assert.deepEqual(sink.received.map((r) => r.event.type), [SWAPPED_TYPE, SWAPPED_TYPE, SUBSCRIPTION_ENDED_TYPE])
    assert.deepEqual(events[2]!.event.data, { subscriptionId: created.id, terminationReason: 'MAX_EVENTS_REACHED', terminationDescription: 'maximum number of events reached' })
    assert.equal('phoneNumber' in (events[0]!.event.data as object), false, 'a three-legged subscriber never gets the number back')
    assert.equal((await subscriptions.get(threeLegged(NUMBER), created.id)).status, 'EXPIRED')
  })
})

test('expiry and the sink token\'s expiry end subscriptions with their reason; deletion ends with SUBSCRIPTION_DELETED and then it is gone', async () => {
  await withSubscriptions(async (h, subscriptions, sink) => {
    const soon = Date.now() + 2000
    const expiring = await subscriptions.create(twoLegged(), request(sink.url, { config: { subscriptionDetail: { phoneNumber: NUMBER }, subscriptionExpireTime: new Date(soon).toISOString() } }))
    const tokenEnding = await subscriptions.create(twoLegged(), request(`${sink.url}/2`, {
      sinkCredential: { credentialType: 'ACCESSTOKEN', accessToken: 'short', accessTokenType: 'bearer', accessTokenExpiresUtc: String(Math.floor((Date.now() + 30_000) / 1000)) },
    }))
    const deleted = await subscriptions.create(twoLegged(), request(`${sink.url}/3`))
    assert.equal(await subscriptions.sweeper.sweep(Date.now(), { clientsGone: false }), 1, 'the token within a minute of its expiry')
    assert.equal(await subscriptions.sweeper.sweep(soon + 1, { clientsGone: false }), 1)
    await subscriptions.delete(twoLegged(), deleted.id)
    h.service.events.decided()
    const events = await sink.waitFor(3)
    const reasons = new Map(events.map((e) => [(e.event.data as { subscriptionId: string }).subscriptionId, (e.event.data as { terminationReason: string }).terminationReason]))
    assert.deepEqual(reasons, new Map([[tokenEnding.id, 'ACCESS_TOKEN_EXPIRED'], [expiring.id, 'SUBSCRIPTION_EXPIRED'], [deleted.id, 'SUBSCRIPTION_DELETED']]))
    await refusal(subscriptions.get(twoLegged(), deleted.id), 404, 'NOT_FOUND')
    assert.deepEqual((await subscriptions.list(twoLegged())).map((s) => s.status).sort(), ['EXPIRED', 'EXPIRED'])
    assert.equal(await record(h, subscriptions, NUMBER, 'sim-change', Date.now(), 'late'), 0, 'ended subscriptions hear nothing more')
  })
})

test('each check has its CAMARA code, and a refused request stores nothing', async () => {
  await withSubscriptions(async (h, subscriptions, sink) => {
    await refusal(subscriptions.create(twoLegged(), request(sink.url, { protocol: 'MQTT3' })), 400, 'INVALID_PROTOCOL')
    await refusal(subscriptions.create(twoLegged(), request(sink.url, { types: ['org.camaraproject.sim-swap-subscriptions.v0.other'] })), 400, 'INVALID_ARGUMENT')
    await refusal(subscriptions.create(twoLegged(), request(sink.url, { phoneNumber: null })), 422, 'MISSING_IDENTIFIER')
    await refusal(subscriptions.create(threeLegged(NUMBER), request(sink.url)), 422, 'UNNECESSARY_IDENTIFIER')
    await refusal(subscriptions.create(twoLegged(), request(sink.url, { sinkCredential: { credentialType: 'PLAIN' } })), 400, 'INVALID_CREDENTIAL')
    await refusal(subscriptions.create(twoLegged(), request(sink.url, { sinkCredential: { credentialType: 'ACCESSTOKEN', accessToken: 'x', accessTokenType: 'mac', accessTokenExpiresUtc: '2099-01-01T00:00:00Z' } })), 400, 'INVALID_TOKEN')
    await refusal(subscriptions.create(twoLegged(), request(sink.url, { sinkCredential: { credentialType: 'ACCESSTOKEN', accessToken: 'a\r\nX-Evil: 1', accessTokenType: 'bearer', accessTokenExpiresUtc: '2099-01-01T00:00:00Z' } })), 400, 'INVALID_ARGUMENT')
    await refusal(subscriptions.create(twoLegged(), request(sink.url, { sinkCredential: { credentialType: 'ACCESSTOKEN', accessToken: 'x', accessTokenType: 'bearer', accessTokenExpiresUtc: '2001-01-01T00:00:00Z' } })), 400, 'INVALID_ARGUMENT')
    await refusal(subscriptions.create(twoLegged(), request(sink.url, { config: { subscriptionDetail: { phoneNumber: NUMBER }, subscriptionExpireTime: '2001-01-01T00:00:00Z' } })), 400, 'INVALID_ARGUMENT')
    await refusal(subscriptions.create(twoLegged(), request(sink.url.replace('https:', 'http:'))), 400, 'INVALID_SINK')
    await refusal(subscriptions.create(twoLegged(), request(sink.url, { config: { subscriptionDetail: { phoneNumber: '+447700900999' } } })), 404, 'IDENTIFIER_NOT_FOUND')
    assert.deepEqual(await subscriptions.list(twoLegged()), [])
    const rows = await h.service.db.get<{ n: number }>(`SELECT COUNT(*) AS n FROM webhook_subscriptions WHERE format = 'cloudevents'`)
    assert.equal(Number(rows?.n), 0)
  })
})

test('one live subscription per client, number and sink, even when two are created together; clients and numbers see only their own', async () => {
  await withSubscriptions(async (_h, subscriptions, sink) => {
    const results = await Promise.allSettled([subscriptions.create(twoLegged(), request(sink.url)), subscriptions.create(twoLegged(), request(sink.url))])
    assert.deepEqual(results.map((r) => r.status).sort(), ['fulfilled', 'rejected'])
    const rejected = results.find((r) => r.status === 'rejected') as PromiseRejectedResult
    assert.ok(rejected.reason instanceof CamaraError && rejected.reason.status === 409 && rejected.reason.code === 'ALREADY_EXISTS')
    const mine = (results.find((r) => r.status === 'fulfilled') as PromiseFulfilledResult<{ id: string }>).value
    const theirs = await subscriptions.create(twoLegged('cl_other'), request(sink.url))
    const otherNumber = await subscriptions.create(threeLegged(OTHER), request(sink.url, { phoneNumber: null }))
    await refusal(subscriptions.get(twoLegged(), theirs.id), 404, 'NOT_FOUND')
    await refusal(subscriptions.delete(twoLegged(), theirs.id), 404, 'NOT_FOUND')
    await refusal(subscriptions.get(threeLegged(NUMBER), otherNumber.id), 404, 'NOT_FOUND')
    assert.deepEqual((await subscriptions.list(twoLegged())).map((s) => s.id).sort(), [mine.id, otherNumber.id].sort())
    assert.deepEqual((await subscriptions.list(threeLegged(OTHER))).map((s) => s.id), [otherNumber.id])
  })
})

test('a live subscription whose client is gone ends silently at the next check; ended ones past retention are pruned with their endpoint', async () => {
  await withSubscriptions(async (h, subscriptions, sink) => {
    // This test's clients were never registered with the provider: as if removed while subscribing.
    const created = await subscriptions.create(twoLegged('cl_removed'), request(sink.url))
    const ended = await subscriptions.create(twoLegged(), request(`${sink.url}/ended`))
    await subscriptions.delete(twoLegged(), ended.id)
    assert.equal(await subscriptions.sweeper.sweep(Date.now(), { clientsGone: false }), 0)
    assert.equal(await subscriptions.sweeper.sweep(Date.now(), { clientsGone: true }), 1, 'cl_removed\'s live one (the deleted one has ended already)')
    await refusal(subscriptions.get(twoLegged('cl_removed'), created.id), 404, 'NOT_FOUND')
    h.service.events.decided()
    await sink.waitFor(1)
    await new Promise((resolve) => setTimeout(resolve, 300))
    assert.deepEqual(sink.received.map((r) => (r.event.data as { terminationReason?: string }).terminationReason), ['SUBSCRIPTION_DELETED'], 'nothing is sent to a client that is gone')
    // The deleted one's delivery is on record: kept until the events prune removes it; then both go.
    assert.equal(await subscriptions.prune(0), 1, 'the silent one has no delivery left')
    await h.service.events.prune(-1)
    assert.equal(await subscriptions.prune(-1), 1)
    for (const id of [created.id, ended.id]) {
      assert.equal(await h.service.db.get('SELECT id FROM webhook_subscriptions WHERE id = $1', [id]), undefined)
    }
  })
})

test('kns webhook replay of a CAMARA event sends it to its own subscription again, never to the client\'s other sinks', async () => {
  await withSubscriptions(async (h, subscriptions, sink) => {
    const mine = await subscriptions.create(twoLegged(), request(sink.url))
    await subscriptions.create(twoLegged(), request(`${sink.url}/other-number`, { phoneNumber: OTHER }))
    await record(h, subscriptions, NUMBER, 'sim-change', Date.now(), 'swap-replayed')
    const [first] = await sink.waitFor(1)
    assert.deepEqual(await replayEvent(h.service.db, first!.event.id as string), { eventId: first!.event.id, deliveries: 1 })
    h.service.events.decided()
    const [, again] = await sink.waitFor(2)
    assert.equal(again!.body, first!.body, 'the same bytes under the same ID')
    assert.equal(again!.headers['x-correlator'], first!.event.id)
    assert.equal((again!.event.data as { subscriptionId: string }).subscriptionId, mine.id)
    await new Promise((resolve) => setTimeout(resolve, 300))
    assert.equal(sink.received.length, 2)
  })
})
