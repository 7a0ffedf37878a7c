import { after, before, describe, test } from 'node:test'
import assert from 'node:assert/strict'
import { startHarness, type Harness } from '../helpers.ts'
import { assertError, register } from '../support/kns.ts'

let h: Harness

before(async () => { h = await startHarness({ PUBLIC_BASE_URL: 'https://kns.example.com' }) })
after(async () => { await h.close() })

const get = (url: string) => h.app.inject({ method: 'GET', url })

/** Every route of area A, with its method, as the OpenAPI document must list it. */
const ROUTES: [string, string][] = [
  ['post', '/numsys/register-user-login'],
  ['post', '/numsys/approval-phone'],
  ['post', '/numsys/approval-object-id'],
  ['get', '/numsys/transaction_details'],
  ['post', '/numsys/verify_signature'],
  ['post', '/numsys/verify_transaction'],
  ['post', '/numsys/approval-cancel'],
  ['post', '/ledger/v1/approve'],
]

describe('health', () => {
  test('/healthz answers ok', async () => {
    const res = await get('/healthz')
    assert.equal(res.statusCode, 200)
    assert.deepEqual(res.json(), { status: 'ok' })
  })

  test('/readyz answers ready when the database is reachable', async () => {
    const res = await get('/readyz')
    assert.equal(res.statusCode, 200)
    assert.deepEqual(res.json(), { status: 'ready' })
  })

  test('/readyz answers 503 when the database is not', async () => {
    const db = h.service.db as unknown as Record<string, unknown>
    db.ping = async () => { throw new Error('connection refused at 10.0.0.5:5432') }
    try {
      const res = await get('/readyz')
      assert.equal(res.statusCode, 503)
      assert.equal(res.json().status, 'database unreachable')
      assert.doesNotMatch(res.body, /10\.0\.0\.5|refused/)
    } finally {
      delete db.ping
    }
    assert.equal((await get('/readyz')).statusCode, 200)
  })
})

describe('metrics', () => {
  test('/metrics is Prometheus text with the request-duration histogram by route pattern', async () => {
    await register(h)
    await get('/numsys/transaction_details?ref=000000000000000000000000')
    const res = await get('/metrics')
    assert.equal(res.statusCode, 200)
    assert.match(String(res.headers['content-type']), /^text\/plain/)
    const text = res.body
    assert.match(text, /# TYPE kns_http_request_duration_seconds histogram/)
    assert.match(text, /kns_http_request_duration_seconds_bucket\{[^}]*route="\/numsys\/register-user-login"[^}]*status="200"/)
    assert.match(text, /kns_http_request_duration_seconds_count\{[^}]*route="\/numsys\/transaction_details"[^}]*status="404"/)
    // Labels carry the route pattern, never raw query values.
    assert.doesNotMatch(text, /ref=000000000000000000000000/)
    assert.match(text, /kns_process_cpu_seconds_total/)
  })
})

