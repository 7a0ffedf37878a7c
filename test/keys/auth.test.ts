import { after, before, describe, test } from 'node:test'
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { startHarness, type Harness } from '../helpers.ts'
import { loadConfig } from '../../src/config.ts'
import { ApiKeyAuthenticator, createApiKey, listApiKeys, revokeApiKey, type Scope } from '../../src/keys/api-keys.ts'
import type { Executor } from '../../src/db/engine.ts'
import { openService } from '../../src/service.ts'
import { approvalBody, assertError, post, register, sleep } from '../support/kns.ts'
import { findByPhone } from '../../src/identity/numbers.ts'

let h: Harness
let phone: string
let objectId: string

before(async () => {
  h = await startHarness()
  phone = (await register(h)).phoneNumber
  objectId = (await findByPhone(h.service.db, phone))!.objectId
})
after(async () => { await h.close() })

/** Both key-protected endpoints, each with a valid body for it. */
const ENDPOINTS = [
  { url: '/numsys/approval-phone', body: () => approvalBody({ phoneNumber: phone }) },
  { url: '/numsys/approval-object-id', body: () => approvalBody({ objectId }) },
]

async function newKey(options: { scopes?: Scope[]; rate?: number; vendor?: string } = {}) {
  return createApiKey(h.service.db, { vendor: options.vendor ?? 'Auth Test', scopes: options.scopes ?? ['approvals'], rate: options.rate ?? 1000 })
}

for (const { url, body } of ENDPOINTS) {
  describe(`${url}: API key`, () => {
    test('no x-api-key -> 401 UNAUTHORIZED', async () => {
      const res = await post(h, url, body())
      const err = assertError(res, 401, 'UNAUTHORIZED')
      assert.match(err.message as string, /x-api-key/)
    })

    test('empty x-api-key -> 401', async () => {
      assertError(await post(h, url, body(), { 'x-api-key': '' }), 401, 'UNAUTHORIZED')
    })

    test('malformed key -> 401', async () => {
      for (const bad of ['nope', 'kns_', 'Bearer abc', `kns_XYZ_${'a'.repeat(43)}`, `kns_0123456789abcdef_${'a'.repeat(42)}`]) {
        assertError(await post(h, url, body(), { 'x-api-key': bad }), 401, 'UNAUTHORIZED')
      }
    })

    test('well-formed unknown key -> 401', async () => {
      const unknown = `kns_${randomBytes(8).toString('hex')}_${randomBytes(32).toString('base64url')}`
      assertError(await post(h, url, body(), { 'x-api-key': unknown }), 401, 'UNAUTHORIZED')
    })

    test('known key ID with a wrong secret -> 401', async () => {
      const real = await newKey()
      const forged = `kns_${real.id}_${randomBytes(32).toString('base64url')}`
      assertError(await post(h, url, body(), { 'x-api-key': forged }), 401, 'UNAUTHORIZED')
      // ... and the real one still works.
      assert.equal((await post(h, url, body(), { 'x-api-key': real.key })).statusCode, 200)
    })

    test('key without the approvals scope -> 403 FORBIDDEN', async () => {
      const caller = await newKey({ scopes: ['caller'] })
      const err = assertError(await post(h, url, body(), { 'x-api-key': caller.key }), 403, 'FORBIDDEN')
      assert.match(err.message as string, /approvals/)
      const admin = await newKey({ scopes: ['stats', 'webhooks', 'oidc', 'caller'] })
      assertError(await post(h, url, body(), { 'x-api-key': admin.key }), 403, 'FORBIDDEN')
    })

    test('the error never echoes the presented key', async () => {
      const real = await newKey()
      const forged = `kns_${real.id}_${randomBytes(32).toString('base64url')}`
      const res = await post(h, url, body(), { 'x-api-key': forged })
      assert.equal(res.statusCode, 401)
      assert.doesNotMatch(res.body, new RegExp(forged.slice(21)))
    })
  })
}

