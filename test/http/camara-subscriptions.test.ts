/**
 * SIM Swap Subscriptions over HTTP against hostile input: every refusal in CAMARA's shape with
 * the definition's code, nothing stored by a refused request, the sink credential and the sink's
 * address held to the outbound rules, IDs that are not IDs, creates raced, deletes repeated,
 * and each caller (client, three-legged number) seeing only its own subscriptions.
 */
import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import { SWAPPED_TYPE } from '../../src/camara/subscriptions/subscription.ts'
import { MAX_LIVE_SUBSCRIPTIONS_PER_CLIENT } from '../../src/camara/subscriptions/create-subscription.ts'
import { startHarness, type Harness } from '../helpers.ts'
import { addUser, bearer, camaraToken, DAY_MS, recordChange } from '../camara/support.ts'

const URL = '/sim-swap-subscriptions/v0.3/subscriptions'
const PHONE = '+447911223301'
const OTHER_PHONE = '+447911223302'
const SINK = 'https://127.0.0.1/bank/camara/sink'

let h: Harness
let token: string
before(async () => {
  // Loopback sinks are taken (no delivery is attempted: the harness starts no worker); the one
  // test of the rule itself has a server of its own without the switch.
  h = await startHarness({ WEBHOOK_ALLOW_PRIVATE: 'true' })
  token = await camaraToken(h.service)
  for (const phone of [PHONE, OTHER_PHONE]) await recordChange(h.service, phone, 'activation', Date.now() - 30 * DAY_MS)
})
after(async () => { await h.close() })

const inADay = () => new Date(Date.now() + DAY_MS).toISOString()
let sinks = 0
/** A fresh sink each call: one live subscription per client, number and sink. */
const freshSink = () => `${SINK}/${++sinks}`

function body(overrides: Record<string, unknown> = {}, config: Record<string, unknown> = {}) {
  return {
    protocol: 'HTTP', sink: freshSink(), types: [SWAPPED_TYPE],
    sinkCredential: { credentialType: 'ACCESSTOKEN', accessToken: 'sink-token-1', accessTokenExpiresUtc: inADay(), accessTokenType: 'bearer' },
    config: { subscriptionDetail: { phoneNumber: PHONE }, ...config },
    ...overrides,
  }
}

type Answer = { statusCode: number; body: string; headers: Record<string, unknown>; json(): any }

function create(payload: unknown, options: { token?: string; headers?: Record<string, string>; app?: Harness } = {}): Promise<Answer> {
  return (options.app ?? h).app.inject({
    method: 'POST', url: URL, headers: { ...bearer(options.token ?? token), 'content-type': 'application/json', ...options.headers },
    payload: typeof payload === 'string' ? payload : JSON.stringify(payload),
  })
}

const call = (method: 'GET' | 'DELETE', path: string, options: { token?: string; headers?: Record<string, string> } = {}) =>
  h.app.inject({ method, url: `${URL}${path}`, headers: { ...bearer(options.token ?? token), ...options.headers } })

/** CAMARA's error shape, exactly, with this status and code. */
function assertCamaraError(res: Answer, status: number, code: string, what = ''): void {
  assert.equal(res.statusCode, status, `${what}: ${res.body}`)
  const answer = JSON.parse(res.body) as Record<string, unknown>
  assert.deepEqual(Object.keys(answer).sort(), ['code', 'message', 'status'], what)
  assert.equal(answer.status, status, what)
  assert.equal(answer.code, code, what)
  assert.ok(typeof answer.message === 'string' && answer.message.length > 0, what)
}

async function storedCount(): Promise<number> {
  const row = await h.service.db.get<{ n: number | string }>('SELECT COUNT(*) AS n FROM camara_subscriptions')
  return Number(row?.n ?? 0)
}