describe('OpenAPI', () => {
  test('/openapi.json is an OpenAPI 3.1 document listing every route', async () => {
    const res = await get('/openapi.json')
    assert.equal(res.statusCode, 200)
    const doc = res.json()
    assert.match(doc.openapi, /^3\.1\./)
    assert.equal(typeof doc.info.title, 'string')
    assert.deepEqual(doc.servers, [{ url: 'https://kns.example.com' }])
    for (const [method, path] of ROUTES) {
      assert.ok(doc.paths[path]?.[method], `${method.toUpperCase()} ${path} is documented`)
      const op = doc.paths[path][method]
      assert.ok(op.responses['200'], `${path} documents its 200 response`)
      assert.ok(op.responses['4XX'] ?? op.responses['4xx'], `${path} documents its error responses`)
    }
    // Operational routes are hidden from the API reference.
    for (const hidden of ['/healthz', '/readyz', '/metrics', '/openapi.json']) assert.equal(doc.paths[hidden], undefined, hidden)
  })

  test('request schemas carry the contract formats; key-protected routes declare the x-api-key scheme', async () => {
    const doc = (await get('/openapi.json')).json()
    assert.deepEqual(doc.components.securitySchemes.apiKey, { type: 'apiKey', in: 'header', name: 'x-api-key' })
    for (const path of ['/numsys/approval-phone', '/numsys/approval-object-id']) {
      assert.deepEqual(doc.paths[path].post.security, [{ apiKey: [] }])
      const schema = doc.paths[path].post.requestBody.content['application/json'].schema
      assert.deepEqual([...schema.required].sort(), [
        'cancelRedirectUrl', 'message', 'method', 'referenceNumber', 'successRedirectUrl', 'title',
        path.endsWith('phone') ? 'phoneNumber' : 'objectId',
      ].sort())
      assert.equal(schema.properties.title.maxLength, 255)
      assert.equal(schema.properties.message.maxLength, 2000)
      assert.match(doc.paths[path].post.description, /answers before the new approval is on the database's disk \(APPROVAL_COMMIT=async/, 'the durability of a 200 (default)')
    }
    for (const path of ['/numsys/register-user-login', '/numsys/verify_signature', '/numsys/verify_transaction']) {
      assert.equal(doc.paths[path].post.security, undefined, `${path} takes no key`)
    }
    const phone = doc.paths['/numsys/approval-phone'].post.requestBody.content['application/json'].schema.properties.phoneNumber
    assert.equal(phone.pattern, '^\\+?[1-9]\\d{5,14}$')
    const details = doc.paths['/numsys/transaction_details'].get.responses['200'].content['application/json'].schema
    for (const field of ['title', 'message', 'objectId', 'successRedirectUrl', 'cancelRedirectUrl', 'approvalNumber', 'createdAt',
      'approved', 'method', 'phoneNumber', 'wallet', 'vendorBrand', 'status', 'expiresAt', 'signMessage']) {
      assert.ok(details.properties[field], `transaction_details documents ${field}`)
    }
  })

  test('the error shape is documented once and referenced', async () => {
    const doc = (await get('/openapi.json')).json()
    const schemas = doc.components.schemas as Record<string, { properties?: Record<string, unknown> }>
    const errorBody = Object.values(schemas).find((s) => s.properties?.requestId !== undefined && s.properties?.code !== undefined)
    assert.ok(errorBody, 'an ErrorBody component exists')
    for (const field of ['success', 'code', 'error', 'message', 'field', 'requestId']) assert.ok(errorBody.properties![field], field)
    assert.match(JSON.stringify(doc.paths['/numsys/approval-phone'].post.responses), /#\/components\/schemas\//)
  })

  test('/docs serves the reference page: the pages\' strict CSP, no framing, nothing from elsewhere, one document address', async () => {
    const res = await get('/docs')
    assert.equal(res.statusCode, 200)
    assert.match(res.body, /<html/i)
    assert.match(String(res.headers['content-security-policy']), /default-src 'none'.*frame-ancestors 'none'/)
    assert.equal(res.headers['x-frame-options'], 'DENY')
    assert.doesNotMatch(res.body, /https?:\/\/(cdn|unpkg|cdnjs|jsdelivr)/i)
    assert.doesNotMatch(res.body, /swagger|fastify/i)
    const old = await get('/docs/')
    assert.equal(old.statusCode, 301)
    assert.equal(old.headers.location, '/docs')
    assert.equal((await get('/docs/json')).statusCode, 404, 'the document has one address: /openapi.json')
  })
})

describe('errors never leak a stack', () => {
  test('every kind of error response is the plain shape', async () => {
    const key = await h.key({ scopes: ['caller'] })
    const cases = [
      { res: await get('/nope'), status: 404, code: 'NOT_FOUND' },
      { res: await h.app.inject({ method: 'POST', url: '/numsys/register-user-login', payload: {} }), status: 400, code: 'INVALID_REQUEST' },
      { res: await h.app.inject({ method: 'POST', url: '/numsys/register-user-login', headers: { 'content-type': 'application/json' }, payload: '{' }), status: 400, code: 'INVALID_REQUEST' },
      // The key is checked before the body is read: no key is a 401 whatever the body.
      { res: await h.app.inject({ method: 'POST', url: '/numsys/approval-phone', payload: {} }), status: 401, code: 'UNAUTHORIZED' },
      { res: await h.app.inject({ method: 'POST', url: '/numsys/approval-phone', headers: { 'x-api-key': key }, payload: {} }), status: 403, code: 'FORBIDDEN' },
      { res: await h.app.inject({ method: 'POST', url: '/numsys/approval-cancel', headers: { 'x-api-key': key }, payload: { approvalNumber: '0'.repeat(24) } }), status: 404, code: 'NOT_FOUND' },
    ]
    for (const { res, status, code } of cases) assertError(res, status, code)
  })
})
