import { after, before, describe, test } from 'node:test'
import assert from 'node:assert/strict'
import { createHmac } from 'node:crypto'
import { computeZkLoginAddress } from '@mysten/sui/zklogin'
import { freshDatabaseEnv, startHarness, type Harness } from '../helpers.ts'
import { loadConfig } from '../../src/config.ts'
import { buildApp } from '../../src/http/app.ts'
import { openService } from '../../src/service.ts'
import { findByPhone } from '../../src/identity/numbers.ts'
import { deriveUserSalt } from '../../src/identity/zk-address.ts'
import { approvalBody, assertError, createApproval, details, localLedger, post, randomPhone, register } from '../support/kns.ts'

const URL = '/numsys/register-user-login'
const KNS_SECRET = 'test-secret-0123456789abcdef-0123456789abcdef'
let h: Harness

before(async () => { h = await startHarness({ KNS_SECRET, ZKLOGIN_ISSUER: 'https://issuer.example/oidc', ZKLOGIN_CLIENT_ID: 'kns-tests' }) })
after(async () => { await h.close() })

async function countRows(table: string): Promise<number> {
  const row = await h.service.db.get<{ n: number }>(`SELECT COUNT(*) AS n FROM ${table}`)
  return Number(row?.n)
}

describe('register-user-login: happy path', () => {
  test('registers a new number: userId, identifiers, zkAddress, nothing secret', async () => {
    const phone = randomPhone()
    const res = await post(h, URL, { email: 'new.user@example.com', phoneNumber: phone })
    assert.equal(res.statusCode, 200, res.body)
    const body = res.json()
    assert.deepEqual(Object.keys(body).sort(), ['identifiers', 'message', 'success', 'userId', 'zkAddress'])
    assert.equal(body.success, true)
    assert.equal(typeof body.message, 'string')
    assert.match(body.userId, /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/)
    assert.deepEqual(body.identifiers, [{ type: 'email', identifier: 'new.user@example.com' }, { type: 'phone', identifier: phone }])
    assert.match(body.zkAddress, /^0x[0-9a-f]{64}$/)
    assert.doesNotMatch(res.body, /salt/i)
  })

  test('zkAddress is the zkLogin address of (issuer, client ID, sub = userId, HMAC-derived salt)', async () => {
    const user = await register(h)
    // The salt formula is pinned here independently: changing it would move every user's wallet.
    const mac = createHmac('sha256', Buffer.from(KNS_SECRET, 'utf8'))
      .update(`kns/zklogin-salt/v1\0https://issuer.example/oidc\0kns-tests\0${user.userId}`).digest()
    const salt = BigInt(`0x${mac.subarray(0, 16).toString('hex')}`)
    assert.equal(salt, deriveUserSalt(h.service.secret, 'https://issuer.example/oidc', 'kns-tests', user.userId))
    const expected = computeZkLoginAddress({
      claimName: 'sub', claimValue: user.userId, iss: 'https://issuer.example/oidc', aud: 'kns-tests', userSalt: salt, legacyAddress: false,
    })
    assert.equal(user.zkAddress, expected)
  })

  test('mints a number-system token to the zkAddress, so approvals work at once', async () => {
    const user = await register(h)
    const link = await findByPhone(h.service.db, user.phoneNumber)
    assert.ok(link, 'the number is linked to a token')
    assert.equal(link.source, 'minted')
    assert.match(link.objectId, /^0x[0-9a-f]{64}$/)
    assert.deepEqual(await localLedger(h).getToken(link.objectId), { objectId: link.objectId, owner: user.zkAddress })

    const key = await h.key()
    const ref = await createApproval(h, key, approvalBody({ phoneNumber: user.phoneNumber }))
    const d = await details(h, ref)
    assert.equal(d.objectId, link.objectId)
    assert.equal(d.wallet, user.zkAddress)
  })

  test('the same number logs in: same userId, identifiers and zkAddress, no second token', async () => {
    const first = await register(h)
    const tokens = await countRows('ledger_objects')
    const again = await register(h, first.phoneNumber, first.email)
    assert.equal(again.userId, first.userId)
    assert.deepEqual(again.identifiers, first.identifiers)
    assert.equal(again.zkAddress, first.zkAddress)
    assert.equal(await countRows('ledger_objects'), tokens)
  })

  test('phone with or without "+" is the same number, stored as +E.164', async () => {
    const digits = randomPhone().slice(1)
    const first = await register(h, digits, 'plus@example.com')
    assert.deepEqual(first.identifiers, [{ type: 'email', identifier: 'plus@example.com' }, { type: 'phone', identifier: `+${digits}` }])
    const again = await register(h, `+${digits}`, 'plus@example.com')
    assert.equal(again.userId, first.userId)
    assert.equal(again.zkAddress, first.zkAddress)
    assert.ok(await findByPhone(h.service.db, `+${digits}`))
    assert.equal(await findByPhone(h.service.db, digits), null)
  })

  test('identifiers name what the request gave; the e-mail stored is the first one, never shown', async () => {
    const first = await register(h, randomPhone(), 'Mixed.Case@Example.COM')
    const again = await register(h, first.phoneNumber, 'mixed.case@example.com')
    assert.equal(again.userId, first.userId)
    assert.deepEqual(again.identifiers, [{ type: 'email', identifier: 'mixed.case@example.com' }, { type: 'phone', identifier: first.phoneNumber }])
    const stored = await h.service.db.get<{ email: string }>('SELECT email FROM users WHERE user_id = $1', [first.userId])
    assert.equal(stored?.email, 'Mixed.Case@Example.COM')
  })

  test('concurrent registrations of one number all get the same user and one token', async () => {
    const phone = randomPhone()
    const tokens = await countRows('ledger_objects')
    // Four: a process refuses a client's fifth registration at once (MAX_REGISTRATIONS_IN_PROGRESS).
    const responses = await Promise.all(Array.from({ length: 4 }, () => post(h, URL, { email: 'race@example.com', phoneNumber: phone })))
    for (const res of responses) assert.equal(res.statusCode, 200, res.body)
    const ids = new Set(responses.map((r) => (r.json() as { userId: string }).userId))
    const addresses = new Set(responses.map((r) => (r.json() as { zkAddress: string }).zkAddress))
    assert.equal(ids.size, 1)
    assert.equal(addresses.size, 1)
    assert.equal(await countRows('ledger_objects'), tokens + 1)
  })
})

