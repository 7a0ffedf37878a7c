import { after, before, describe, test } from 'node:test'
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { startHarness, type Harness } from '../helpers.ts'
import { AddressWorkers } from '../../src/identity/address-workers.ts'
import { registerOrLogin } from '../../src/identity/register.ts'
import { zkLoginAddressFor } from '../../src/identity/zk-address.ts'
import { OverloadedError } from '../../src/errors.ts'
import { assertError, post, randomPhone } from '../support/kns.ts'

const SECRET = Buffer.from('address-workers-test-secret-0123456789')
const ISSUER = 'https://issuer.example/oidc'
const CLIENT = 'kns-tests'
const URL = '/numsys/register-user-login'

describe('AddressWorkers', () => {
  test('derives on a thread the address zkLoginAddressFor derives; warm after the first, or after start()', async () => {
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
    const started = new AddressWorkers(() => SECRET)
    try {
      await started.start()
      assert.equal(started.warm, true)
    } finally {
      await started.close()
    }
  })

  test('five registrations in progress at most, four of one client; a release makes room, once', () => {
    const workers = new AddressWorkers(() => SECRET, { inProgress: 5 })
    const a = [workers.enter('a'), workers.enter('a'), workers.enter('a'), workers.enter('a')]
    assert.equal(workers.saturated('a'), true, 'client a holds its share')
    assert.throws(() => workers.enter('a'), (err: unknown) => err instanceof OverloadedError && err.status === 503 && err.retryAfterS === 1)
    const b = workers.enter('b')
    assert.equal(workers.saturated('c'), true, 'all five in progress')
    assert.throws(() => workers.enter('c'), OverloadedError)
    a[0]!()
    a[0]!()
    assert.equal(workers.saturated('c'), false, 'one released (twice: counted once)')
    const c = workers.enter('c')
    assert.equal(workers.saturated('c'), true)
    for (const release of [...a, b, c]) release()
    assert.equal(workers.saturated('a'), false)
  })
})

describe('register-user-login while registrations are at their bound', () => {
  let h: Harness
  before(async () => { h = await startHarness({ ZKLOGIN_ISSUER: ISSUER, ZKLOGIN_CLIENT_ID: CLIENT }) })
  after(async () => { await h.close() })

  test('503 OVERLOADED with Retry-After before the body is read, for a registered number, a new one and a malformed body alike; nothing stored', async () => {
    const registered = randomPhone()
    const { service } = h
    await registerOrLogin({ db: service.db, ledger: service.ledger, secret: service.secret, zkLoginIssuer: service.config.zkLoginIssuer, zkLoginClientId: service.config.zkLoginClientId },
      { email: 'owner@example.com', phoneNumber: registered })
    const usersBefore = Number((await service.db.get<{ n: number }>('SELECT COUNT(*) AS n FROM users'))!.n)
    // Five registrations of other clients in progress.
    const others = Array.from({ length: 5 }, (_, i) => service.addressWorkers.enter(`other-${i}`))
    try {
      const answers = await Promise.all([
        post(h, URL, { email: 'a@example.com', phoneNumber: registered }),
        post(h, URL, { email: 'b@example.com', phoneNumber: randomPhone() }),
        post(h, URL, { phoneNumber: 12 }),
      ])
      for (const res of answers) {
        assertError(res, 503, 'OVERLOADED')
        assert.equal(res.headers['retry-after'], '1')
      }
      assert.equal(Number((await service.db.get<{ n: number }>('SELECT COUNT(*) AS n FROM users'))!.n), usersBefore)
    } finally {
      for (const release of others) release()
    }
    const res = await post(h, URL, { email: 'c@example.com', phoneNumber: randomPhone() })
    assert.equal(res.statusCode, 200, res.body)
  })

  test('refusals do not tell a registered number from a new one: eight at once of each get the same answers', async () => {
    // One client may have four in progress (of the default five): eight at once are refused in part.
    const registered = randomPhone()
    assert.equal((await post(h, URL, { email: 'r@example.com', phoneNumber: registered })).statusCode, 200)
    for (let round = 0; round < 3; round++) {
      const fresh = randomPhone()
      const statuses = async (phoneNumber: string) =>
        (await Promise.all(Array.from({ length: 8 }, () => post(h, URL, { email: 'x@example.com', phoneNumber })))).map((r) => r.statusCode).sort()
      const [ofRegistered, ofNew] = [await statuses(registered), await statuses(fresh)]
      // Before: the registered number's eight all 200; the new one's 5 x 200 and 3 x 503.
      assert.deepEqual(ofRegistered, ofNew, `round ${round}`)
      assert.ok(ofNew.includes(503), `round ${round}: refused in part (${ofNew.join(', ')})`)
    }
  })
})
