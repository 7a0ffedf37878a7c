import { after, before, describe, test } from 'node:test'
import assert from 'node:assert/strict'
import { startHarness, type Harness } from '../helpers.ts'
import { COMMON_FIELDS, INVALID_VALUES, VALID_EDGES } from '../support/approval-validation.ts'
import { approvalBody, assertError, details, post, randomPhone, register, setExpiry, verifySignature } from '../support/kns.ts'

const URL = '/numsys/approval-phone'
const BASE = 'https://kns.example.org'
let h: Harness
let key: string
let phone: string

before(async () => {
  h = await startHarness({ PUBLIC_BASE_URL: `${BASE}/` })
  key = await h.key({ scopes: ['approvals'], vendor: 'Acme Bank' })
  phone = (await register(h)).phoneNumber
})
after(async () => { await h.close() })

const send = (body: unknown, apiKey = key) => post(h, URL, body, { 'x-api-key': apiKey })

async function countApprovals(): Promise<number> {
  return Number((await h.service.db.get<{ n: number }>('SELECT COUNT(*) AS n FROM approvals'))?.n)
}

describe('approval-phone: happy path', () => {
  test('returns { approvalUrl, approvalNumber }: 24 lowercase hex, URL on PUBLIC_BASE_URL', async () => {
    const res = await send(approvalBody({ phoneNumber: phone }))
    assert.equal(res.statusCode, 200, res.body)
    const body = res.json()
    assert.deepEqual(Object.keys(body).sort(), ['approvalNumber', 'approvalUrl'])
    assert.match(body.approvalNumber, /^[0-9a-f]{24}$/)
    assert.equal(body.approvalUrl, `${BASE}/approve?ref=${body.approvalNumber}`)
    const d = await details(h, body.approvalNumber)
    assert.equal(d.status, 'pending')
    assert.equal(d.approved, false)
    assert.equal(d.phoneNumber, phone)
  })

  test('approval numbers are unique and unpredictable', async () => {
    const numbers = new Set<string>()
    for (let i = 0; i < 20; i++) numbers.add((await send(approvalBody({ phoneNumber: phone }))).json().approvalNumber)
    assert.equal(numbers.size, 20)
    for (const n of numbers) assert.match(n, /^[0-9a-f]{24}$/)
  })

  test('the number without "+" finds the same token', async () => {
    const res = await send(approvalBody({ phoneNumber: phone.slice(1) }))
    assert.equal(res.statusCode, 200, res.body)
    const d = await details(h, res.json().approvalNumber)
    assert.equal(d.phoneNumber, phone)
  })

  for (const edge of VALID_EDGES) {
    test(`accepts ${edge.field} with ${edge.why}`, async () => {
      const body = approvalBody({ phoneNumber: phone }, { [edge.field]: edge.value })
      const res = await send(body)
      assert.equal(res.statusCode, 200, res.body)
      // referenceNumber is the vendor's own key and not part of the details.
      if (edge.field !== 'referenceNumber') assert.equal((await details(h, res.json().approvalNumber))[edge.field], edge.value)
    })
  }

  test('unknown extra fields are ignored, not stored', async () => {
    const res = await send({ ...approvalBody({ phoneNumber: phone }), status: 'approved', wallet: '0x1' })
    assert.equal(res.statusCode, 200, res.body)
    const d = await details(h, res.json().approvalNumber)
    assert.equal(d.status, 'pending')
    assert.equal(d.approved, false)
  })
})

describe('approval-phone: validation', () => {
  for (const field of [...COMMON_FIELDS, 'phoneNumber']) {
    test(`missing ${field} -> 400 naming it`, async () => {
      const body: Record<string, unknown> = { ...approvalBody({ phoneNumber: phone }) }
      delete body[field]
      assertError(await send(body), 400, 'INVALID_REQUEST', field)
    })
  }

  for (const { field, value, why } of INVALID_VALUES) {
    test(`${field} as ${why} -> 400`, async () => {
      assertError(await send(approvalBody({ phoneNumber: phone }, { [field]: value } as object)), 400, 'INVALID_REQUEST', field)
    })
  }

  for (const phoneNumber of ['', '12345', '+0441234567', '+44 20 1234 5678', '+1234567890123456', 'phone', 4420123456]) {
    test(`phoneNumber ${JSON.stringify(phoneNumber)} -> 400`, async () => {
      assertError(await send({ ...approvalBody({ phoneNumber: phone }), phoneNumber }), 400, 'INVALID_REQUEST', 'phoneNumber')
    })
  }

  test('an objectId instead of a phoneNumber -> 400 phoneNumber required', async () => {
    const { phoneNumber: _, ...rest } = approvalBody({ phoneNumber: phone })
    assertError(await send({ ...rest, objectId: `0x${'a'.repeat(64)}` }), 400, 'INVALID_REQUEST', 'phoneNumber')
  })

  test('a refused request stores nothing', async () => {
    const before = await countApprovals()
    assertError(await send(approvalBody({ phoneNumber: phone }, { method: 'nope' as 'sign' })), 400, 'INVALID_REQUEST', 'method')
    assert.equal(await countApprovals(), before)
  })
})

