/**
 * Managing webhooks: `kns webhook add|list|remove|test|deliveries|replay` and the same as
 * admin routes. The secret is shown once and stored sealed; URLs are checked; a vendor's
 * approvals key cannot manage webhooks.
 */
import { after, before, describe, test } from 'node:test'
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { recordOutboundRules } from '../../src/db/outbound-rules.ts'
import { startHarness, type Harness } from '../helpers.ts'
import { assertError } from '../support/kns.ts'
import { killAll, oneJson, runKns } from '../support/process.ts'
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.ts'

let h: Harness
let admin: string
let vendorKeyId: string
let receiver: WebhookReceiver

before(async () => {
  h = await startHarness({ WEBHOOK_ALLOW_PRIVATE: 'true', KNS_SECRET: randomBytes(32).toString('hex') })
  admin = await h.key({ scopes: ['webhooks'], vendor: 'Operator' })
  await h.key({ scopes: ['approvals'], vendor: 'Acme Bank' })
  vendorKeyId = (await h.service.db.get<{ id: string }>(`SELECT id FROM api_keys WHERE vendor = 'Acme Bank'`))!.id
  receiver = await startWebhookReceiver()
})
after(async () => {
  await killAll()
  await receiver?.close()
  await h?.close()
})

const call = (method: 'GET' | 'POST' | 'DELETE', url: string, payload?: unknown, key = admin) =>
  h.app.inject({ method, url, headers: { 'x-api-key': key }, ...(payload === undefined ? {} : { payload: payload as object }) })

describe('admin routes', () => {
  test('add (secret once, sealed at rest), list (no secret), test (delivered, verified), deliveries, remove', async () => {
    const added = await call('POST', '/api/v1/admin/webhooks', { keyId: vendorKeyId, url: receiver.url, events: ['approval.approved'] })
    assert.equal(added.statusCode, 201, added.body)
    const body = added.json() as { id: string; secret: string; events: string[] }
    assert.match(body.secret, /^whsec_[A-Za-z0-9+/]{43}=$/)
    assert.deepEqual(body.events, ['approval.approved'])
    const stored = await h.service.db.get<{ secret_sealed: string }>('SELECT secret_sealed FROM webhook_subscriptions WHERE id = $1', [body.id])
    assert.ok(!stored!.secret_sealed.includes(body.secret.slice(6, 20)), 'not stored in the clear')

    const listed = await call('GET', `/api/v1/admin/webhooks?keyId=${vendorKeyId}`)
    assert.equal(listed.statusCode, 200)
    assert.equal(listed.json().webhooks.length, 1)
    assert.doesNotMatch(listed.body, /whsec_/)

    receiver.secret = body.secret
    const tested = await call('POST', `/api/v1/admin/webhooks/${body.id}/test`)
    assert.equal(tested.statusCode, 200, tested.body)
    assert.deepEqual({ ...(tested.json() as object), eventId: 'x' }, { eventId: 'x', delivered: true, status: 204, error: null })
    const [delivery] = await receiver.waitFor(1)
    assert.equal(delivery!.verifyError, null)
    assert.equal(delivery!.verified!.type, 'webhook.test')

    const deliveries = await call('GET', '/api/v1/admin/webhook-deliveries?limit=5')
    assert.equal(deliveries.statusCode, 200, deliveries.body)
    assert.equal(deliveries.json().deliveries[0].state, 'delivered')
    assertError(await call('POST', `/api/v1/admin/webhook-events/${tested.json().eventId}/replay`), 400, 'INVALID_REQUEST', 'eventId')

    const removed = await call('DELETE', `/api/v1/admin/webhooks/${body.id}`)
    assert.equal(removed.statusCode, 200)
    assertError(await call('DELETE', `/api/v1/admin/webhooks/${body.id}`), 404, 'NOT_FOUND')
  })

  test('the per-key quota (10 webhooks) holds for adds started together: exactly 10 of 20', async () => {
    await h.key({ scopes: ['approvals'], vendor: 'Quota Race' })
    const keyId = (await h.service.db.get<{ id: string }>(`SELECT id FROM api_keys WHERE vendor = 'Quota Race'`))!.id
    const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => call('POST', '/api/v1/admin/webhooks', { keyId, url: `${receiver.url}?n=${i}` })))
    assert.deepEqual(answers.map((a) => a.statusCode).sort(), [...Array(10).fill(201), ...Array(10).fill(400)], answers.map((a) => a.body).join('\n'))
    const live = await h.service.db.get<{ n: number }>('SELECT COUNT(*) AS n FROM webhook_subscriptions WHERE api_key_id = $1 AND removed_at IS NULL', [keyId])
    assert.equal(Number(live!.n), 10)
  })

  test('refused: a non-admin key, a URL that is not https on a public address (without the development flag), an unknown key', async () => {
    const vendorKey = await h.key({ scopes: ['approvals'], vendor: 'Someone' })
    assertError(await call('GET', '/api/v1/admin/webhooks', undefined, vendorKey), 403, 'FORBIDDEN')
    assertError(await call('POST', '/api/v1/admin/webhooks', { keyId: 'nope', url: 'https://hooks.example.com/' }), 404, 'NOT_FOUND', 'keyId')
    assertError(await call('POST', '/api/v1/admin/webhooks', { keyId: vendorKeyId, url: 'https://hooks.example.com/', events: ['approval.nope'] }), 400, 'INVALID_REQUEST')
    assertError(await call('POST', '/api/v1/admin/webhooks', { keyId: vendorKeyId, url: 'ftp://hooks.example.com/' }), 400, 'INVALID_REQUEST', 'url')
  })


  test('an undecodable id in the path: the key is checked first (401 without one), then the URL (400)', async () => {
    const url = `/api/v1/admin/webhooks/whk_${'0'.repeat(24)}%ZZ`
    assertError(await h.app.inject({ method: 'DELETE', url }), 401, 'UNAUTHORIZED')
    assertError(await call('DELETE', url, undefined, await h.key({ scopes: ['approvals'], vendor: 'Nobody' })), 403, 'FORBIDDEN')
    assertError(await call('DELETE', url), 400, 'INVALID_REQUEST')
  })
})

