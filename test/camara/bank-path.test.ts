/**
 * A bank's whole path through the CAMARA APIs, as it would run it against a deployment: its
 * client registered with its own key pair, a two-legged token from the token endpoint
 * (private_key_jwt, scope alone), the operator reporting SIM changes through the admin API,
 * `check` true inside maxAge and false outside, `retrieve-date`, and a subscription whose
 * `swapped` CloudEvent reaches the bank's https sink with the bearer token it gave, then its
 * `subscription-ended` when the bank deletes it.
 */
import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import { FRAUD_PREVENTION_PURPOSE } from '../../src/camara/access.ts'
import { SUBSCRIPTION_ENDED_TYPE, SWAPPED_TYPE } from '../../src/camara/subscriptions/subscription.ts'
import { startCloudEventsSink, type CloudEventsSink } from '../support/cloudevents-sink.ts'
import { clientCredentials, registerCamaraClient, type CamaraTestClient } from '../support/camara-client.ts'
import { startLoginServer, type LoginServer } from '../support/login.ts'

const NUMBER = '+447700900321'
const HOUR = 3600_000
const SCOPE = ['sim-swap:check', 'sim-swap:retrieve-date', 'sim-swap-subscriptions:org.camaraproject.sim-swap-subscriptions.v0.swapped:create',
  'sim-swap-subscriptions:read', 'sim-swap-subscriptions:delete', FRAUD_PREVENTION_PURPOSE].join(' ')

let server: LoginServer
let sink: CloudEventsSink
let bank: CamaraTestClient
let operatorKey: string

before(async () => {
  server = await startLoginServer({ WEBHOOK_ALLOW_PRIVATE: 'true', WEBHOOK_RETRY_BASE_MS: '50' }, { events: true })
  server.h.service.camaraSubscriptions.start()
  sink = await startCloudEventsSink()
  // The bank's sink has its own certificate: the deliveries trust it as a deployment trusts the bank's CA.
  ;(server.h.service.events.outbound as { ca?: string }).ca = sink.ca
  bank = await registerCamaraClient(server, { scope: SCOPE, name: 'Acme Bank fraud engine' })
  operatorKey = await server.h.key({ scopes: ['sim-changes'], vendor: 'Operator OSS' })
})
after(async () => {
  await sink.close()
  await server.close()
})

