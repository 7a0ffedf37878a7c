/**
 * The CAMARA routes answer every error in CAMARA's shape `{status, code, message}` (and only
 * they: the rest of the API keeps the service's), whatever raises it: the token (401), its
 * scopes and purpose (403), the body and headers (400), the router (404, 405), the media type
 * (415), the rates (429), the database (503), a fault (500); and x-correlator is checked and
 * echoed on every answer, errors included.
 */
import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import { camaraClientBucket, camaraClientRate } from '../../src/http/camara/auth.ts'
import { startHarness, type Harness } from '../helpers.ts'
import { bearer, camaraToken, EVERY_SCOPE, recordChange, setCamaraRateLimit } from '../camara/support.ts'

let h: Harness
let token: string
const PHONE = '+447911123999'
before(async () => {
  h = await startHarness()
  token = await camaraToken(h.service)
  await recordChange(h.service, PHONE, 'activation', Date.now() - 1000)
})
after(async () => { await h.close() })

type Headers = Record<string, string>
async function post(url: string, options: { headers?: Headers; payload?: string | object } = {}) {
  return h.app.inject({ method: 'POST', url, headers: { ...bearer(token), ...options.headers }, payload: options.payload ?? { phoneNumber: PHONE } })
}

/** The answer is CAMARA's error shape, exactly, with this status and code. */
function assertCamaraError(res: { statusCode: number; body: string; headers: Record<string, unknown> }, status: number, code: string): void {
  assert.equal(res.statusCode, status, res.body)
  assert.match(String(res.headers['content-type']), /^application\/json/)
  const body = JSON.parse(res.body) as Record<string, unknown>
  assert.deepEqual(Object.keys(body).sort(), ['code', 'message', 'status'])
  assert.equal(body.status, status)
  assert.equal(body.code, code)
  assert.ok(typeof body.message === 'string' && body.message.length > 0)
  assert.doesNotMatch(res.body, /node_modules|\/src\/|at .*\.ts:\d+/)
}

test('401 UNAUTHENTICATED: no token, not a bearer token, garbage, expired, forged, wrong audience, issuer or type', async () => {
  const cases: Array<[string, Headers]> = [
    ['no Authorization', { authorization: '' }],
    ['Basic', { authorization: 'Basic YTpi' }],
    ['garbage', { authorization: 'Bearer not.a.jwt' }],
    ['expired', bearer(await camaraToken(h.service, { expiresInS: -60 }))],
    ['foreign key', bearer(await camaraToken(h.service, { foreignKey: true }))],
    ['other audience', bearer(await camaraToken(h.service, { audience: 'https://elsewhere.example' }))],
    ['other issuer', bearer(await camaraToken(h.service, { issuer: 'https://elsewhere.example/oidc' }))],
    ['an ID token, not an access token', bearer(await camaraToken(h.service, { typ: 'JWT' }))],
    ['a user that does not exist', bearer(await camaraToken(h.service, { userId: 'f5f1f0b8-0000-4000-8000-000000000000' }))],
  ]
  for (const [what, headers] of cases) {
    const res = await h.app.inject({ method: 'POST', url: '/sim-swap/v2/check', headers, payload: { phoneNumber: PHONE } })
    assertCamaraError(res, 401, 'UNAUTHENTICATED')
    assert.equal(res.headers.connection, 'close', what)
    assert.equal(res.headers['www-authenticate'], 'Bearer realm="camara"', what)
  }
})

test('401 comes before anything about the body: a malformed body without a token is still 401', async () => {
  const res = await h.app.inject({ method: 'POST', url: '/device-swap/v1/retrieve-date', headers: { 'content-type': 'application/json' }, payload: '{"phoneNumber":' })
  assertCamaraError(res, 401, 'UNAUTHENTICATED')
})

test('403 PERMISSION_DENIED: no scope for the operation, or no fraud-prevention purpose', async () => {
  const wrongOperation = await camaraToken(h.service, { scopes: ['sim-swap:retrieve-date', 'dpv:FraudPreventionAndDetection'] })
  const denied = await post('/sim-swap/v2/check', { headers: bearer(wrongOperation) })
  assertCamaraError(denied, 403, 'PERMISSION_DENIED')
  assert.equal(denied.headers['www-authenticate'], 'Bearer realm="camara", error="insufficient_scope"')
  assert.equal((await post('/sim-swap/v2/retrieve-date', { headers: bearer(wrongOperation) })).statusCode, 200)
  const noPurpose = await camaraToken(h.service, { scopes: EVERY_SCOPE.filter((s) => s !== 'dpv:FraudPreventionAndDetection') })
  const res = await post('/sim-swap/v2/retrieve-date', { headers: bearer(noPurpose) })
  assertCamaraError(res, 403, 'PERMISSION_DENIED')
  assert.match(JSON.parse(res.body).message, /purpose/)
})