/** Each refused create is refused with its code and stores nothing. */
async function refusedWithoutTrace(cases: Array<[string, unknown, number, string]>, options: { app?: Harness } = {}): Promise<void> {
  const db = (options.app ?? h).service.db
  const count = async () => Number((await db.get<{ n: number | string }>('SELECT COUNT(*) AS n FROM camara_subscriptions'))?.n ?? 0)
  const before = await count()
  for (const [what, payload, status, code] of cases) assertCamaraError(await create(payload, options), status, code, what)
  assert.equal(await count(), before, 'a refused create stored something')
}

test('a sink credential that could break a header, or is huge, or is not an access token, is refused with its code', async () => {
  const credential = (fields: Record<string, unknown>) => body({ sinkCredential: { ...body().sinkCredential, ...fields } })
  await refusedWithoutTrace([
    ['CR/LF in the token', credential({ accessToken: 'tok\r\nX-Injected: 1' }), 400, 'INVALID_ARGUMENT'],
    ['LF alone', credential({ accessToken: 'tok\nx' }), 400, 'INVALID_ARGUMENT'],
    ['a space', credential({ accessToken: 'tok x' }), 400, 'INVALID_ARGUMENT'],
    ['a NUL', credential({ accessToken: 'tok\u0000' }), 400, 'INVALID_ARGUMENT'],
    ['a 5000-character token', credential({ accessToken: 'a'.repeat(5000) }), 400, 'INVALID_ARGUMENT'],
    ['a 100 000-character token', credential({ accessToken: 'a'.repeat(100_000) }), 400, 'INVALID_ARGUMENT'],
    ['no token', credential({ accessToken: undefined }), 400, 'INVALID_ARGUMENT'],
    ['an expired token', credential({ accessTokenExpiresUtc: new Date(Date.now() - 1000).toISOString() }), 400, 'INVALID_ARGUMENT'],
    ['an expiry that is not a date', credential({ accessTokenExpiresUtc: 'tomorrow' }), 400, 'INVALID_ARGUMENT'],
    ['an expiry on February 30th', credential({ accessTokenExpiresUtc: '2031-02-30T00:00:00Z' }), 400, 'INVALID_ARGUMENT'],
    ['a PLAIN credential', body({ sinkCredential: { credentialType: 'PLAIN', identifier: 'bank', secret: 's3cret' } }), 400, 'INVALID_CREDENTIAL'],
    ['a token type other than bearer', credential({ accessTokenType: 'mac' }), 400, 'INVALID_TOKEN'],
  ])
})

test('a sink on a loopback, private or link-local address is 400 INVALID_SINK without WEBHOOK_ALLOW_PRIVATE', async () => {
  const strict = await startHarness()
  try {
    const strictToken = await camaraToken(strict.service)
    await recordChange(strict.service, PHONE, 'activation', Date.now() - DAY_MS)
    const sinks = ['https://127.0.0.1/sink', 'https://127.1/sink', 'https://0x7f000001/sink', 'https://[::1]/sink', 'https://[::ffff:127.0.0.1]/sink',
      'https://10.0.0.7/sink', 'https://192.168.1.1/sink', 'https://169.254.169.254/latest/meta-data', 'https://0.0.0.0/sink', 'https://localhost/sink']
    const db = strict.service.db
    for (const sink of sinks) {
      const res = await create(body({ sink }), { token: strictToken, app: strict })
      assertCamaraError(res, 400, 'INVALID_SINK', sink)
    }
    assert.equal(Number((await db.get<{ n: number }>('SELECT COUNT(*) AS n FROM camara_subscriptions'))?.n), 0)
  } finally {
    await strict.close()
  }
})