describe('kns webhook (CLI)', () => {
  test('add refuses http and private addresses unless WEBHOOK_ALLOW_PRIVATE; add, list, test, deliveries, replay, remove', async () => {
    const strictEnv = { ...h.env, WEBHOOK_ALLOW_PRIVATE: 'false' }
    for (const url of ['http://hooks.example.com/', 'https://127.0.0.1/', 'https://169.254.169.254/']) {
      const refused = await runKns(['webhook', 'add', '--key', vendorKeyId, '--url', url], strictEnv)
      assert.equal(refused.code, 2, refused.stderr)
      assert.match(refused.stderr, /webhook URL refused/)
    }
    const added = oneJson(await runKns(['webhook', 'add', '--key', vendorKeyId, '--url', receiver.url, '--json'], h.env))
    receiver.secret = String(added.secret)
    const listed = oneJson(await runKns(['webhook', 'list', '--key', vendorKeyId, '--json'], h.env))
    assert.ok((listed.webhooks as Array<{ id: string }>).some((w) => w.id === added.id))
    receiver.received.length = 0
    const tested = await runKns(['webhook', 'test', String(added.id)], h.env)
    assert.equal(tested.code, 0, tested.stderr)
    assert.match(tested.stdout, /delivered evt_[0-9a-f]{32}: the endpoint answered 204/)
    const [delivery] = await receiver.waitFor(1)
    assert.equal(delivery!.verifyError, null)
    const deliveries = oneJson(await runKns(['webhook', 'deliveries', '--limit', '3', '--json'], h.env))
    assert.equal((deliveries.deliveries as Array<{ eventId: string }>)[0]!.eventId, delivery!.id)
    const failedOnly = oneJson(await runKns(['webhook', 'deliveries', '--failed', '--json'], h.env))
    assert.deepEqual(failedOnly.deliveries, [])
    const unknown = await runKns(['webhook', 'replay', `evt_${'0'.repeat(32)}`], h.env)
    assert.equal(unknown.code, 1)
    assert.match(unknown.stderr, /no event/)
    const removed = await runKns(['webhook', 'remove', String(added.id)], h.env)
    assert.equal(removed.code, 0, removed.stderr)
  })

  test('test: a delivery that fails exits 1, the outcome printed (as text and as JSON)', async () => {
    // Port 9 (discard) on loopback: nothing listens, the connection is refused.
    const dead = oneJson(await runKns(['webhook', 'add', '--key', vendorKeyId, '--url', 'http://127.0.0.1:9/hook', '--json'], h.env))
    try {
      const tested = await runKns(['webhook', 'test', String(dead.id)], h.env)
      assert.equal(tested.code, 1, `${tested.stdout}\n${tested.stderr}`)
      assert.match(tested.stdout, /not delivered evt_[0-9a-f]{32}: network error \(ECONNREFUSED\)/)
      const asJson = await runKns(['webhook', 'test', String(dead.id), '--json'], h.env)
      assert.equal(asJson.code, 1)
      assert.equal(oneJson(asJson).delivered, false)
    } finally {
      await runKns(['webhook', 'remove', String(dead.id)], h.env)
    }
  })

  test('add judges the URL with the server\'s recorded WEBHOOK_ALLOW_PRIVATE, not the CLI\'s own', async () => {
    // As `kns serve` records it at start: this server does not allow private addresses.
    await recordOutboundRules(h.service.db, { ...h.service.config, webhookAllowPrivate: false })
    try {
      for (const url of ['http://127.0.0.1:8080/hook', 'https://127.0.0.1/hook', 'https://localhost/hook']) {
        const refused = await runKns(['webhook', 'add', '--key', vendorKeyId, '--url', url], { ...h.env, WEBHOOK_ALLOW_PRIVATE: 'true' })
        assert.equal(refused.code, 2, `${url}: ${refused.stdout}${refused.stderr}`)
        assert.match(refused.stderr, /webhook URL refused: .*\(a server started with WEBHOOK_ALLOW_PRIVATE=true allows them, for development\)/)
      }
      // A server that allows them: the CLI without the variable accepts what that server will deliver to.
      await recordOutboundRules(h.service.db, { ...h.service.config, webhookAllowPrivate: true })
      const accepted = await runKns(['webhook', 'add', '--key', vendorKeyId, '--url', 'http://127.0.0.1:9/hook', '--json'], { ...h.env, WEBHOOK_ALLOW_PRIVATE: 'false' })
      assert.equal(accepted.code, 0, accepted.stderr)
      await runKns(['webhook', 'remove', String(oneJson(accepted).id)], h.env)
    } finally {
      await h.service.db.run(`DELETE FROM settings WHERE name = 'server_outbound_rules'`)
    }
  })
})

describe('the admin API and the CLI judge a URL alike', () => {
  test('https://localhost (a name for a loopback address) is refused when saved, not at every delivery', async () => {
    const strict = await startHarness({ KNS_SECRET: randomBytes(32).toString('hex') })
    try {
      const adminKey = await strict.key({ scopes: ['webhooks'], vendor: 'Operator' })
      const keyId = (await strict.service.db.get<{ id: string }>(`SELECT id FROM api_keys WHERE vendor = 'Operator'`))!.id
      const viaApi = await strict.app.inject({ method: 'POST', url: '/api/v1/admin/webhooks', headers: { 'x-api-key': adminKey }, payload: { keyId, url: 'https://localhost/hook' } })
      assertError(viaApi, 400, 'INVALID_REQUEST', 'url')
      assert.match(viaApi.json().message, /the address of localhost is not allowed \(only public addresses are\)/)
      const viaCli = await runKns(['webhook', 'add', '--key', keyId, '--url', 'https://localhost/hook'], strict.env)
      assert.equal(viaCli.code, 2)
      assert.match(viaCli.stderr, /the address of localhost is not allowed/)
    } finally {
      await strict.close()
    }
  })
})