test('400 INVALID_ARGUMENT: a phone number off the pattern, a maxAge of the wrong type, no body, malformed JSON, too large a body', async () => {
  for (const phoneNumber of ['447911123999', '+0447911123999', '+44 7911 123999', '+123', 12345]) {
    assertCamaraError(await post('/sim-swap/v2/check', { payload: { phoneNumber } }), 400, 'INVALID_ARGUMENT')
  }
  for (const maxAge of ['240', 2.5, null, true]) {
    assertCamaraError(await post('/device-swap/v1/check', { payload: { phoneNumber: PHONE, maxAge } }), 400, 'INVALID_ARGUMENT')
  }
  assertCamaraError(await h.app.inject({ method: 'POST', url: '/sim-swap/v2/check', headers: bearer(token) }), 400, 'INVALID_ARGUMENT')
  const json = { 'content-type': 'application/json' }
  assertCamaraError(await post('/sim-swap/v2/check', { headers: json, payload: '{"phoneNumber": "+4479' }), 400, 'INVALID_ARGUMENT')
  assertCamaraError(await post('/sim-swap/v2/check', { headers: json, payload: '' }), 400, 'INVALID_ARGUMENT')
  assertCamaraError(await post('/sim-swap/v2/check', { headers: json, payload: '['.repeat(40) + ']'.repeat(40) }), 400, 'INVALID_ARGUMENT')
  // Commonalities has no 413 code: an oversized body is an invalid argument.
  assertCamaraError(await post('/sim-swap/v2/check', { payload: { phoneNumber: PHONE, pad: 'x'.repeat(10_000) } }), 400, 'INVALID_ARGUMENT')
})

test('400 OUT_OF_RANGE: a maxAge outside 1-2400', async () => {
  for (const maxAge of [0, -1, 2401, 100000]) {
    assertCamaraError(await post('/sim-swap/v2/check', { payload: { phoneNumber: PHONE, maxAge } }), 400, 'OUT_OF_RANGE')
  }
})

test('x-correlator: echoed on answers and errors; an invalid one is 400 INVALID_ARGUMENT, after the token is checked', async () => {
  const correlator = 'b4333c46-49c0-4f62-80d7-f0ef930f1c46:{a}/<b>;c.d_e'
  const ok = await post('/sim-swap/v2/check', { headers: { 'x-correlator': correlator } })
  assert.equal(ok.statusCode, 200)
  assert.equal(ok.headers['x-correlator'], correlator)
  const refused = await h.app.inject({ method: 'POST', url: '/device-swap/v1/check', headers: { 'x-correlator': correlator }, payload: {} })
  assertCamaraError(refused, 401, 'UNAUTHENTICATED')
  assert.equal(refused.headers['x-correlator'], correlator)
  assert.equal((await h.app.inject({ method: 'GET', url: '/sim-swap/v2/nowhere', headers: { 'x-correlator': 'abc' } })).headers['x-correlator'], 'abc')
  assert.equal((await post('/sim-swap/v2/check')).headers['x-correlator'], undefined)
  for (const bad of ['has space', 'x'.repeat(257), 'quote"d', 'ünï']) {
    const res = await post('/sim-swap/v2/check', { headers: { 'x-correlator': bad } })
    assertCamaraError(res, 400, 'INVALID_ARGUMENT')
    assert.equal(res.headers['x-correlator'], undefined)
  }
  const anonymous = await h.app.inject({ method: 'POST', url: '/sim-swap/v2/check', headers: { 'x-correlator': 'has space' }, payload: {} })
  assertCamaraError(anonymous, 401, 'UNAUTHENTICATED')
})

test('404 NOT_FOUND for an unknown path under the prefixes or a version not served, 405 METHOD_NOT_ALLOWED with Allow for a wrong method', async () => {
  for (const url of ['/sim-swap/v2/nowhere', '/device-swap/v1/check/extra', '/sim-swap/v2/', '/sim-swap/v1/check', '/device-swap/v0/retrieve-date', '/sim-swap-subscriptions/v0.2/subscriptions', '/sim-swap']) {
    assertCamaraError(await post(url), 404, 'NOT_FOUND')
  }
  for (const method of ['GET', 'PUT', 'DELETE'] as const) {
    const res = await h.app.inject({ method, url: '/sim-swap/v2/check', headers: bearer(token) })
    assertCamaraError(res, 405, 'METHOD_NOT_ALLOWED')
    assert.equal(res.headers.allow, 'POST')
  }
})

