import { after, before, describe, test } from 'node:test'
import assert from 'node:assert/strict'
import { BODY_LIMITS } from '../../src/http/json-body.ts'
import { startHarness, type Harness } from '../helpers.ts'
import { approvalBody, assertError, assertNoStack, randomApprovalNumber, register } from '../support/kns.ts'

let h: Harness
let key: string
let phone: string

before(async () => {
  h = await startHarness()
  key = await h.key()
  phone = (await register(h)).phoneNumber
})
after(async () => { await h.close() })

/** Every JSON POST endpoint of area A, with the headers it needs. */
const POSTS = ['/numsys/register-user-login', '/numsys/approval-phone', '/numsys/approval-object-id', '/numsys/verify_signature',
  '/numsys/verify_transaction', '/numsys/approval-cancel', '/ledger/v1/approve']

const headers = (extra: Record<string, string> = {}) => ({ 'x-api-key': key, ...extra })

describe('request bodies', () => {
  for (const url of POSTS) {
    test(`${url}: body over 64 KiB -> 413 (every route's limit is lower)`, async () => {
      const res = await h.app.inject({
        method: 'POST', url, headers: headers({ 'content-type': 'application/json' }),
        payload: JSON.stringify({ ...approvalBody({ phoneNumber: phone }), message: 'x'.repeat(65 * 1024) }),
      })
      assertError(res, 413, 'PAYLOAD_TOO_LARGE')
    })

    test(`${url}: text/plain body -> 415`, async () => {
      const res = await h.app.inject({
        method: 'POST', url, headers: headers({ 'content-type': 'text/plain' }),
        payload: JSON.stringify(approvalBody({ phoneNumber: phone })),
      })
      assertError(res, 415, 'UNSUPPORTED_MEDIA_TYPE')
    })

    test(`${url}: form-encoded / XML bodies -> 415`, async () => {
      for (const type of ['application/x-www-form-urlencoded', 'application/xml', 'multipart/form-data; boundary=x']) {
        const res = await h.app.inject({ method: 'POST', url, headers: headers({ 'content-type': type }), payload: 'a=1' })
        assertError(res, 415, 'UNSUPPORTED_MEDIA_TYPE')
      }
    })

    test(`${url}: invalid JSON -> 400`, async () => {
      for (const payload of ['{"title":', '{title: "x"}', 'not json', '{"a":1}}']) {
        const res = await h.app.inject({ method: 'POST', url, headers: headers({ 'content-type': 'application/json' }), payload })
        assertError(res, 400, 'INVALID_REQUEST')
      }
    })
  }

  for (const [url, limit] of [['/numsys/register-user-login', BODY_LIMITS.small], ['/numsys/approval-phone', BODY_LIMITS.text]] as const) {
    test(`${url}: its own limit (${limit} bytes) is accepted by the transport, one byte more is 413`, async () => {
      const body = JSON.stringify({ email: 'a@example.com', phoneNumber: phone, pad: '' })
      const padded = body.replace('"pad":""', `"pad":"${'p'.repeat(limit - body.length)}"`)
      assert.equal(Buffer.byteLength(padded), limit)
      const send = (payload: string) => h.app.inject({ method: 'POST', url, headers: headers({ 'content-type': 'application/json' }), payload })
      assert.notEqual((await send(padded)).statusCode, 413)
      assertError(await send(`${padded} `), 413, 'PAYLOAD_TOO_LARGE')
    })
  }

  test('application/json with a charset parameter is JSON', async () => {
    const res = await h.app.inject({
      method: 'POST', url: '/numsys/approval-phone', headers: headers({ 'content-type': 'application/json; charset=utf-8' }),
      payload: JSON.stringify(approvalBody({ phoneNumber: phone })),
    })
    assert.equal(res.statusCode, 200, res.body)
  })
})

describe('error bodies', () => {
  test('validation errors name the field and say what is wrong', async () => {
    const res = await h.app.inject({ method: 'POST', url: '/numsys/register-user-login', payload: { email: 'x@example.com' } })
    const err = assertError(res, 400, 'INVALID_REQUEST', 'phoneNumber')
    assert.match(err.message as string, /phoneNumber/)
  })

  test('an unknown route is a 404 in the same shape', async () => {
    assertError(await h.app.inject({ method: 'GET', url: '/numsys/nothing-here' }), 404, 'NOT_FOUND')
    assertError(await h.app.inject({ method: 'POST', url: '/numsys/verify-signature', payload: {} }), 404, 'NOT_FOUND')
  })

  test('the wrong method on a route is answered in the same shape', async () => {
    const res = await h.app.inject({ method: 'GET', url: '/numsys/register-user-login' })
    assert.ok(res.statusCode === 404 || res.statusCode === 405, String(res.statusCode))
    assert.equal(res.json().success, false)
    assertNoStack(res)
  })

  test('an unexpected failure is a bare 500 INTERNAL: no stack, no internals', async () => {
    const db = h.service.db as unknown as Record<string, unknown>
    const boom = async () => {
      const err = new Error('relation "secret_table" at /srv/app/src/db/postgres.ts:42 exploded')
      throw err
    }
    db.get = boom
    db.all = boom
    db.run = boom
    try {
      const res = await h.app.inject({ method: 'GET', url: `/numsys/transaction_details?ref=${randomApprovalNumber()}` })
      const err = assertError(res, 500, 'INTERNAL')
      assert.equal(err.message, 'internal error')
      assert.doesNotMatch(res.body, /secret_table|postgres\.ts/)
      const reg = await h.app.inject({ method: 'POST', url: '/numsys/register-user-login', payload: { email: 'e@example.com', phoneNumber: phone } })
      assertError(reg, 500, 'INTERNAL')
    } finally {
      delete db.get
      delete db.all
      delete db.run
    }
    assert.equal((await h.app.inject({ method: 'GET', url: '/readyz' })).statusCode, 200)
  })
})

describe('request IDs', () => {
  test('a well-formed x-request-id is echoed, on success and in error bodies', async () => {
    const ok = await h.app.inject({ method: 'GET', url: '/healthz', headers: { 'x-request-id': 'trace-abc.123:xyz' } })
    assert.equal(ok.headers['x-request-id'], 'trace-abc.123:xyz')
    const bad = await h.app.inject({ method: 'GET', url: '/numsys/transaction_details', headers: { 'x-request-id': 'req-42' } })
    assert.equal(bad.headers['x-request-id'], 'req-42')
    assert.equal(assertError(bad, 400, 'INVALID_REQUEST').requestId, 'req-42')
  })

  test('without one, or with a malformed one, the server makes one up', async () => {
    const none = await h.app.inject({ method: 'GET', url: '/healthz' })
    assert.match(String(none.headers['x-request-id']), /^[0-9a-f-]{36}$/)
    for (const malformed of ['has spaces', 'x'.repeat(65), 'semi;colon', '<script>']) {
      const res = await h.app.inject({ method: 'GET', url: '/healthz', headers: { 'x-request-id': malformed } })
      assert.notEqual(res.headers['x-request-id'], malformed)
      assert.match(String(res.headers['x-request-id']), /^[0-9a-f-]{36}$/)
    }
    const a = await h.app.inject({ method: 'GET', url: '/healthz' })
    const b = await h.app.inject({ method: 'GET', url: '/healthz' })
    assert.notEqual(a.headers['x-request-id'], b.headers['x-request-id'])
  })
})