async function call(method: string, path: string, token: string, body?: unknown, correlator?: string) {
  const res = await fetch(`${server.base}${path}`, {
    method, headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...(correlator === undefined ? {} : { 'x-correlator': correlator }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  })
  const text = await res.text()
  return { status: res.status, headers: res.headers, body: text === '' ? null : JSON.parse(text) as Record<string, unknown> }
}

async function reportChanges(changes: Array<{ eventId: string; kind: string; changedAt: number }>): Promise<void> {
  const res = await fetch(`${server.base}/api/v1/admin/sim-changes`, {
    method: 'POST', headers: { 'x-api-key': operatorKey, 'content-type': 'application/json' },
    body: JSON.stringify({ changes: changes.map((c) => ({ eventId: c.eventId, phoneNumber: NUMBER, kind: c.kind, changedAt: new Date(c.changedAt).toISOString() })) }),
  })
  assert.equal(res.status, 200, await res.text())
}

test('a bank checks a number after a recorded SIM change, subscribes, and hears the next one at its https sink', async () => {
  const answer = await clientCredentials(server, bank, { scope: SCOPE })
  assert.equal(answer.status, 200, JSON.stringify(answer.body))
  const token = answer.body.access_token as string

  const swappedAt = Date.now() - 3 * HOUR
  await reportChanges([{ eventId: 'oss-1', kind: 'activation', changedAt: Date.now() - 60 * 24 * HOUR }, { eventId: 'oss-2', kind: 'sim-change', changedAt: swappedAt }])

  const inside = await call('POST', '/sim-swap/v2/check', token, { phoneNumber: NUMBER, maxAge: 24 }, 'bank-check-1')
  assert.equal(inside.status, 200, JSON.stringify(inside.body))
  assert.deepEqual(inside.body, { swapped: true })
  assert.equal(inside.headers.get('x-correlator'), 'bank-check-1')
  assert.deepEqual((await call('POST', '/sim-swap/v2/check', token, { phoneNumber: NUMBER, maxAge: 2 })).body, { swapped: false })
  assert.deepEqual((await call('POST', '/sim-swap/v2/retrieve-date', token, { phoneNumber: NUMBER })).body, { latestSimChange: new Date(swappedAt).toISOString() })

  const created = await call('POST', '/sim-swap-subscriptions/v0.3/subscriptions', token, {
    protocol: 'HTTP', sink: sink.url, types: [SWAPPED_TYPE],
    sinkCredential: { credentialType: 'ACCESSTOKEN', accessToken: 'bank-sink-token', accessTokenType: 'bearer', accessTokenExpiresUtc: new Date(Date.now() + 24 * HOUR).toISOString() },
    config: { subscriptionDetail: { phoneNumber: NUMBER }, subscriptionMaxEvents: 5 },
  }, 'bank-subscribe-1')
  assert.equal(created.status, 201, JSON.stringify(created.body))
  assert.equal(created.headers.get('x-correlator'), 'bank-subscribe-1')
  const id = created.body!.id as string
  assert.equal(JSON.stringify(created.body).includes('bank-sink-token'), false, 'the sink credential is never shown back')
  assert.deepEqual((await call('GET', '/sim-swap-subscriptions/v0.3/subscriptions', token)).body, [created.body])
  assert.deepEqual((await call('GET', `/sim-swap-subscriptions/v0.3/subscriptions/${id}`, token)).body, created.body)

  const nextSwap = Date.now()
  await reportChanges([{ eventId: 'oss-3', kind: 'sim-change', changedAt: nextSwap }])
  const [swapped] = await sink.waitFor(1)
  assert.equal(swapped!.headers['content-type'], 'application/cloudevents+json')
  assert.equal(swapped!.headers.authorization, 'Bearer bank-sink-token')
  assert.equal(swapped!.event.type, SWAPPED_TYPE)
  assert.equal(swapped!.event.specversion, '1.0')
  assert.equal(swapped!.event.source, `${server.base}/sim-swap-subscriptions/v0.3`)
  assert.equal(swapped!.event.time, new Date(nextSwap).toISOString())
  assert.deepEqual(swapped!.event.data, { phoneNumber: NUMBER, subscriptionId: id })

  const deleted = await call('DELETE', `/sim-swap-subscriptions/v0.3/subscriptions/${id}`, token)
  assert.equal(deleted.status, 204)
  const [, ended] = await sink.waitFor(2)
  assert.equal(ended!.event.type, SUBSCRIPTION_ENDED_TYPE)
  assert.equal((ended!.event.data as { terminationReason: string }).terminationReason, 'SUBSCRIPTION_DELETED')
  const gone = await call('GET', `/sim-swap-subscriptions/v0.3/subscriptions/${id}`, token)
  assert.equal(gone.status, 404)
  assert.deepEqual(Object.keys(gone.body!).sort(), ['code', 'message', 'status'])
  assert.equal(gone.body!.code, 'NOT_FOUND')
})

test('the subscription routes refuse in CAMARA\'s shape: no token, a scope missing, a body not as defined, another client\'s subscription', async () => {
  const noToken = await fetch(`${server.base}/sim-swap-subscriptions/v0.3/subscriptions`)
  assert.equal(noToken.status, 401)
  assert.equal((await noToken.json() as { code: string }).code, 'UNAUTHENTICATED')
  const checker = await registerCamaraClient(server, { name: 'Acme Bank checks only' })
  const checkOnly = (await clientCredentials(server, checker)).body.access_token as string
  const denied = await call('GET', '/sim-swap-subscriptions/v0.3/subscriptions', checkOnly)
  assert.deepEqual([denied.status, denied.body!.code], [403, 'PERMISSION_DENIED'])
  const token = (await clientCredentials(server, bank, { scope: SCOPE })).body.access_token as string
  const notAUrl = await call('POST', '/sim-swap-subscriptions/v0.3/subscriptions', token, { protocol: 'HTTP', sink: 'not a url', types: [SWAPPED_TYPE], config: { subscriptionDetail: { phoneNumber: NUMBER } } })
  assert.deepEqual([notAUrl.status, notAUrl.body!.code], [400, 'INVALID_ARGUMENT'])
  const mqtt = await call('POST', '/sim-swap-subscriptions/v0.3/subscriptions', token, { protocol: 'MQTT5', sink: sink.url, types: [SWAPPED_TYPE], config: { subscriptionDetail: { phoneNumber: NUMBER } } })
  assert.deepEqual([mqtt.status, mqtt.body!.code], [400, 'INVALID_PROTOCOL'])
  const missing = await call('POST', '/sim-swap-subscriptions/v0.3/subscriptions', token, { protocol: 'HTTP', sink: sink.url, types: [SWAPPED_TYPE], config: { subscriptionDetail: {} } })
  assert.deepEqual([missing.status, missing.body!.code], [422, 'MISSING_IDENTIFIER'])
  const unknown = await call('GET', '/sim-swap-subscriptions/v0.3/subscriptions/3f1b6a52-8c1e-4d0c-9c55-2a7e0f6a1d93', token)
  assert.deepEqual([unknown.status, unknown.body!.code], [404, 'NOT_FOUND'])
  const method = await call('PUT', '/sim-swap-subscriptions/v0.3/subscriptions', token, {})
  assert.deepEqual([method.status, method.body!.code], [405, 'METHOD_NOT_ALLOWED'])
})
