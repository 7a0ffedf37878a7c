/**
 * One-time login codes: each limit has a test that fails without it (brute force, expiry,
 * resend cooldown, per-number, per-address and per-prefix sends), and a number without an
 * account gets the same answer and no text.
 */
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { LoginCodes, MAX_ATTEMPTS, CODE_TTL_MS, type LoginCodeLimits } from '../../src/accounts/login-codes.ts'
import { COUNT_BUDGETS } from '../../src/accounts/send-budgets.ts'
import type { SmsMessage, SmsSender } from '../../src/accounts/sms/sms-sender.ts'
import { LoginCodeExpiredError, LoginCodeInvalidError, RateLimitedError } from '../../src/errors.ts'
import { startHarness, type Harness } from '../helpers.ts'
import { randomPhone, register, registerEach } from '../support/kns.ts'

let h: Harness
before(async () => { h = await startHarness() })
after(async () => { await h.close() })

const LIMITS: LoginCodeLimits = { perNumber: 3, perNumberTotal: 6, perIp: 5, perPrefix: 8, prefixDigits: 7, cooldownS: 30 }

function codes(limits: Partial<LoginCodeLimits> = {}) {
  const sent: SmsMessage[] = []
  const sms: SmsSender = { kind: 'log', async send(m) { sent.push(m) }, async close() {} }
  const service = new LoginCodes({ db: h.service.db, secret: () => h.service.secret, sms, limits: { ...LIMITS, ...limits }, host: 'kns.test', onDeliveryError: () => {} })
  return { service, sent, async code(phone: string) {
    await new Promise((resolve) => setImmediate(resolve))
    const text = [...sent].reverse().find((m) => m.to === phone)?.text
    return /^(\d{6})/.exec(text ?? '')?.[1]
  } }
}

let uid = 0
const interaction = () => `test-login-${Date.now()}-${uid++}`

