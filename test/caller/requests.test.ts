/**
 * The request side of both caller endpoints: malformed bodies (400), the API key (401 / 403
 * with scope `caller`), and POST /numsys/object-id-lookup.
 */
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import type { Harness } from '../helpers.ts'
import { assertError } from '../support/kns.ts'
import {
  ledgerVerdict,
  callerNumber, callerSetup, claims, localLedger, randomPhone, shakenHeader, signRaw, sleep, verifyCall, type CallerNumber, type Response,
} from '../support/caller.ts'

let h: Harness
let key: string
let num: CallerNumber
let jwt: string
const dest = randomPhone()

before(async () => {
  let signer
  ;({ h, key, num, signer } = await callerSetup({ keystores: 3 }))
  jwt = signRaw(shakenHeader(signer.keyId), claims(num.phone, dest), signer.privateKey)
})

after(async () => {
  await h?.close()
})

const lookup = (k: string | undefined, payload: unknown, headers: Record<string, string> = {}): Promise<Response> =>
  h.app.inject({ method: 'POST', url: '/numsys/object-id-lookup', payload: payload as object, headers: { ...(k === undefined ? {} : { 'x-api-key': k }), ...headers } })

describe('call-signature-verification: request body', () => {
  test('the valid body verifies (baseline for the cases below); unknown extra fields are ignored', async () => {
    const res = await verifyCall(h, key, { origTN: num.phone, destTN: dest, jwt, extra: 'ignored' })
    assert.equal(res.statusCode, 200, res.body)
    assert.deepEqual(ledgerVerdict(res.json()), { success: true })
  })

  test('a missing field -> 400 naming it', async () => {
    for (const field of ['origTN', 'destTN', 'jwt'] as const) {
      const body: Record<string, unknown> = { origTN: num.phone, destTN: dest, jwt }
      delete body[field]
      assertError(await verifyCall(h, key, body), 400, 'INVALID_REQUEST', field)
    }
  })

  test('origTN / destTN that are not E.164 -> 400', async () => {
    for (const bad of ['12345', '+0123456789', '0441234567', 'abc', '+1 415 555 0100', '+1-415-555-0100', '1234567890123456', '', '+', 14155550100]) {
      assertError(await verifyCall(h, key, { origTN: bad, destTN: dest, jwt }), 400, 'INVALID_REQUEST', 'origTN')
      assertError(await verifyCall(h, key, { origTN: num.phone, destTN: bad, jwt }), 400, 'INVALID_REQUEST', 'destTN')
    }
  })

  test('jwt empty, not a string, or over the 16 KiB transport bound -> 400', async () => {
    for (const bad of ['', 42, null, [jwt], { jwt }, 'x'.repeat(16385)]) {
      assertError(await verifyCall(h, key, { origTN: num.phone, destTN: dest, jwt: bad }), 400, 'INVALID_REQUEST', 'jwt')
    }
  })

  test('debug not a boolean -> 400 (no coercion of "true", 1, null)', async () => {
    for (const debug of ['true', 'false', 1, 0, null, {}]) {
      assertError(await verifyCall(h, key, { origTN: num.phone, destTN: dest, jwt, debug }), 400, 'INVALID_REQUEST', 'debug')
    }
  })

  test('a body that is not a JSON object -> 400; not JSON at all -> 400 / 415', async () => {
    for (const payload of ['[]', '"jwt"', '42', 'null', '{"origTN":']) {
      const res = await h.app.inject({ method: 'POST', url: '/numsys/call-signature-verification', payload, headers: { 'x-api-key': key, 'content-type': 'application/json' } })
      assertError(res, 400, 'INVALID_REQUEST')
    }
    const text = await h.app.inject({ method: 'POST', url: '/numsys/call-signature-verification', payload: jwt, headers: { 'x-api-key': key, 'content-type': 'text/plain' } })
    assertError(text, 415, 'UNSUPPORTED_MEDIA_TYPE')
  })

  test('a malformed body with a failing verification would-be: 400, never a 200 verdict', async () => {
    const res = await verifyCall(h, key, { origTN: 'nope', destTN: dest, jwt: 'a.b.c', debug: true })
    assertError(res, 400, 'INVALID_REQUEST')
    assert.ok(!('debug' in (res.json() as object)))
  })
})