test('a sink with credentials in it, over http, not a URL or past 2048 characters is refused; the password is not echoed', async () => {
  const withPassword = await create(body({ sink: 'https://bank:hunter2@127.0.0.1/sink' }))
  assertCamaraError(withPassword, 400, 'INVALID_SINK', 'userinfo')
  assert.doesNotMatch(withPassword.body, /hunter2/)
  await refusedWithoutTrace([
    ['a user name alone', body({ sink: 'https://bank@127.0.0.1/sink' }), 400, 'INVALID_SINK'],
    ['a 5000-character sink', body({ sink: `https://127.0.0.1/${'a'.repeat(4982)}` }), 400, 'INVALID_ARGUMENT'],
    ['a sink past 2048 characters once percent-encoded', body({ sink: `https://127.0.0.1/${'é'.repeat(1000)}` }), 400, 'INVALID_SINK'],
    ['http', body({ sink: 'http://127.0.0.1/sink' }), 400, 'INVALID_ARGUMENT'],
    ['not a URL', body({ sink: 'https://' }), 400, 'INVALID_ARGUMENT'],
    ['https:// then spaces', body({ sink: 'https://   ' }), 400, 'INVALID_SINK'],
    ['a CR/LF in the sink', body({ sink: 'https://127.0.0.1/a\r\nHost: evil' }), 400, 'INVALID_ARGUMENT'],
  ])
})

test('types, subscriptionMaxEvents, subscriptionExpireTime, unknown protocol: each refused with its code', async () => {
  await refusedWithoutTrace([
    ['two types', body({ types: [SWAPPED_TYPE, SWAPPED_TYPE] }), 400, 'INVALID_ARGUMENT'],
    ['no types', body({ types: [] }), 400, 'INVALID_ARGUMENT'],
    ['another type', body({ types: ['org.camaraproject.sim-swap-subscriptions.v0.subscription-ended'] }), 400, 'INVALID_ARGUMENT'],
    ['subscriptionMaxEvents 0', body({}, { subscriptionMaxEvents: 0 }), 400, 'OUT_OF_RANGE'],
    ['subscriptionMaxEvents -1', body({}, { subscriptionMaxEvents: -1 }), 400, 'OUT_OF_RANGE'],
    ['subscriptionMaxEvents 1e9', body({}, { subscriptionMaxEvents: 1e9 }), 400, 'OUT_OF_RANGE'],
    ['subscriptionMaxEvents 1.5', body({}, { subscriptionMaxEvents: 1.5 }), 400, 'INVALID_ARGUMENT'],
    ['subscriptionMaxEvents "5"', body({}, { subscriptionMaxEvents: '5' }), 400, 'INVALID_ARGUMENT'],
    ['subscriptionExpireTime not a date', body({}, { subscriptionExpireTime: 'next week' }), 400, 'INVALID_ARGUMENT'],
    ['subscriptionExpireTime without a zone', body({}, { subscriptionExpireTime: '2030-01-01T00:00:00' }), 400, 'INVALID_ARGUMENT'],
    // Date.parse would read it as 2031-03-02: a date no calendar has is refused, not moved.
    ['subscriptionExpireTime on February 30th', body({}, { subscriptionExpireTime: '2031-02-30T00:00:00Z' }), 400, 'INVALID_ARGUMENT'],
    ['subscriptionExpireTime past', body({}, { subscriptionExpireTime: new Date(Date.now() - 60_000).toISOString() }), 400, 'INVALID_ARGUMENT'],
    ['MQTT', body({ protocol: 'MQTT5' }), 400, 'INVALID_PROTOCOL'],
    ['no protocol', body({ protocol: undefined }), 400, 'INVALID_ARGUMENT'],
    ['no sink', body({ sink: undefined }), 400, 'INVALID_ARGUMENT'],
    ['no config', body({ config: undefined }), 400, 'INVALID_ARGUMENT'],
    ['no phoneNumber (two-legged)', body({ config: { subscriptionDetail: {} } }), 422, 'MISSING_IDENTIFIER'],
    ['a number KNS does not know', body({ config: { subscriptionDetail: { phoneNumber: '+447911000000' } } }), 404, 'IDENTIFIER_NOT_FOUND'],
  ])
})

test('unknown properties are dropped (as everywhere in the API): neither stored nor shown', async () => {
  const payload = { ...body(), extra: { a: 1 }, __proto__x: 1 }
  payload.config = { ...payload.config, unknownKnob: true } as typeof payload.config
  const res = await create(payload)
  assert.equal(res.statusCode, 201, res.body)
  assert.doesNotMatch(res.body, /extra|unknownKnob|__proto__x|sink-token-1/)
})

