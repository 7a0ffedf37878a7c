import { after, before, describe, test } from 'node:test'
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { startHarness, type Harness } from '../helpers.ts'
import { AddressWorkers } from '../../src/identity/address-workers.ts'
import { zkLoginAddressFor } from '../../src/identity/zk-address.ts'
import { OverloadedError } from '../../src/errors.ts'
import { assertError, post, randomPhone } from '../support/kns.ts'
import { registerOrLogin } from '../../src/identity/register.ts'

const SECRET = Buffer.from('address-workers-test-secret-0123456789')
const ISSUER = 'https://issuer.example/oidc'
const CLIENT = 'kns-tests'

describe('AddressWorkers', () => {
  test('derives on a thread the address zkLoginAddressFor derives; warm after the first', async () => {
    const workers = new AddressWorkers(() => SECRET)
    try {
      assert.equal(workers.warm, false)
      const ids = Array.from({ length: 5 }, () => randomUUID())
      const addresses = await Promise.all(ids.map((id) => workers.derive(ISSUER, CLIENT, id)))
      assert.deepEqual(addresses, ids.map((id) => zkLoginAddressFor(SECRET, ISSUER, CLIENT, id)))
      assert.equal(workers.warm, true)
    } finally {
      await workers.close()
    }
  })

  test('cold: saturated once 128 wait; past 256 waiting a derivation is refused with OverloadedError; each address right', async () => {
    const workers = new AddressWorkers(() => SECRET)
    try {
      assert.equal(workers.saturated, false)
      assert.doesNotThrow(() => workers.refuseWhileSaturated())
      // Submitted at once while the thread starts.
      const ids = Array.from({ length: 270 }, () => randomUUID())
      const results = ids.map((id) => workers.derive(ISSUER, CLIENT, id).then((address) => ({ address }), (error: unknown) => ({ error })))
      assert.equal(workers.saturated, true)
      assert.throws(() => workers.refuseWhileSaturated(), (err: unknown) => err instanceof OverloadedError && err.status === 503 && err.retryAfterS === 1)
      const settled = await Promise.all(results)
      const refused = settled.filter((r) => 'error' in r)
      assert.ok(refused.length >= 1 && refused.length <= 14, `refused past the hard bound: ${refused.length}`)
      for (const r of refused) assert.ok((r as { error: unknown }).error instanceof OverloadedError, String((r as { error: unknown }).error))
      settled.forEach((r, i) => { if ('address' in r) assert.equal(r.address, zkLoginAddressFor(SECRET, ISSUER, CLIENT, ids[i]!)) })
      assert.equal(workers.saturated, false, 'drained')
    } finally {
      await workers.close()
    }
  })

  test('warm: refused once four wait for the one thread; served again when they are done', async () => {
    const workers = new AddressWorkers(() => SECRET)
    try {
      await workers.derive(ISSUER, CLIENT, randomUUID())
      assert.equal(workers.warm, true)
      // One running and three waiting: a fifth registration at once is still served.
      const four = Array.from({ length: 4 }, () => workers.derive(ISSUER, CLIENT, randomUUID()))
      assert.equal(workers.saturated, false)
      const fifth = workers.derive(ISSUER, CLIENT, randomUUID())
      assert.equal(workers.saturated, true, 'four waiting')
      assert.throws(() => workers.refuseWhileSaturated(), OverloadedError)
      await Promise.all([...four, fifth])
      assert.equal(workers.saturated, false, 'drained')
    } finally {
      await workers.close()
    }
  })
})

describe('register-user-login while the address threads are saturated', () => {
  let h: Harness
  before(async () => { h = await startHarness({ ZKLOGIN_ISSUER: ISSUER, ZKLOGIN_CLIENT_ID: CLIENT }) })
  after(async () => { await h.close() })

  test('503 OVERLOADED with Retry-After before the body is read, for a registered number, a new one and a malformed body alike; nothing stored', async () => {
    const registered = randomPhone()
    // Registered as seeding does (derived inline): the service's threads are still cold after it.
    const { service } = h
    await registerOrLogin({ db: service.db, ledger: service.ledger, secret: service.secret, zkLoginIssuer: service.config.zkLoginIssuer, zkLoginClientId: service.config.zkLoginClientId },
      { email: 'owner@example.com', phoneNumber: registered })
    assert.equal(service.addressWorkers.warm, false)
    const usersBefore = Number((await h.service.db.get<{ n: number }>('SELECT COUNT(*) AS n FROM users'))!.n)
    const workers = h.service.addressWorkers
    // Fill the queue while the thread starts (about a quarter of a second).
    const fill = Array.from({ length: 140 }, () => workers.derive(ISSUER, CLIENT, randomUUID()).catch(() => undefined))
    assert.equal(workers.saturated, true)
    const answers = await Promise.all([
      post(h, '/numsys/register-user-login', { email: 'a@example.com', phoneNumber: registered }),
      post(h, '/numsys/register-user-login', { email: 'b@example.com', phoneNumber: randomPhone() }),
      post(h, '/numsys/register-user-login', { phoneNumber: 12 }),
    ])
    for (const res of answers) {
      assertError(res, 503, 'OVERLOADED')
      assert.equal(res.headers['retry-after'], '1')
    }
    await Promise.all(fill)
    assert.equal(Number((await h.service.db.get<{ n: number }>('SELECT COUNT(*) AS n FROM users'))!.n), usersBefore)
    // Drained: served again.
    const res = await post(h, '/numsys/register-user-login', { email: 'c@example.com', phoneNumber: randomPhone() })
    assert.equal(res.statusCode, 200, res.body)
  })
})