describe('login codes', () => {
  test('a right code logs in as the number\'s account, once', async () => {
    const user = await register(h, randomPhone())
    const c = codes()
    const login = interaction()
    await c.service.send({ interactionUid: login, phone: user.phoneNumber, clientIp: '198.51.100.1' })
    const code = (await c.code(user.phoneNumber))!
    assert.match(code, /^\d{6}$/)
    assert.match(c.sent.at(-1)!.text, new RegExp(`@kns.test #${code}$`), 'the WebOTP line')
    assert.deepEqual(await c.service.verify({ interactionUid: login, code }), { userId: user.userId, phone: user.phoneNumber })
    await assert.rejects(c.service.verify({ interactionUid: login, code }), LoginCodeExpiredError, 'used up')
    const stored = await h.service.db.all<{ code_mac: string }>('SELECT code_mac FROM login_codes WHERE interaction_uid = $1', [login])
    assert.ok(stored.every((r) => !r.code_mac.includes(code)), 'only an HMAC is stored')
  })

  test(`brute force: ${MAX_ATTEMPTS} tries, then even the right code is refused`, async () => {
    const user = await register(h, randomPhone())
    const c = codes()
    const login = interaction()
    await c.service.send({ interactionUid: login, phone: user.phoneNumber, clientIp: '198.51.100.2' })
    const code = (await c.code(user.phoneNumber))!
    const wrong = code === '000000' ? '000001' : '000000'
    for (let i = 1; i < MAX_ATTEMPTS; i++) {
      await assert.rejects(c.service.verify({ interactionUid: login, code: wrong }), (err: unknown) => err instanceof LoginCodeInvalidError && err.attemptsLeft === MAX_ATTEMPTS - i)
    }
    await assert.rejects(c.service.verify({ interactionUid: login, code: wrong }), LoginCodeExpiredError)
    await assert.rejects(c.service.verify({ interactionUid: login, code }), LoginCodeExpiredError)
  })

  test('parallel guesses cannot get past the try limit', async () => {
    const user = await register(h, randomPhone())
    const c = codes()
    const login = interaction()
    await c.service.send({ interactionUid: login, phone: user.phoneNumber, clientIp: '198.51.100.3' })
    const code = (await c.code(user.phoneNumber))!
    const guesses = Array.from({ length: 40 }, (_, i) => String(i).padStart(6, '0')).filter((g) => g !== code)
    await Promise.allSettled(guesses.map((g) => c.service.verify({ interactionUid: login, code: g })))
    const row = await h.service.db.get<{ attempts: number }>('SELECT attempts FROM login_codes WHERE interaction_uid = $1', [login])
    assert.equal(Number(row!.attempts), MAX_ATTEMPTS)
  })

  test('a code expires after 5 minutes', async () => {
    const user = await register(h, randomPhone())
    const c = codes()
    const login = interaction()
    const sentAt = Date.now()
    await c.service.send({ interactionUid: login, phone: user.phoneNumber, clientIp: '198.51.100.4', now: sentAt })
    const code = (await c.code(user.phoneNumber))!
    await assert.rejects(c.service.verify({ interactionUid: login, code, now: sentAt + CODE_TTL_MS + 1 }), LoginCodeExpiredError)
  })

  test('a resend replaces the code, and waits for the cooldown', async () => {
    const user = await register(h, randomPhone())
    const c = codes({ cooldownS: 30 })
    const login = interaction()
    const t0 = Date.now()
    await c.service.send({ interactionUid: login, phone: user.phoneNumber, clientIp: '198.51.100.5', now: t0 })
    const first = (await c.code(user.phoneNumber))!
    await assert.rejects(c.service.send({ interactionUid: login, phone: user.phoneNumber, clientIp: '198.51.100.5', now: t0 + 10_000 }),
      (err: unknown) => err instanceof RateLimitedError && err.retryAfterS === 20)
    await c.service.send({ interactionUid: login, phone: user.phoneNumber, clientIp: '198.51.100.5', now: t0 + 31_000 })
    const second = (await c.code(user.phoneNumber))!
    if (first !== second) await assert.rejects(c.service.verify({ interactionUid: login, code: first, now: t0 + 32_000 }), LoginCodeInvalidError)
    assert.equal((await c.service.verify({ interactionUid: login, code: second, now: t0 + 33_000 })).userId, user.userId)
  })

  test('sends per number and client address are limited per hour; another address has its own budget', async () => {
    const phone = randomPhone()
    const c = codes({ cooldownS: 0 })
    for (let i = 0; i < LIMITS.perNumber; i++) await c.service.send({ interactionUid: interaction(), phone, clientIp: '198.51.100.10' })
    await assert.rejects(c.service.send({ interactionUid: interaction(), phone, clientIp: '198.51.100.10' }), RateLimitedError)
    await c.service.send({ interactionUid: interaction(), phone, clientIp: '198.51.100.11' })
  })

  test('sends per number from all addresses are limited per hour, except for an address that logged in to it', async () => {
    const user = await register(h, randomPhone())
    const c = codes({ cooldownS: 0 })
    const owner = interaction()
    await c.service.send({ interactionUid: owner, phone: user.phoneNumber, clientIp: '198.51.100.30' })
    await c.service.verify({ interactionUid: owner, code: (await c.code(user.phoneNumber))!, clientIp: '198.51.100.30' })
    for (let i = 1; i < LIMITS.perNumberTotal; i++) await c.service.send({ interactionUid: interaction(), phone: user.phoneNumber, clientIp: `198.51.100.${30 + i}` })
    await assert.rejects(c.service.send({ interactionUid: interaction(), phone: user.phoneNumber, clientIp: '198.51.100.99' }), RateLimitedError)
    await c.service.send({ interactionUid: interaction(), phone: user.phoneNumber, clientIp: '198.51.100.30' })
  })

  test('texts per client address are limited per hour; sends to numbers without an account do not count', async () => {
    const c = codes({ cooldownS: 0 })
    for (let i = 0; i < 2 * LIMITS.perIp; i++) await c.service.send({ interactionUid: interaction(), phone: randomPhone(), clientIp: '203.0.113.7' })
    for (let i = 0; i < LIMITS.perIp; i++) await c.service.send({ interactionUid: interaction(), phone: (await register(h, randomPhone())).phoneNumber, clientIp: '203.0.113.7' })
    await assert.rejects(c.service.send({ interactionUid: interaction(), phone: randomPhone(), clientIp: '203.0.113.7' }), RateLimitedError)
    await c.service.send({ interactionUid: interaction(), phone: randomPhone(), clientIp: '203.0.113.8' })
  })

  test('SMS pumping: texts to one number prefix are limited per hour, from any address', async () => {
    const c = codes({ cooldownS: 0 })
    const prefix = `+88${String(Date.now() % 100000).padStart(5, '0')}`
    for (let i = 0; i < LIMITS.perPrefix; i++) {
      const user = await register(h, `${prefix}${String(i).padStart(4, '0')}`)
      await c.service.send({ interactionUid: interaction(), phone: user.phoneNumber, clientIp: `192.0.2.${i}` })
    }
    await assert.rejects(c.service.send({ interactionUid: interaction(), phone: `${prefix}9999`, clientIp: '192.0.2.200' }), RateLimitedError)
  })

  test('the pumping counts read only texted sends: a flood that texted nothing is not visited by every later send', async () => {
    // Sends to numbers without an account are not bounded per prefix or requester; counted by
    // a scan, 100 000 of them in one prefix made each send of it ~30 ms under its locks (SQLite:
    // the database's write lock). The work is asserted through the plan, not a clock.
    const { db } = h.service
    const now = Date.now()
    await db.transaction(async (tx) => {
      for (let i = 0; i < 2000; i++) {
        await tx.run(`INSERT INTO login_codes (id, interaction_uid, phone, prefix, client_hash, code_mac, attempts, created_at, expires_at, used_at, texted)
          VALUES ($1, 'flood', $2, '8899999', 'flooder', 'x', 0, $3, $3, NULL, 0)`, [`flood-${now}-${i}`, `+8899999${String(i).padStart(4, '0')}`, now])
      }
    })
    await db.run('ANALYZE')
    const explain = db.engine === 'postgres' ? 'EXPLAIN' : 'EXPLAIN QUERY PLAN'
    const plan = JSON.stringify(await db.all(`${explain} ${COUNT_BUDGETS}`, ['+88999990001', '8899999', 'flooder', now - 3600_000, 0]))
    // Both pumping counts through an index of texted rows only (which one is the planner's choice), no scan of the table.
    assert.equal(plan.match(/login_codes_(?:prefix|client)_texted/g)?.length, 2, plan)
    assert.doesNotMatch(plan, /Seq Scan on login_codes |SCAN login_codes\b/, plan)
    await db.run(`DELETE FROM login_codes WHERE interaction_uid = 'flood'`)
  })

  test('40 simultaneous sends to one number: one code, one text (the check and the count are one step)', async () => {
    const user = await register(h, randomPhone())
    const c = codes()
    const results = await Promise.allSettled(Array.from({ length: 40 }, () => c.service.send({ interactionUid: interaction(), phone: user.phoneNumber, clientIp: '198.51.100.70' })))
    assert.equal(results.filter((r) => r.status === 'fulfilled').length, 1)
    assert.ok(results.every((r) => r.status === 'fulfilled' || r.reason instanceof RateLimitedError))
    await new Promise((resolve) => setImmediate(resolve))
    assert.equal(c.sent.filter((m) => m.to === user.phoneNumber).length, 1)
  })

  test('simultaneous sends to many numbers from one address: the per-address budget holds', async () => {
    const users = await registerEach(h, 4 * LIMITS.perIp)
    const c = codes()
    const results = await Promise.allSettled(users.map((u) => c.service.send({ interactionUid: interaction(), phone: u.phoneNumber, clientIp: '198.51.100.71' })))
    assert.equal(results.filter((r) => r.status === 'fulfilled').length, LIMITS.perIp)
    await new Promise((resolve) => setImmediate(resolve))
    assert.equal(c.sent.length, LIMITS.perIp)
  })

  test('a number without an account: the same answer, no text, and no code logs in', async () => {
    const c = codes()
    const user = await register(h, randomPhone())
    const known = await c.service.send({ interactionUid: interaction(), phone: user.phoneNumber, clientIp: '198.51.100.40' })
    const login = interaction()
    const unknown = await c.service.send({ interactionUid: login, phone: randomPhone(), clientIp: '198.51.100.41' })
    assert.deepEqual(unknown, known)
    await new Promise((resolve) => setImmediate(resolve))
    assert.equal(c.sent.length, 1, 'only the account holder got a text')
    await assert.rejects(c.service.verify({ interactionUid: login, code: '123456' }), LoginCodeInvalidError)
  })

  test('the sweep deletes codes past every limit window, and only those', async () => {
    const c = codes({ cooldownS: 0 })
    const old = interaction()
    const recent = interaction()
    await c.service.send({ interactionUid: old, phone: randomPhone(), clientIp: '198.51.100.60', now: Date.now() - 3 * 3600_000 })
    await c.service.send({ interactionUid: recent, phone: randomPhone(), clientIp: '198.51.100.61' })
    assert.ok(await c.service.sweep() >= 1)
    const left = await h.service.db.all<{ interaction_uid: string }>('SELECT interaction_uid FROM login_codes WHERE interaction_uid IN ($1, $2)', [old, recent])
    assert.deepEqual(left.map((r) => r.interaction_uid), [recent])
  })
})