test('a body that is not JSON is 400 INVALID_ARGUMENT; another content type 415 UNSUPPORTED_MEDIA_TYPE; nothing stored', async () => {
  const before = await storedCount()
  for (const payload of ['{', '{"protocol":"HTTP",}', 'null', '[]', '"HTTP"', '']) {
    const res = await h.app.inject({ method: 'POST', url: URL, headers: { ...bearer(token), 'content-type': 'application/json' }, payload })
    assertCamaraError(res, 400, 'INVALID_ARGUMENT', JSON.stringify(payload))
  }
  for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'application/cloudevents+json', 'application/xml']) {
    const res = await h.app.inject({ method: 'POST', url: URL, headers: { ...bearer(token), 'content-type': type }, payload: JSON.stringify(body()) })
    assertCamaraError(res, 415, 'UNSUPPORTED_MEDIA_TYPE', type)
  }
  assert.equal(await storedCount(), before)
})

test('a subscriptionId of 200 characters, with ../ or other junk is 400 INVALID_ARGUMENT; an unknown one 404 NOT_FOUND', async () => {
  for (const method of ['GET', 'DELETE'] as const) {
    // (`..` and `%2E%2E` alone are dot segments: URL parsers, the test client's too, resolve them before any server sees them.)
    for (const id of ['a'.repeat(200), '..%2F..%2Fadmin', '..%2Fsubscriptions', '.%2E%2Fx', 'a%00b', '%ZZ', 'a%20b', 'x;y', 'a.b']) {
      const res = await call(method, `/${id}`)
      assertCamaraError(res, 400, 'INVALID_ARGUMENT', `${method} ${id.slice(0, 20)}`)
    }
    assertCamaraError(await call(method, '/3f1b6a52-8c1e-4d0c-9c55-2a7e0f6a1d93'), 404, 'NOT_FOUND', method)
    assertCamaraError(await call(method, `/${'a'.repeat(64)}`), 404, 'NOT_FOUND', `${method} 64 characters`)
  }
})

test('the same subscription created twice together: one 201, one 409 ALREADY_EXISTS, one stored', async () => {
  const payload = body()
  const answers = await Promise.all([create(payload), create(payload), create(payload)])
  const statuses = answers.map((a) => a.statusCode).sort()
  assert.deepEqual(statuses, [201, 409, 409], answers.map((a) => a.body).join('\n'))
  for (const refused of answers.filter((a) => a.statusCode === 409)) assertCamaraError(refused, 409, 'ALREADY_EXISTS')
  const rows = await h.service.db.all('SELECT id FROM camara_subscriptions WHERE sink = $1 AND status = $2', [payload.sink, 'ACTIVE'])
  assert.equal(rows.length, 1)
  // Once it is deleted, the same subscription may be made again.
  assert.equal((await call('DELETE', `/${answers.find((a) => a.statusCode === 201)!.json().id}`)).statusCode, 204)
  assert.equal((await create(payload)).statusCode, 201)
})

test('DELETE twice: 204, then 404 NOT_FOUND; get and list no longer show it; two deletes together: one 204, one 404', async () => {
  const created = (await create(body())).json() as { id: string }
  const first = await call('DELETE', `/${created.id}`)
  assert.equal(first.statusCode, 204)
  assert.equal(first.body, '')
  assertCamaraError(await call('DELETE', `/${created.id}`), 404, 'NOT_FOUND')
  assertCamaraError(await call('GET', `/${created.id}`), 404, 'NOT_FOUND')
  assert.ok(!((await call('GET', '')).json() as { id: string }[]).some((s) => s.id === created.id))
  const raced = (await create(body())).json() as { id: string }
  const both = await Promise.all([call('DELETE', `/${raced.id}`), call('DELETE', `/${raced.id}`)])
  assert.deepEqual(both.map((r) => r.statusCode).sort(), [204, 404])
  // One subscription-ended event for it, not two.
  const ended = await h.service.db.all(`SELECT event_id FROM approval_events WHERE type LIKE '%subscription-ended' AND body LIKE $1`, [`%${raced.id}%`])
  assert.equal(ended.length, 1)
})