describe('revocation', () => {
  test('a revoked key stops working within 1 second (auth cache is at most 500 ms)', async () => {
    const created = await newKey()
    const url = ENDPOINTS[0]!.url
    assert.equal((await post(h, url, approvalBody({ phoneNumber: phone }), { 'x-api-key': created.key })).statusCode, 200)
    const revoked = await revokeApiKey(h.service.db, created.id)
    assert.equal(typeof revoked.revokedAt, 'number')
    await sleep(600)
    const err = assertError(await post(h, url, approvalBody({ phoneNumber: phone }), { 'x-api-key': created.key }), 401, 'UNAUTHORIZED')
    assert.match(err.message as string, /revoked/)
    assertError(await post(h, ENDPOINTS[1]!.url, approvalBody({ objectId }), { 'x-api-key': created.key }), 401, 'UNAUTHORIZED')
  })

  test('revocation through another process on the same database (as `kns api-key revoke`) takes effect', async () => {
    const created = await newKey()
    const url = ENDPOINTS[0]!.url
    assert.equal((await post(h, url, approvalBody({ phoneNumber: phone }), { 'x-api-key': created.key })).statusCode, 200)
    const other = await openService(loadConfig(h.env))
    try {
      await revokeApiKey(other.db, created.id)
    } finally {
      await other.close()
    }
    await sleep(1000)
    assertError(await post(h, url, approvalBody({ phoneNumber: phone }), { 'x-api-key': created.key }), 401, 'UNAUTHORIZED')
  })

  test('verifiedId (admission\'s client identity): only a key that authenticated, by its id; a forged or revoked one is null', async () => {
    const created = await newKey()
    const auth = new ApiKeyAuthenticator(h.service.db)
    assert.equal(auth.verifiedId(created.key), null, 'never authenticated yet')
    const forged = `kns_${created.id}_${'A'.repeat(43)}`
    await assert.rejects(auth.authenticate(forged), /invalid API key/)
    assert.equal(auth.verifiedId(forged), null, 'the real id with a wrong secret is no identity')
    assert.equal(auth.verifiedId(`kns_${randomBytes(8).toString('hex')}_x`), null)
    await auth.authenticate(created.key)
    assert.equal(auth.verifiedId(created.key), created.id)
    await revokeApiKey(h.service.db, created.id)
    await sleep(600)
    await assert.rejects(auth.authenticate(created.key), /revoked/)
    assert.equal(auth.verifiedId(created.key), null, 'revoked: no identity of its own any more')
  })

  test('a key in use is re-read in the background before its entry expires; a revocation still ends it within the bound', async () => {
    const created = await newKey()
    let reads = 0
    const db = h.service.db
    const counting = { ...db, engine: db.engine, get: (sql: string, params?: readonly unknown[]) => { reads++; return db.get(sql, params) } } as unknown as Executor
    const auth = new ApiKeyAuthenticator(counting)
    await auth.authenticate(created.key)
    assert.equal(reads, 1)
    await sleep(350)
    // Less than 200 ms left: answered from the entry, and one read starts behind it.
    await Promise.all([auth.authenticate(created.key), auth.authenticate(created.key)])
    await sleep(50)
    assert.equal(reads, 2)
    await sleep(200)
    // Past the first entry's 500 ms: the background read renewed it, nothing waits.
    await auth.authenticate(created.key)
    assert.equal(reads, 2)
    await revokeApiKey(db, created.id)
    await sleep(600)
    await assert.rejects(auth.authenticate(created.key), /revoked/)
  })

  test('revoking is idempotent and listed; other keys keep working', async () => {
    const a = await newKey()
    const b = await newKey()
    const first = await revokeApiKey(h.service.db, a.id)
    const second = await revokeApiKey(h.service.db, a.id)
    assert.equal(second.revokedAt, first.revokedAt)
    const listed = (await listApiKeys(h.service.db)).find((k) => k.id === a.id)
    assert.equal(listed?.revokedAt, first.revokedAt)
    await sleep(600)
    assert.equal((await post(h, ENDPOINTS[0]!.url, approvalBody({ phoneNumber: phone }), { 'x-api-key': b.key })).statusCode, 200)
  })

  test('the stored row holds a hash, never the key or its secret', async () => {
    const created = await newKey()
    const row = await h.service.db.get<Record<string, unknown>>('SELECT * FROM api_keys WHERE id = $1', [created.id])
    const secret = created.key.split('_').slice(2).join('_')
    assert.ok(row)
    assert.doesNotMatch(JSON.stringify(row), new RegExp(secret.replace(/[-]/g, '\\-')))
  })
})

