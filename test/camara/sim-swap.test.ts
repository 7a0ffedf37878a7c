/**
 * CAMARA SIM Swap (/sim-swap/v2): the answers from KNS's change records (check inside and
 * outside maxAge, retrieve-date's activation, latest change and null with monitoredPeriod),
 * the monitored period, and the rules on which number a request is about.
 */
import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import { startHarness, type Harness } from '../helpers.ts'
import { addUser, bearer, camaraToken, DAY_MS, HOUR_MS, recordChange, setMonitoredDays } from './support.ts'

let h: Harness
let token: string
before(async () => {
  h = await startHarness()
  token = await camaraToken(h.service)
})
after(async () => { await h.close() })

let next = 10
/** A fresh UK mobile number for each test. */
const freshMobile = () => `+4479111234${String(next++).padStart(2, '0')}`

async function call(path: string, body: unknown, auth = token) {
  const res = await h.app.inject({ method: 'POST', url: `/sim-swap/v2/${path}`, headers: bearer(auth), payload: body as object })
  return { status: res.statusCode, body: res.json() as Record<string, unknown>, headers: res.headers }
}

test('check: swapped inside maxAge, not outside; the default maxAge is 240 hours', async () => {
  const phone = freshMobile()
  await recordChange(h.service, phone, 'activation', Date.now() - 400 * DAY_MS)
  await recordChange(h.service, phone, 'sim-change', Date.now() - 100 * HOUR_MS)
  assert.deepEqual((await call('check', { phoneNumber: phone, maxAge: 120 })).body, { swapped: true })
  assert.deepEqual((await call('check', { phoneNumber: phone, maxAge: 99 })).body, { swapped: false })
  assert.deepEqual((await call('check', { phoneNumber: phone })).body, { swapped: true })
  const older = freshMobile()
  await recordChange(h.service, older, 'sim-change', Date.now() - 241 * HOUR_MS)
  assert.deepEqual((await call('check', { phoneNumber: older })).body, { swapped: false })
})

test('check: an activation within maxAge is a swap (a new subscription is a SIM swap); a device change is not', async () => {
  const phone = freshMobile()
  await recordChange(h.service, phone, 'activation', Date.now() - 2 * HOUR_MS)
  assert.deepEqual((await call('check', { phoneNumber: phone, maxAge: 3 })).body, { swapped: true })
  const device = freshMobile()
  await recordChange(h.service, device, 'activation', Date.now() - 300 * DAY_MS)
  await recordChange(h.service, device, 'device-change', Date.now() - HOUR_MS)
  assert.deepEqual((await call('check', { phoneNumber: device, maxAge: 24 })).body, { swapped: false })
})

test('retrieve-date: the latest SIM change; the activation when the SIM never changed', async () => {
  const phone = freshMobile()
  const activated = Date.now() - 50 * DAY_MS
  const changed = Date.now() - 3 * DAY_MS
  await recordChange(h.service, phone, 'activation', activated)
  assert.deepEqual((await call('retrieve-date', { phoneNumber: phone })).body, { latestSimChange: new Date(activated).toISOString() })
  await recordChange(h.service, phone, 'sim-change', changed)
  await recordChange(h.service, phone, 'device-change', Date.now() - HOUR_MS)
  const { status, body } = await call('retrieve-date', { phoneNumber: phone })
  assert.equal(status, 200)
  assert.deepEqual(body, { latestSimChange: new Date(changed).toISOString() })
  assert.match(String(body.latestSimChange), /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)
})

test('retrieve-date: null with monitoredPeriod when the latest change is older than the monitored period', async () => {
  setMonitoredDays(h.service, 30)
  try {
    const phone = freshMobile()
    await recordChange(h.service, phone, 'sim-change', Date.now() - 31 * DAY_MS)
    assert.deepEqual((await call('retrieve-date', { phoneNumber: phone })).body, { latestSimChange: null, monitoredPeriod: 30 })
  } finally {
    setMonitoredDays(h.service, 100)
  }
})

test('check: a maxAge past the monitored period is 400 OUT_OF_RANGE naming the period; up to it is answered', async () => {
  setMonitoredDays(h.service, 30)
  try {
    const phone = freshMobile()
    await recordChange(h.service, phone, 'activation', Date.now() - 10 * DAY_MS)
    const refused = await call('check', { phoneNumber: phone, maxAge: 30 * 24 + 1 })
    assert.equal(refused.status, 400)
    assert.equal(refused.body.code, 'OUT_OF_RANGE')
    assert.equal(refused.body.status, 400)
    assert.match(String(refused.body.message), /could not exceed local regulations \(30 days\)/)
    // The default maxAge (240 h = 10 days) is within 30 days.
    assert.deepEqual((await call('check', { phoneNumber: phone, maxAge: 30 * 24 })).body, { swapped: true })
  } finally {
    setMonitoredDays(h.service, 100)
  }
})

test('two-legged token without phoneNumber: 422 MISSING_IDENTIFIER', async () => {
  for (const path of ['check', 'retrieve-date']) {
    const { status, body } = await call(path, {})
    assert.equal(status, 422)
    assert.deepEqual({ status: body.status, code: body.code }, { status: 422, code: 'MISSING_IDENTIFIER' })
  }
})

test('three-legged token: the number is the token\'s; a phoneNumber in the body, even the same, is 422 UNNECESSARY_IDENTIFIER', async () => {
  const phone = freshMobile()
  await recordChange(h.service, phone, 'sim-change', Date.now() - HOUR_MS)
  const userToken = await camaraToken(h.service, { userId: await addUser(h.service, phone) })
  assert.deepEqual((await call('check', { maxAge: 2 }, userToken)).body, { swapped: true })
  assert.equal((await call('retrieve-date', {}, userToken)).status, 200)
  for (const path of ['check', 'retrieve-date']) {
    const { status, body } = await call(path, { phoneNumber: phone }, userToken)
    assert.equal(status, 422)
    assert.equal(body.code, 'UNNECESSARY_IDENTIFIER')
  }
})

test('a number KNS does not know is 404 IDENTIFIER_NOT_FOUND; a registered number without records is known', async () => {
  for (const path of ['check', 'retrieve-date']) {
    const { status, body } = await call(path, { phoneNumber: freshMobile() })
    assert.equal(status, 404)
    assert.deepEqual(body.code, 'IDENTIFIER_NOT_FOUND')
  }
  const registered = freshMobile()
  await h.service.db.run('INSERT INTO numbers (phone, object_id, source, country, created_at) VALUES ($1, $2, $3, $4, $5)',
    [registered, `0x${'ab'.repeat(32)}`, 'test', 'GB', Date.now()])
  assert.deepEqual((await call('check', { phoneNumber: registered })).body, { swapped: false })
  assert.deepEqual((await call('retrieve-date', { phoneNumber: registered })).body, { latestSimChange: null, monitoredPeriod: 100 })
})

test('a fixed line or service number is 422 SERVICE_NOT_APPLICABLE, known or not; a number that may be mobile is answered', async () => {
  for (const phone of ['+442079460123', '+18005550100']) {
    await recordChange(h.service, phone, 'activation', Date.now() - DAY_MS)
    const { status, body } = await call('check', { phoneNumber: phone })
    assert.equal(status, 422, phone)
    assert.equal(body.code, 'SERVICE_NOT_APPLICABLE')
  }
  // North American numbers are FIXED_LINE_OR_MOBILE: answered.
  await recordChange(h.service, '+14155550100', 'activation', Date.now() - DAY_MS)
  assert.deepEqual((await call('check', { phoneNumber: '+14155550100' })).body, { swapped: true })
})