test('a URL that does not decode under the prefixes: CAMARA\'s 400 INVALID_ARGUMENT, the correlator echoed', async () => {
  for (const url of ['/sim-swap/v2/check%ZZ', '/device-swap/v1/%ZZ']) {
    assertCamaraError(await h.app.inject({ method: 'POST', url, payload: {} }), 400, 'INVALID_ARGUMENT')
    const res = await post(url, { headers: { 'x-correlator': 'corr-1' } })
    assertCamaraError(res, 400, 'INVALID_ARGUMENT')
    assert.equal(res.headers['x-correlator'], 'corr-1')
  }
  // Elsewhere, the service's shape as before.
  assert.equal((await h.app.inject({ method: 'GET', url: '/numsys/transaction_details%ZZ' })).json().code, 'INVALID_REQUEST')
})

test('415 UNSUPPORTED_MEDIA_TYPE for a body that is not JSON', async () => {
  for (const type of ['text/plain', 'application/xml', 'application/x-www-form-urlencoded']) {
    assertCamaraError(await post('/sim-swap/v2/retrieve-date', { headers: { 'content-type': type }, payload: 'phoneNumber=+447911123999' }), 415, 'UNSUPPORTED_MEDIA_TYPE')
  }
})

test('429 TOO_MANY_REQUESTS with Retry-After past the client\'s rate', async () => {
  const clientId = 'busy-bank'
  const busy = await camaraToken(h.service, { clientId })
  const calm = await camaraToken(h.service, { clientId: 'calm-bank' })
  // One request a second: at the default 100/s a token comes back every 10 ms, which a loaded machine can spend before the request arrives.
  const rate = h.service.config.defaultKeyRate
  setCamaraRateLimit(h.service, 1)
  try {
    const { perSecond, burst } = camaraClientRate(h.service.config)
    while ((await h.service.rateLimiter.take(camaraClientBucket(clientId), perSecond, burst)).allowed) { /* spend the burst */ }
    const res = await post('/sim-swap/v2/check', { headers: bearer(busy) })
    assertCamaraError(res, 429, 'TOO_MANY_REQUESTS')
    assert.match(String(res.headers['retry-after']), /^[1-9]\d*$/)
    // Another client is not affected (not the other tests' client: its bucket would keep this rate's few tokens after it).
    assert.equal((await post('/sim-swap/v2/check', { headers: bearer(calm) })).statusCode, 200)
  } finally {
    setCamaraRateLimit(h.service, rate)
  }
})

test('503 UNAVAILABLE with Retry-After while the database is down; 500 INTERNAL without details on a fault', async () => {
  const db = h.service.db
  const original = db.get.bind(db)
  try {
    db.get = async () => { throw Object.assign(new Error('connect ECONNREFUSED 10.0.0.5:5432'), { code: 'ECONNREFUSED' }) }
    const down = await post('/sim-swap/v2/check')
    assertCamaraError(down, 503, 'UNAVAILABLE')
    assert.equal(down.headers['retry-after'], '1')
    assert.doesNotMatch(down.body, /10\.0\.0\.5|ECONNREFUSED/)
    db.get = async () => { throw new Error('secret detail at /srv/kns/src/x.ts:12') }
    const fault = await post('/device-swap/v1/retrieve-date')
    assertCamaraError(fault, 500, 'INTERNAL')
    assert.doesNotMatch(fault.body, /secret detail/)
  } finally {
    db.get = original
  }
})

test('the rest of the API keeps the service\'s own error shape', async () => {
  const missing = await h.app.inject({ method: 'GET', url: '/numsys/nowhere' })
  assert.equal(missing.statusCode, 404)
  assert.equal(missing.json().success, false)
  assert.equal(missing.json().code, 'NOT_FOUND')
  assert.equal(missing.headers['x-correlator'], undefined)
  const invalid = await h.app.inject({ method: 'POST', url: '/numsys/register-user-login', payload: { phoneNumber: 'x' }, headers: { 'x-correlator': 'abc' } })
  assert.equal(invalid.json().success, false)
  assert.equal(invalid.headers['x-correlator'], undefined)
})