describe('register-user-login: registering grants nothing and locks no one out', () => {
  test('another e-mail for a registered number: the same answer as for a new number, nothing changes, nothing shown', async () => {
    const user = await register(h, randomPhone(), 'owner@example.com')
    const link = (await findByPhone(h.service.db, user.phoneNumber))!
    const usersBefore = await h.service.db.all('SELECT * FROM users ORDER BY user_id')
    const tokens = await countRows('ledger_objects')

    const res = await post(h, URL, { email: 'attacker@example.com', phoneNumber: user.phoneNumber })
    assert.equal(res.statusCode, 200, res.body)
    const body = res.json() as { success: boolean; message: string; userId: string; identifiers: unknown; zkAddress: string }
    const fresh = (await post(h, URL, { email: 'attacker@example.com', phoneNumber: randomPhone() })).json() as typeof body
    assert.deepEqual(Object.keys(body).sort(), Object.keys(fresh).sort(), 'the same shape')
    assert.equal(body.message, fresh.message, 'the same message')
    assert.equal(body.success, true)
    assert.equal(body.userId, user.userId, 'the number\'s identity, which grants nothing: control follows the login codes')
    assert.doesNotMatch(res.body, /owner@example\.com/, 'the stored e-mail is never shown')

    const usersAfter = await h.service.db.all<{ user_id: string }>('SELECT * FROM users ORDER BY user_id')
    assert.deepEqual(usersAfter.filter((u) => u.user_id !== fresh.userId), usersBefore, 'the registered user unchanged')
    assert.deepEqual(await findByPhone(h.service.db, user.phoneNumber), link)
    assert.deepEqual(await localLedger(h).getToken(link.objectId), { objectId: link.objectId, owner: user.zkAddress })
    assert.equal(await countRows('ledger_objects'), tokens + 1, 'only the fresh number got a token')

    // The rightful owner still registers (and logs in with a code: test/accounts).
    const again = await register(h, user.phoneNumber, 'owner@example.com')
    assert.equal(again.userId, user.userId)
    assert.equal(again.zkAddress, user.zkAddress)
  })

  test('a registered and an unregistered number get answers that cannot be told apart', async () => {
    const registered = await register(h, randomPhone(), 'someone@example.com')
    const a = await post(h, URL, { email: 'probe@example.com', phoneNumber: registered.phoneNumber })
    const b = await post(h, URL, { email: 'probe@example.com', phoneNumber: randomPhone() })
    assert.equal(a.statusCode, b.statusCode)
    const strip = (r: typeof a) => { const { userId: _u, zkAddress: _z, identifiers: _i, ...rest } = r.json() as Record<string, unknown>; return rest }
    assert.deepEqual(strip(a), strip(b))
    assert.deepEqual(Object.keys(a.headers).filter((k) => k !== 'date' && k !== 'x-request-id' && k !== 'content-length').sort(),
      Object.keys(b.headers).filter((k) => k !== 'date' && k !== 'x-request-id' && k !== 'content-length').sort())
  })
})

