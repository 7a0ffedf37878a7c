/**
 * Issue "Hostile clients": each of the measured failures, as a test that failed before the
 * fix. On both engines (the suite runs again with DATABASE_URL).
 */
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { startHarness, type Harness } from '../helpers.ts'
import { approvalBody, assertError, createApproval, post, register } from '../support/kns.ts'
import { snapshotDiff, snapshotTables } from '../fuzz/snapshot.ts'

let h: Harness
let key: string

before(async () => {
  h = await startHarness()
  key = await h.key()
})
after(async () => { await h.close() })

/** Every row of every table, for "nothing stored was changed" (the fuzz suite's snapshot). */
const snapshot = () => snapshotTables(h.service.db)

describe('a batched lookup never lets one member fail another', () => {
  test('40 concurrent valid transaction_details beside NUL refs: every valid one 200, the NUL ones 400', async () => {
    const phone = (await register(h)).phoneNumber
    const refs = await Promise.all(Array.from({ length: 8 }, () => createApproval(h, key, approvalBody({ phoneNumber: phone }))))
    for (let round = 0; round < 5; round++) {
      const valid = Array.from({ length: 40 }, (_, i) => h.app.inject({ method: 'GET', url: `/numsys/transaction_details?ref=${refs[i % refs.length]}` }))
      const poisoned = ['%00', 'x%00', `${refs[0]}%00`].map((q) => h.app.inject({ method: 'GET', url: `/numsys/transaction_details?ref=${q}` }))
      const [answers, bad] = await Promise.all([Promise.all(valid), Promise.all(poisoned)])
      assert.deepEqual(answers.map((r) => r.statusCode), answers.map(() => 200))
      for (const res of bad) assertError(res, 400, 'INVALID_REQUEST', 'ref')
    }
  })

  test('verify_signature and verify_transaction beside a NUL ref are unaffected', async () => {
    const phone = (await register(h)).phoneNumber
    const ref = await createApproval(h, key, approvalBody({ phoneNumber: phone }))
    const answers = await Promise.all([
      ...Array.from({ length: 20 }, () => post(h, '/numsys/verify_signature', { approvalNumber: ref, signature: 'AAAA' })),
      h.app.inject({ method: 'GET', url: '/numsys/transaction_details?ref=x%00' }),
    ])
    // A signature of garbage is a well-formed request that fails verification: 200 success false.
    for (const res of answers.slice(0, -1)) assert.equal(res.statusCode, 200, res.body)
  })
})

describe('text that reaches the database is valid Unicode without hidden characters', () => {
  const registerWith = (email: string, phoneNumber = '+14155550177') =>
    h.app.inject({ method: 'POST', url: '/numsys/register-user-login', headers: { 'content-type': 'application/json' }, payload: `{"email":${email},"phoneNumber":"${phoneNumber}"}` })

  for (const [label, email] of [['NUL', '"a\\u0000b@example.com"'], ['a lone surrogate', '"a\\ud800b@example.com"'],
    ['a right-to-left override', '"a\\u202eb@example.com"'], ['a C1 control', '"a\\u0085b@example.com"'], ['a line separator', '"a\\u2028b@example.com"']]) {
    test(`an e-mail with ${label} is a 400 naming the field, and nothing is stored`, async () => {
      const before = await snapshot()
      const res = assertError(await registerWith(email!), 400, 'INVALID_REQUEST', 'email')
      assert.match(String(res.message), /e-mail address/)
      assert.deepEqual(snapshotDiff(before, await snapshot()), [])
    })
  }

  test('internationalised e-mail addresses and right-to-left titles (with marks) are accepted and read back unchanged', async () => {
    const res = await registerWith('"δοκιμή@παράδειγμα.ελ"', '+14155550178')
    assert.equal(res.statusCode, 200, res.body)
    assert.equal((res.json() as { identifiers: { identifier: string }[] }).identifiers[0]!.identifier, 'δοκιμή@παράδειγμα.ελ')
    const phone = (await register(h)).phoneNumber
    const title = '\u200fאישור החלפת SIM'
    const ref = await createApproval(h, key, approvalBody({ phoneNumber: phone }, { title }))
    const details = await h.app.inject({ method: 'GET', url: `/numsys/transaction_details?ref=${ref}` })
    assert.equal((details.json() as { title: string }).title, title)
  })

  for (const [field, value] of [['title', 'SIM \u202eswap'], ['referenceNumber', 'ref\u0000'], ['message', 'hello \ud800'],
    ['successRedirectUrl', 'https://vendor.example/\u0000ok'], ['cancelRedirectUrl', 'https://vendor.example/\u202e']]) {
    test(`approval-phone with a hidden character in ${field}: 400 naming it`, async () => {
      const phone = (await register(h)).phoneNumber
      const payload = JSON.stringify(approvalBody({ phoneNumber: phone }, { [field!]: value }))
      const res = await h.app.inject({ method: 'POST', url: '/numsys/approval-phone', headers: { 'x-api-key': key, 'content-type': 'application/json' }, payload })
      assertError(res, 400, 'INVALID_REQUEST', field)
    })
  }
})