test('a three-legged token lists and reads only its own number\'s subscriptions, and never names the number', async () => {
  const [alice, bob] = [await addUser(h.service, PHONE), await addUser(h.service, OTHER_PHONE)]
  const aliceToken = await camaraToken(h.service, { userId: alice, clientId: 'bank-app-3l' })
  const bobToken = await camaraToken(h.service, { userId: bob, clientId: 'bank-app-3l' })
  const threeLegged = () => body({ config: { subscriptionDetail: {} } })
  assertCamaraError(await create(body(), { token: aliceToken }), 422, 'UNNECESSARY_IDENTIFIER')
  const mine = await create(threeLegged(), { token: aliceToken })
  assert.equal(mine.statusCode, 201, mine.body)
  assert.deepEqual(mine.json().config.subscriptionDetail, {})
  const theirs = (await create(threeLegged(), { token: bobToken })).json() as { id: string }
  const listed = await call('GET', '', { token: aliceToken })
  assert.equal(listed.statusCode, 200)
  assert.deepEqual((listed.json() as { id: string }[]).map((s) => s.id), [mine.json().id])
  assert.doesNotMatch(listed.body, new RegExp(PHONE.slice(1)))
  assertCamaraError(await call('GET', `/${theirs.id}`, { token: aliceToken }), 404, 'NOT_FOUND')
  assertCamaraError(await call('DELETE', `/${theirs.id}`, { token: aliceToken }), 404, 'NOT_FOUND')
  assert.equal((await call('GET', `/${theirs.id}`, { token: bobToken })).statusCode, 200)
})

test('another client\'s subscription is 404 NOT_FOUND on get and delete, missing from the list, and left alone', async () => {
  const otherToken = await camaraToken(h.service, { clientId: 'another-bank' })
  const theirs = (await create(body(), { token: otherToken })).json() as { id: string }
  assertCamaraError(await call('GET', `/${theirs.id}`), 404, 'NOT_FOUND')
  assertCamaraError(await call('DELETE', `/${theirs.id}`), 404, 'NOT_FOUND')
  assert.ok(!((await call('GET', '')).json() as { id: string }[]).some((s) => s.id === theirs.id))
  const still = await call('GET', `/${theirs.id}`, { token: otherToken })
  assert.equal(still.statusCode, 200)
  assert.equal(still.json().status, 'ACTIVE')
})

/** `count` live subscriptions of `clientId`, written straight into the tables (one statement each). */
async function fillLiveSubscriptions(clientId: string, count: number): Promise<void> {
  const now = Date.now()
  const series = `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ${count})`
  await h.service.db.transaction(async (tx) => {
    await tx.run(`${series} INSERT INTO webhook_subscriptions (id, api_key_id, url, events, secret_sealed, created_at, format)
      SELECT '${clientId}-' || i, 'client:${clientId}', 'https://127.0.0.1/q/' || i, '${SWAPPED_TYPE}', 'x', ${now}, 'cloudevents' FROM n`)
    await tx.run(`${series} INSERT INTO camara_subscriptions (id, client_id, phone, identified_by_token, types, sink, status, created_at)
      SELECT '${clientId}-' || i, '${clientId}', '${PHONE}', 0, '["${SWAPPED_TYPE}"]', 'https://127.0.0.1/q/' || i, 'ACTIVE', ${now} FROM n`)
  })
}

const liveOf = async (clientId: string) =>
  Number((await h.service.db.get<{ n: number | string }>(`SELECT COUNT(*) AS n FROM camara_subscriptions WHERE client_id = $1 AND status = 'ACTIVE'`, [clientId]))?.n)