describe('register-user-login: the answer time does not tell', () => {
  const median = (xs: number[]) => { const s = [...xs].sort((a, b) => a - b); return (s[(s.length - 1) >> 1]! + s[s.length >> 1]!) / 2 }
  const timed = async (phoneNumber: string) => {
    const started = performance.now()
    const res = await post(h, URL, { email: 'probe@example.com', phoneNumber })
    assert.equal(res.statusCode, 200, res.body)
    return performance.now() - started
  }

  test('new and registered numbers, interleaved: the medians of their answer times within 1.5x', async () => {
    // Before: 2-3x (a new number's derivation, inserts, mint and durable commit against two
    // reads). Medians of interleaved samples (new, registered, registered, new, ...), so the
    // machine's drift weighs on both alike; the bound is generous, the old code's gap is not.
    const pairs = 16
    const registered: string[] = []
    for (let i = 0; i < pairs; i++) registered.push((await register(h)).phoneNumber)
    const [fresh, known]: [number[], number[]] = [[], []]
    for (let i = 0; i < pairs; i++) {
      if (i % 2 === 0) { fresh.push(await timed(randomPhone())); known.push(await timed(registered[i]!)) }
      else { known.push(await timed(registered[i]!)); fresh.push(await timed(randomPhone())) }
    }
    const [a, b] = [median(fresh), median(known)]
    assert.ok(Math.max(a, b) / Math.min(a, b) <= 1.5, `median ${a.toFixed(1)} ms for new numbers, ${b.toFixed(1)} ms for registered ones`)
  })
})