describe('API key: scope caller', () => {
  test('no key, empty key, unknown key -> 401 (before the body is looked at)', async () => {
    const body = { origTN: num.phone, destTN: dest, jwt }
    assertError(await verifyCall(h, undefined, body), 401, 'UNAUTHORIZED')
    assertError(await verifyCall(h, undefined, { nonsense: true }), 401, 'UNAUTHORIZED')
    assertError(await verifyCall(h, '', body), 401, 'UNAUTHORIZED')
    assertError(await verifyCall(h, `${key.slice(0, -4)}AAAA`, body), 401, 'UNAUTHORIZED')
    assertError(await lookup(undefined, { phoneNumber: num.phone }), 401, 'UNAUTHORIZED')
    assertError(await lookup('kns_nothing', { phoneNumber: 'bad' }), 401, 'UNAUTHORIZED')
  })

  test('a key without the caller scope -> 403 on both endpoints; approvals+caller works', async () => {
    for (const scopes of [['approvals'], ['stats', 'webhooks', 'oidc'], ['approvals', 'signing']] as const) {
      const other = await h.key({ scopes: [...scopes] })
      const res = await verifyCall(h, other, { origTN: num.phone, destTN: dest, jwt })
      assert.match(assertError(res, 403, 'FORBIDDEN').message as string, /caller/)
      assertError(await lookup(other, { phoneNumber: num.phone }), 403, 'FORBIDDEN')
    }
    const both = await h.key({ scopes: ['approvals', 'caller'] })
    assert.deepEqual(ledgerVerdict((await verifyCall(h, both, { origTN: num.phone, destTN: dest, jwt })).json()), { success: true })
    assert.equal((await lookup(both, { phoneNumber: num.phone })).statusCode, 200)
  })

  test('the key is never echoed in an error', async () => {
    const other = await h.key({ scopes: ['approvals'] })
    const res = await verifyCall(h, other, { origTN: num.phone, destTN: dest, jwt })
    assert.ok(!res.body.includes(other))
  })
})

describe('object-id-lookup', () => {
  test('objectId and the linked registries, in link order, stable across calls and +/no + forms', async () => {
    const first = await lookup(key, { phoneNumber: num.phone })
    assert.equal(first.statusCode, 200, first.body)
    assert.deepEqual(first.json(), { objectId: num.tokenId, registries: num.keystoreIds })
    for (const phoneNumber of [num.phone, num.phone.slice(1), num.phone]) {
      assert.deepEqual((await lookup(key, { phoneNumber })).json(), { objectId: num.tokenId, registries: num.keystoreIds })
    }
  })

  test('registries [] when none is linked', async () => {
    const bare = await callerNumber(h, { keystores: 0 })
    const res = await lookup(key, { phoneNumber: bare.phone })
    assert.equal(res.statusCode, 200, res.body)
    assert.deepEqual(res.json(), { objectId: bare.tokenId, registries: [] })
  })

  test('a keystore linked later comes last; an unlinked one disappears; relinking appends it again', async () => {
    const n = await callerNumber(h, { keystores: 2 })
    const keystores = localLedger(h).keystores
    const [a, b] = n.keystoreIds as [string, string]
    await keystores.unlink(n.tokenId, a)
    await sleep(3)
    await keystores.link(n.tokenId, a)
    // The in-process cache is invalidated by the change signal within a poll interval.
    const deadline = Date.now() + 2000
    let body: unknown
    do {
      body = (await lookup(key, { phoneNumber: n.phone })).json()
      if (JSON.stringify(body) === JSON.stringify({ objectId: n.tokenId, registries: [b, a] })) break
      await sleep(20)
    } while (Date.now() < deadline)
    assert.deepEqual(body, { objectId: n.tokenId, registries: [b, a] })
  })

  test('a number without a token -> 404 with the JSON error body', async () => {
    const res = await lookup(key, { phoneNumber: randomPhone() })
    const error = assertError(res, 404, 'NOT_FOUND', 'phoneNumber')
    assert.match(error.message as string, /token/)
  })

  test('a malformed or missing number -> 400', async () => {
    for (const phoneNumber of ['12345', '+0123456789', 'tel:+14155550100', '', 14155550100, null]) {
      assertError(await lookup(key, { phoneNumber }), 400, 'INVALID_REQUEST', 'phoneNumber')
    }
    assertError(await lookup(key, {}), 400, 'INVALID_REQUEST', 'phoneNumber')
    assertError(await lookup(key, { objectId: num.tokenId }), 400, 'INVALID_REQUEST', 'phoneNumber')
  })
})