test(`a client with ${MAX_LIVE_SUBSCRIPTIONS_PER_CLIENT} live subscriptions gets 429 QUOTA_EXCEEDED; ended ones do not count`, async () => {
  const clientId = 'busy-subscriber'
  const busyToken = await camaraToken(h.service, { clientId })
  await fillLiveSubscriptions(clientId, MAX_LIVE_SUBSCRIPTIONS_PER_CLIENT)
  assertCamaraError(await create(body(), { token: busyToken }), 429, 'QUOTA_EXCEEDED')
  await h.service.db.run(`UPDATE camara_subscriptions SET status = 'EXPIRED' WHERE id = $1`, [`${clientId}-1`])
  assert.equal((await create(body(), { token: busyToken })).statusCode, 201)
  assertCamaraError(await create(body(), { token: busyToken }), 429, 'QUOTA_EXCEEDED')
  assert.equal(await liveOf(clientId), MAX_LIVE_SUBSCRIPTIONS_PER_CLIENT)
})

test('creates started together with one place left under the quota: one 201, the rest 429 QUOTA_EXCEEDED', async () => {
  const clientId = 'racing-subscriber'
  const racingToken = await camaraToken(h.service, { clientId })
  await fillLiveSubscriptions(clientId, MAX_LIVE_SUBSCRIPTIONS_PER_CLIENT - 1)
  const answers = await Promise.all(Array.from({ length: 4 }, () => create(body(), { token: racingToken })))
  assert.deepEqual(answers.map((a) => a.statusCode).sort(), [201, 429, 429, 429], answers.map((a) => a.body).join('\n'))
  assert.equal(await liveOf(clientId), MAX_LIVE_SUBSCRIPTIONS_PER_CLIENT)
})

test('x-correlator: echoed on 201, 200, 204 and errors; an invalid one is 400 INVALID_ARGUMENT before the body is read', async () => {
  const correlator = 'b4333c46-49c0-4f62-80d7-f0ef930f1c46'
  const headers = { 'x-correlator': correlator }
  const created = await create(body(), { headers })
  assert.equal(created.statusCode, 201)
  assert.equal(created.headers['x-correlator'], correlator)
  const id = (created.json() as { id: string }).id
  for (const res of [await call('GET', '', { headers }), await call('GET', `/${id}`, { headers })]) {
    assert.equal(res.statusCode, 200)
    assert.equal(res.headers['x-correlator'], correlator)
  }
  const deleted = await call('DELETE', `/${id}`, { headers })
  assert.equal(deleted.statusCode, 204)
  assert.equal(deleted.headers['x-correlator'], correlator)
  const errors = [await call('DELETE', `/${id}`, { headers }), await call('GET', '/a..b', { headers }), await create(body({ types: [] }), { headers }),
    await create('{', { headers: { ...headers, 'content-type': 'application/json' } }), await create(body(), { token: 'nope', headers })]
  for (const res of errors) {
    assert.ok(res.statusCode >= 400, res.body)
    assert.equal(res.headers['x-correlator'], correlator, res.body)
  }
  const before = await storedCount()
  for (const bad of ['has space', 'x'.repeat(257), 'quote"d', 'ünï']) {
    assertCamaraError(await create(body(), { headers: { 'x-correlator': bad } }), 400, 'INVALID_ARGUMENT', bad)
    assertCamaraError(await create('{', { headers: { 'x-correlator': bad, 'content-type': 'application/json' } }), 400, 'INVALID_ARGUMENT', bad)
    assertCamaraError(await call('GET', '', { headers: { 'x-correlator': bad } }), 400, 'INVALID_ARGUMENT', bad)
  }
  assert.equal(await storedCount(), before)
})

test('without a valid token nothing about the body is told: 401 for a good body and a bad one alike', async () => {
  for (const payload of [body(), body({ types: [] }), '{', 'not json']) {
    for (const authorization of ['', 'Bearer nope', `Bearer ${await camaraToken(h.service, { expiresInS: -60 })}`]) {
      const res = await h.app.inject({ method: 'POST', url: URL, headers: { authorization, 'content-type': 'application/json' },
        payload: typeof payload === 'string' ? payload : JSON.stringify(payload) })
      assertCamaraError(res, 401, 'UNAUTHENTICATED')
    }
  }
  assertCamaraError(await h.app.inject({ method: 'GET', url: `${URL}/${'a'.repeat(200)}` }), 401, 'UNAUTHENTICATED')
})