describe('numeric fields are bounded by the domain', () => {
  const usage = (end: string) => h.app.inject({
    method: 'POST', url: '/api/v1/admin/usage', headers: { 'x-api-key': key, 'content-type': 'application/json' },
    payload: `[{"sessionId":"big-end","network":"gateway","nodeUid":"g1","clientId":"c1","start":${Date.now() - 60_000},"end":${end},"bytesUp":1,"bytesDown":1}]`,
  })
  for (const end of ['9223372036854775807', '1e308', '18446744073709551615', '4102444800001', String(Date.now() + 32 * 24 * 3_600_000)]) {
    test(`usage with end = ${end}: 400 and nothing stored`, async () => {
      const before = await snapshot()
      const res = await usage(end)
      assert.equal(res.statusCode, 400, res.body)
      const body = res.json() as { code: string; errors: { index: number; reason: string }[] }
      assert.equal(body.code, 'INVALID_REQUEST')
      assert.match(body.errors[0]!.reason, /^end /)
      assert.deepEqual(snapshotDiff(before, await snapshot()), [])
    })
  }
})

describe('admin routes authenticate before they read the body', () => {
  test('an unauthenticated PUT with an invalid body is 401, not a judgement of the body', async () => {
    for (const payload of ['[{}]', '{not json', '[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]']) {
      const res = await h.app.inject({ method: 'PUT', url: '/api/v1/admin/gateways', headers: { 'content-type': 'application/json' }, payload })
      assertError(res, 401, 'UNAUTHORIZED')
    }
  })

  test('a deeply nested body from a keyed client is refused without parsing it', async () => {
    const depth = 1_000_000
    const payload = '['.repeat(depth) + ']'.repeat(depth)
    const res = await h.app.inject({ method: 'PUT', url: '/api/v1/admin/gateways', headers: { 'x-api-key': key, 'content-type': 'application/json' }, payload })
    const body = assertError(res, 400, 'INVALID_REQUEST')
    assert.match(String(body.message), /nested deeper than 32/)
  })

  test('public statistics routes check the rate limit before the body too (onRequest, not preHandler)', async () => {
    const routes = h.app.printRoutes({ includeHooks: true, commonPrefix: false })
    assert.match(routes, /global-public-gateway-stats \(POST\)[\s\S]*?onRequest/)
  })
})

describe('HEAD and wrong methods', () => {
  for (const url of ['/api/v1/UsageGraph/global-public-stats', '/healthz', '/readyz', '/openapi.json', '/numsys/transaction_details?ref=0123456789abcdef01234567']) {
    test(`HEAD ${url}: the GET's status and headers, no body`, async () => {
      const [get, head] = [await h.app.inject({ method: 'GET', url }), await h.app.inject({ method: 'HEAD', url })]
      assert.ok(head.statusCode < 500, `${head.statusCode}`)
      assert.equal(head.statusCode, get.statusCode)
      assert.equal(head.body, '')
      assert.equal(head.headers['content-type'], get.headers['content-type'])
    })
  }

  test('a known path with the wrong method: 405 with Allow, in the error shape', async () => {
    for (const [method, url, allow] of [['DELETE', '/numsys/register-user-login', 'POST'], ['GET', '/numsys/approval-phone', 'POST'],
      ['POST', '/numsys/transaction_details?ref=x', 'GET, HEAD'], ['PATCH', '/api/v1/admin/gateways', 'PUT']] as const) {
      const res = await h.app.inject({ method, url })
      assertError(res, 405, 'METHOD_NOT_ALLOWED')
      assert.equal(res.headers.allow, allow)
    }
    assertError(await h.app.inject({ method: 'GET', url: '/numsys/no-such-route' }), 404, 'NOT_FOUND')
  })

  test('405 and 404 are decided before the body is parsed (found by the fuzz suite)', async () => {
    for (const [contentType, payload] of [['application/json', '{'], ['text/weird', 'x'], ['application/json', 'x'.repeat(100_000)]]) {
      const res = await h.app.inject({ method: 'PATCH', url: '/numsys/approval-cancel', headers: { 'content-type': contentType! }, payload })
      assertError(res, 405, 'METHOD_NOT_ALLOWED')
      assertError(await h.app.inject({ method: 'POST', url: '/numsys/nothing-here', headers: { 'content-type': contentType! }, payload }), 404, 'NOT_FOUND')
    }
  })

  test('a URL that does not decode: 400 in the error shape, with x-request-id', async () => {
    assertError(await h.app.inject({ method: 'POST', url: '/numsys/approval-cancel%ZZ', headers: { 'content-type': 'application/json' }, payload: '{}' }), 400, 'INVALID_REQUEST')
  })
})

describe('NDJSON is the usage route\'s alone, and only by its content type (found by the fuzz suite)', () => {
  test('the node routes answer NDJSON with 415', async () => {
    for (const url of ['/api/v1/admin/gateways', '/api/v1/admin/wifi-nodes']) {
      const res = await h.app.inject({ method: 'PUT', url, headers: { 'x-api-key': key, 'content-type': 'application/x-ndjson' }, payload: '[]' })
      assertError(res, 415, 'UNSUPPORTED_MEDIA_TYPE')
    }
  })

  test('a JSON string sent as application/json to the usage route is a 400, not NDJSON, and stores nothing', async () => {
    const line = JSON.stringify({ sessionId: 'json-string', network: 'gateway', nodeUid: 'n1', clientId: 'c1', start: Date.now() - 60_000, end: Date.now() - 1000, bytesUp: 1, bytesDown: 2 })
    const before = await snapshot()
    for (const payload of [JSON.stringify(line), '""']) {
      const res = await h.app.inject({ method: 'POST', url: '/api/v1/admin/usage', headers: { 'x-api-key': key, 'content-type': 'application/json' }, payload })
      assertError(res, 400, 'INVALID_REQUEST')
    }
    assert.deepEqual(snapshotDiff(before, await snapshot()), [])
  })
})