describe('register-user-login: validation', () => {
  const valid = () => ({ email: 'valid@example.com', phoneNumber: randomPhone() })

  for (const field of ['email', 'phoneNumber'] as const) {
    test(`missing ${field} -> 400 naming it`, async () => {
      const body: Record<string, string> = valid()
      delete body[field]
      assertError(await post(h, URL, body), 400, 'INVALID_REQUEST', field)
    })
  }

  const badEmails = ['', 'no-at-sign', 'a@b', 'two@@example.com', 'sp ace@example.com', ' lead@example.com', 'x@exa mple.com',
    `${'a'.repeat(65)}@example.com`, `a@${'b'.repeat(250)}.com`]
  for (const email of badEmails) {
    test(`invalid email ${JSON.stringify(email.length > 40 ? `${email.slice(0, 20)}…(${email.length})` : email)} -> 400`, async () => {
      assertError(await post(h, URL, { ...valid(), email }), 400, 'INVALID_REQUEST', 'email')
    })
  }

  const badPhones = ['', '+', '12345', '+12345', '+0123456789', '0123456789', '+1234567890123456', '+1 415 555 0100', '+1-415-555-0100',
    'abc', '+44 20', '++441234567', '44201234567x']
  for (const phoneNumber of badPhones) {
    test(`invalid phoneNumber ${JSON.stringify(phoneNumber)} -> 400`, async () => {
      assertError(await post(h, URL, { ...valid(), phoneNumber }), 400, 'INVALID_REQUEST', 'phoneNumber')
    })
  }

  test('boundary phone lengths: 6 and 15 digits are accepted', async () => {
    await register(h, `+9${String(Math.floor(Math.random() * 1e5)).padStart(5, '0')}`)
    await register(h, `+9${String(Math.floor(Math.random() * 1e14)).padStart(14, '0')}`)
  })

  test('non-string fields -> 400', async () => {
    assertError(await post(h, URL, { email: 42, phoneNumber: randomPhone() }), 400, 'INVALID_REQUEST', 'email')
    assertError(await post(h, URL, { email: 'n@example.com', phoneNumber: 4420123456789 }), 400, 'INVALID_REQUEST', 'phoneNumber')
  })

  test('empty object, array and no body -> 400', async () => {
    assertError(await post(h, URL, {}), 400, 'INVALID_REQUEST')
    assertError(await post(h, URL, [valid()]), 400, 'INVALID_REQUEST')
    assertError(await h.app.inject({ method: 'POST', url: URL }), 400, 'INVALID_REQUEST')
  })

  test('a refused request creates nothing', async () => {
    const users = await countRows('users')
    assertError(await post(h, URL, { email: 'bad', phoneNumber: randomPhone() }), 400, 'INVALID_REQUEST', 'email')
    assert.equal(await countRows('users'), users)
  })
})

describe('register-user-login: stable across restarts', () => {
  test('closing and reopening the service on the same database returns the same identity (generated secret)', async () => {
    // No KNS_SECRET: the secret is generated once and kept in the database.
    const fresh = await freshDatabaseEnv()
    try {
      const phone = randomPhone()
      const payload = { email: 'restart@example.com', phoneNumber: phone }
      const s1 = await openService(loadConfig(fresh.env))
      const a1 = await buildApp(s1, { logger: false })
      const r1 = await a1.inject({ method: 'POST', url: URL, payload })
      assert.equal(r1.statusCode, 200, r1.body)
      const objectId = (await findByPhone(s1.db, phone))!.objectId
      await a1.close()
      await s1.close()

      const s2 = await openService(loadConfig(fresh.env))
      const a2 = await buildApp(s2, { logger: false })
      try {
        const r2 = await a2.inject({ method: 'POST', url: URL, payload: { ...payload, phoneNumber: phone.slice(1) } })
        assert.equal(r2.statusCode, 200, r2.body)
        const [b1, b2] = [r1.json(), r2.json()]
        assert.equal(b2.userId, b1.userId)
        assert.deepEqual(b2.identifiers, b1.identifiers)
        assert.equal(b2.zkAddress, b1.zkAddress)
        assert.equal((await findByPhone(s2.db, phone))!.objectId, objectId)
        // A new user after the restart gets the address the persisted secret dictates.
        const r3 = await a2.inject({ method: 'POST', url: URL, payload: { email: 'later@example.com', phoneNumber: randomPhone() } })
        const b3 = r3.json()
        assert.equal(b3.zkAddress, computeZkLoginAddress({
          claimName: 'sub', claimValue: b3.userId, iss: s2.config.zkLoginIssuer, aud: s2.config.zkLoginClientId,
          userSalt: deriveUserSalt(s2.secret, s2.config.zkLoginIssuer, s2.config.zkLoginClientId, b3.userId), legacyAddress: false,
        }))
      } finally {
        await a2.close()
        await s2.close()
      }
    } finally {
      await fresh.cleanup()
    }
  })

  test('a second service on the harness database (another process) sees the same identity', async () => {
    const user = await register(h)
    const s2 = await openService(loadConfig(h.env))
    const a2 = await buildApp(s2, { logger: false })
    try {
      const res = await a2.inject({ method: 'POST', url: URL, payload: { email: user.email, phoneNumber: user.phoneNumber } })
      assert.equal(res.statusCode, 200, res.body)
      assert.equal(res.json().userId, user.userId)
      assert.equal(res.json().zkAddress, user.zkAddress)
    } finally {
      await a2.close()
      await s2.close()
    }
  })
})
