import { after, before, describe, test } from 'node:test'
import assert from 'node:assert/strict'
import { startHarness, type Harness } from '../helpers.ts'
import { COMMON_FIELDS, INVALID_VALUES, VALID_EDGES } from '../support/approval-validation.ts'
import { approvalBody, assertError, details, newKeypair, ownedToken, post, randomObjectId, register } from '../support/kns.ts'
import { findByPhone } from '../../src/identity/numbers.ts'

const URL = '/numsys/approval-object-id'
let h: Harness
let key: string
let objectId: string
let phone: string

before(async () => {
  h = await startHarness()
  key = await h.key({ scopes: ['approvals'], vendor: 'Initech Mobile' })
  const user = await register(h)
  phone = user.phoneNumber
  objectId = (await findByPhone(h.service.db, phone))!.objectId
})
after(async () => { await h.close() })

const send = (body: unknown, apiKey = key) => post(h, URL, body, { 'x-api-key': apiKey })

describe('approval-object-id: happy path', () => {
  test('returns { approvalUrl, approvalNumber } for an existing token', async () => {
    const res = await send(approvalBody({ objectId }))
    assert.equal(res.statusCode, 200, res.body)
    const body = res.json()
    assert.deepEqual(Object.keys(body).sort(), ['approvalNumber', 'approvalUrl'])
    assert.match(body.approvalNumber, /^[0-9a-f]{24}$/)
    // Harness default PUBLIC_BASE_URL: http://localhost:$PORT (8080).
    assert.equal(body.approvalUrl, `${h.service.config.publicBaseUrl}/approve?ref=${body.approvalNumber}`)
    assert.equal(body.approvalUrl, `http://localhost:8080/approve?ref=${body.approvalNumber}`)
    const d = await details(h, body.approvalNumber)
    assert.equal(d.objectId, objectId)
    assert.equal(d.phoneNumber, phone, 'the number is known, so it is reported for the object-ID variant too')
    assert.equal(d.vendorBrand, 'Initech Mobile')
  })

  test('an upper-case object ID is accepted and stored canonically (lowercase)', async () => {
    const upper = `0x${objectId.slice(2).toUpperCase()}`
    const res = await send(approvalBody({ objectId: upper }))
    assert.equal(res.statusCode, 200, res.body)
    assert.equal((await details(h, res.json().approvalNumber)).objectId, objectId)
  })

  test('a token whose number is not known: approval works, no phoneNumber in the details', async () => {
    const token = await ownedToken(h, newKeypair(), { link: false })
    const res = await send(approvalBody({ objectId: token.objectId }))
    assert.equal(res.statusCode, 200, res.body)
    const d = await details(h, res.json().approvalNumber)
    assert.equal(d.objectId, token.objectId)
    assert.equal('phoneNumber' in d, false)
    assert.equal(d.wallet, token.owner)
  })

  for (const edge of VALID_EDGES) {
    test(`accepts ${edge.field} with ${edge.why}`, async () => {
      const res = await send(approvalBody({ objectId }, { [edge.field]: edge.value }))
      assert.equal(res.statusCode, 200, res.body)
    })
  }
})

describe('approval-object-id: validation', () => {
  for (const field of [...COMMON_FIELDS, 'objectId']) {
    test(`missing ${field} -> 400 naming it`, async () => {
      const body: Record<string, unknown> = { ...approvalBody({ objectId }) }
      delete body[field]
      assertError(await send(body), 400, 'INVALID_REQUEST', field)
    })
  }

  for (const { field, value, why } of INVALID_VALUES) {
    test(`${field} as ${why} -> 400`, async () => {
      assertError(await send(approvalBody({ objectId }, { [field]: value } as object)), 400, 'INVALID_REQUEST', field)
    })
  }

  const badIds: [string, unknown][] = [
    ['empty', ''],
    ['65 characters', `0x${'a'.repeat(63)}`],
    ['67 characters', `0x${'a'.repeat(65)}`],
    ['no 0x prefix', 'a'.repeat(66)],
    ['0X prefix', `0X${'a'.repeat(64)}`],
    ['a non-hex digit', `0x${'a'.repeat(63)}g`],
    ['short form 0x2', '0x2'],
    ['a phone number', '+442012345678'],
    ['a number', 1234],
  ]
  for (const [why, value] of badIds) {
    test(`objectId as ${why} -> 400`, async () => {
      assertError(await send({ ...approvalBody({ objectId }), objectId: value }), 400, 'INVALID_REQUEST', 'objectId')
    })
  }

  test('a phoneNumber instead of an objectId -> 400 objectId required', async () => {
    const { objectId: _, ...rest } = approvalBody({ objectId })
    assertError(await send({ ...rest, phoneNumber: phone }), 400, 'INVALID_REQUEST', 'objectId')
  })
})

describe('approval-object-id: unknown token', () => {
  test('an object ID that is no token on the ledger -> 404 naming objectId', async () => {
    assertError(await send(approvalBody({ objectId: randomObjectId() })), 404, 'NOT_FOUND', 'objectId')
  })

  test('an object ID that exists only as the KNS package, not a token -> 404', async () => {
    // The package ID itself exists nowhere as a token.
    const pkg = h.service.ledger.tokenType.split('::')[0]!
    assertError(await send(approvalBody({ objectId: pkg })), 404, 'NOT_FOUND', 'objectId')
  })
})

describe('approval-object-id: retries', () => {
  test('same body -> same approval; different body -> 409', async () => {
    const body = approvalBody({ objectId })
    const first = (await send(body)).json()
    assert.deepEqual((await send(body)).json(), first)
    // The same object ID in upper case is the same request.
    assert.deepEqual((await send({ ...body, objectId: `0x${objectId.slice(2).toUpperCase()}` })).json(), first)
    assertError(await send({ ...body, message: 'changed' }), 409, 'CONFLICT', 'referenceNumber')
    const other = await ownedToken(h, newKeypair())
    assertError(await send({ ...body, objectId: other.objectId }), 409, 'CONFLICT', 'referenceNumber')
  })

  test('a referenceNumber used on approval-phone conflicts on approval-object-id (one namespace per key)', async () => {
    const viaPhone = approvalBody({ phoneNumber: phone })
    const res = await post(h, '/numsys/approval-phone', viaPhone, { 'x-api-key': key })
    assert.equal(res.statusCode, 200, res.body)
    const { phoneNumber: _, ...rest } = viaPhone
    assertError(await send({ ...rest, objectId }), 409, 'CONFLICT', 'referenceNumber')
  })
})