describe('rate limiting', () => {
  test('a key with rate 1 gets 429 with Retry-After once its burst is spent; other keys are unaffected', async () => {
    const limited = await newKey({ rate: 1 })
    const url = ENDPOINTS[0]!.url
    const body = approvalBody({ phoneNumber: phone })
    const statuses: number[] = []
    let limitedRes
    for (let i = 0; i < 5; i++) {
      const res = await post(h, url, body, { 'x-api-key': limited.key })
      statuses.push(res.statusCode)
      if (res.statusCode === 429) limitedRes = res
    }
    assert.equal(statuses[0], 200)
    assert.ok(statuses.includes(429), `statuses: ${statuses.join(',')}`)
    assert.ok(limitedRes)
    const err = assertError(limitedRes, 429, 'RATE_LIMITED')
    assert.equal(typeof err.message, 'string')
    const retryAfter = Number(limitedRes.headers['retry-after'])
    assert.ok(Number.isInteger(retryAfter) && retryAfter >= 1, `Retry-After ${String(limitedRes.headers['retry-after'])}`)

    const fresh = await newKey({ rate: 1 })
    assert.equal((await post(h, url, body, { 'x-api-key': fresh.key })).statusCode, 200)

    // The bucket refills: after Retry-After the limited key works again.
    await sleep(retryAfter * 1000 + 100)
    assert.equal((await post(h, url, body, { 'x-api-key': limited.key })).statusCode, 200)
  })

  test('open endpoints are limited per client IP when PUBLIC_RATE_LIMIT is set', async () => {
    const limitedHarness = await startHarness({ PUBLIC_RATE_LIMIT: '1' })
    try {
      const statuses: number[] = []
      let last
      for (let i = 0; i < 5; i++) {
        last = await limitedHarness.app.inject({ method: 'GET', url: `/numsys/transaction_details?ref=${'0'.repeat(24)}` })
        statuses.push(last.statusCode)
      }
      assert.equal(statuses[0], 404)
      assert.equal(statuses.at(-1), 429, statuses.join(','))
      assertError(last!, 429, 'RATE_LIMITED')
      assert.ok(Number(last!.headers['retry-after']) >= 1)
      // Operations endpoints are never limited.
      assert.equal((await limitedHarness.app.inject({ method: 'GET', url: '/healthz' })).statusCode, 200)
    } finally {
      await limitedHarness.close()
    }
  })
})

describe('client addresses behind proxies (TRUST_PROXY)', () => {
  /** How many of 20 requests from `remoteAddress`, each forwarding `chain(i)`, a per-address limit of 2/s refused. */
  async function refusedOf20(env: Record<string, string>, chain: (i: number) => string, remoteAddress = '10.0.0.2'): Promise<number> {
    const harness = await startHarness({ PUBLIC_RATE_LIMIT: '2', ...env })
    try {
      let refused = 0
      for (let i = 0; i < 20; i++) {
        const res = await harness.app.inject({
          method: 'GET', url: `/numsys/transaction_details?ref=${'0'.repeat(24)}`, remoteAddress, headers: { 'x-forwarded-for': chain(i) },
        })
        if (res.statusCode === 429) refused++
      }
      return refused
    } finally {
      await harness.close()
    }
  }
  /** A client forging a fresh left-most address each time; the proxy appended the real one (203.0.113.9). */
  const forged = (i: number) => `198.51.100.${i + 1}, 203.0.113.9`
  /** 20 different real clients behind two proxies (the load balancer 10.0.0.7 in front of the socket's peer). */
  const distinct = (i: number) => `198.51.100.${i + 1}, 10.0.0.7`

  test('one hop (TRUST_PROXY=1): the address the proxy appended counts, so a forged left-most one does not escape the limit', async () => {
    assert.ok(await refusedOf20({ TRUST_PROXY: '1' }, forged) >= 15)
  })

  test('two hops: the clients behind both proxies are told apart', async () => {
    assert.equal(await refusedOf20({ TRUST_PROXY: '2' }, distinct), 0)
  })

  test('the proxies\' ranges: the first address from the right outside them is the client', async () => {
    assert.equal(await refusedOf20({ TRUST_PROXY: '10.0.0.0/8' }, distinct), 0, 'clients behind the trusted proxies are told apart')
    assert.ok(await refusedOf20({ TRUST_PROXY: '10.0.0.0/8' }, forged) >= 15, '203.0.113.9 is not a proxy: it is the client')
    // A peer outside the ranges is itself the client, whatever it forwards.
    assert.ok(await refusedOf20({ TRUST_PROXY: '10.0.0.0/8' }, distinct, '192.0.2.50') >= 15)
  })

  test('unset: X-Forwarded-For is the client\'s to write and is ignored', async () => {
    assert.ok(await refusedOf20({}, distinct) >= 15)
  })
})

describe('keys are not needed where the contract has none', () => {
  test('register, transaction_details and verification answer without x-api-key', async () => {
    assert.notEqual((await post(h, '/numsys/register-user-login', { email: 'k@example.com', phoneNumber: phone })).statusCode, 401)
    assert.notEqual((await h.app.inject({ method: 'GET', url: `/numsys/transaction_details?ref=${'0'.repeat(24)}` })).statusCode, 401)
    assert.notEqual((await post(h, '/numsys/verify_signature', { approvalNumber: '0'.repeat(24), signature: 'AAAA' })).statusCode, 401)
  })
})