describe('approval-phone: unknown number', () => {
  test('a number without a token -> 404 naming phoneNumber', async () => {
    const before = await countApprovals()
    assertError(await send(approvalBody({ phoneNumber: randomPhone() })), 404, 'NOT_FOUND', 'phoneNumber')
    assert.equal(await countApprovals(), before)
  })
})

describe('approval-phone: retries', () => {
  test('the same key, referenceNumber and body returns the same approval', async () => {
    const body = approvalBody({ phoneNumber: phone })
    const first = await send(body)
    const second = await send(body)
    assert.equal(second.statusCode, 200, second.body)
    assert.deepEqual(second.json(), first.json())
  })

  test('the same referenceNumber with a different body -> 409, the original is untouched', async () => {
    const body = approvalBody({ phoneNumber: phone })
    const first = (await send(body)).json()
    for (const change of [{ title: 'Other title' }, { message: 'other' }, { method: 'event' as const },
      { successRedirectUrl: 'https://other.example/' }, { cancelRedirectUrl: 'https://other.example/' }]) {
      assertError(await send({ ...body, ...change }), 409, 'CONFLICT', 'referenceNumber')
    }
    const other = await register(h)
    assertError(await send({ ...body, phoneNumber: other.phoneNumber }), 409, 'CONFLICT', 'referenceNumber')
    const d = await details(h, first.approvalNumber)
    assert.equal(d.title, body.title)
    assert.equal(d.method, body.method)
    assert.deepEqual((await send(body)).json(), first)
  })

  test('referenceNumbers are per key: another key with the same referenceNumber gets its own approval', async () => {
    const body = approvalBody({ phoneNumber: phone })
    const mine = (await send(body)).json()
    const otherKey = await h.key({ scopes: ['approvals'], vendor: 'Globex' })
    const theirs = (await send(body, otherKey)).json()
    assert.notEqual(theirs.approvalNumber, mine.approvalNumber)
    assert.equal((await details(h, theirs.approvalNumber)).vendorBrand, 'Globex')
    assert.equal((await details(h, mine.approvalNumber)).vendorBrand, 'Acme Bank')
  })

  test('concurrent identical requests create one approval', async () => {
    const body = approvalBody({ phoneNumber: phone })
    const before = await countApprovals()
    const responses = await Promise.all(Array.from({ length: 8 }, () => send(body)))
    for (const r of responses) assert.equal(r.statusCode, 200, r.body)
    assert.equal(new Set(responses.map((r) => r.json().approvalNumber)).size, 1)
    assert.equal(await countApprovals(), before + 1)
  })

  test('a retry after the approval expired or was decided -> 409 (a reference names one request)', async () => {
    const expiring = approvalBody({ phoneNumber: phone })
    const ref = (await send(expiring)).json().approvalNumber
    await setExpiry(h, ref, Date.now() - 1)
    assertError(await send(expiring), 409, 'CONFLICT', 'referenceNumber')

    const cancelled = approvalBody({ phoneNumber: phone })
    const ref2 = (await send(cancelled)).json().approvalNumber
    assert.equal((await post(h, '/numsys/approval-cancel', { approvalNumber: ref2 })).json().success, true)
    assertError(await send(cancelled), 409, 'CONFLICT', 'referenceNumber')
  })

  test('a failed verification leaves the approval pending; a retry still returns it', async () => {
    const body = approvalBody({ phoneNumber: phone })
    const ref = (await send(body)).json().approvalNumber
    const verdict = (await verifySignature(h, ref, 'AAAA')).json()
    assert.equal(verdict.success, false)
    assert.equal((await send(body)).json().approvalNumber, ref)
    assert.equal((await details(h, ref)).status, 'pending')
  })
})
