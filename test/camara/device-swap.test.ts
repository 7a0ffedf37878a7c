/**
 * CAMARA Device Swap (/device-swap/v1): the same questions on the device family (activation
 * or device change; a SIM change is not a device swap), its date field `latestDeviceChange`,
 * and its own scopes.
 */
import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import { startHarness, type Harness } from '../helpers.ts'
import { addUser, bearer, camaraToken, DAY_MS, HOUR_MS, recordChange, setMonitoredDays } from './support.ts'

let h: Harness
let token: string
before(async () => {
  h = await startHarness()
  token = await camaraToken(h.service, { scopes: ['device-swap', 'dpv:FraudPreventionAndDetection'] })
})
after(async () => { await h.close() })

let next = 10
const freshMobile = () => `+4479112345${String(next++).padStart(2, '0')}`

async function ask(path: 'check' | 'retrieve-date', body: object, auth = token) {
  const res = await h.app.inject({ method: 'POST', url: `/device-swap/v1/${path}`, headers: bearer(auth), payload: body })
  return { status: res.statusCode, body: res.json() as Record<string, unknown> }
}

test('check: a device change inside maxAge is a swap, outside it is not; a SIM change is not a device swap', async () => {
  const phone = freshMobile()
  await recordChange(h.service, phone, 'activation', Date.now() - 90 * DAY_MS)
  await recordChange(h.service, phone, 'sim-change', Date.now() - HOUR_MS)
  assert.deepEqual((await ask('check', { phoneNumber: phone, maxAge: 24 })).body, { swapped: false })
  await recordChange(h.service, phone, 'device-change', Date.now() - 30 * HOUR_MS)
  assert.deepEqual((await ask('check', { phoneNumber: phone, maxAge: 31 })).body, { swapped: true })
  assert.deepEqual((await ask('check', { phoneNumber: phone, maxAge: 29 })).body, { swapped: false })
  assert.deepEqual((await ask('check', { phoneNumber: phone })).body, { swapped: true })
})

test('retrieve-date: latestDeviceChange is the first use (activation) until the device changes, then the latest device change', async () => {
  const phone = freshMobile()
  const activated = Date.now() - 20 * DAY_MS
  await recordChange(h.service, phone, 'activation', activated)
  await recordChange(h.service, phone, 'sim-change', Date.now() - DAY_MS)
  assert.deepEqual((await ask('retrieve-date', { phoneNumber: phone })).body, { latestDeviceChange: new Date(activated).toISOString() })
  const first = Date.now() - 5 * DAY_MS
  const latest = Date.now() - 2 * DAY_MS
  await recordChange(h.service, phone, 'device-change', latest)
  await recordChange(h.service, phone, 'device-change', first)
  assert.deepEqual((await ask('retrieve-date', { phoneNumber: phone })).body, { latestDeviceChange: new Date(latest).toISOString() })
})

test('retrieve-date: null with monitoredPeriod past the monitored period; check past it is 400 OUT_OF_RANGE', async () => {
  setMonitoredDays(h.service, 7)
  try {
    const phone = freshMobile()
    await recordChange(h.service, phone, 'device-change', Date.now() - 8 * DAY_MS)
    assert.deepEqual((await ask('retrieve-date', { phoneNumber: phone })).body, { latestDeviceChange: null, monitoredPeriod: 7 })
    // The default maxAge, 240 hours, is past 7 days.
    const { status, body } = await ask('check', { phoneNumber: phone })
    assert.equal(status, 400)
    assert.deepEqual({ status: body.status, code: body.code }, { status: 400, code: 'OUT_OF_RANGE' })
    assert.match(String(body.message), /\(7 days\)/)
    assert.deepEqual((await ask('check', { phoneNumber: phone, maxAge: 7 * 24 })).body, { swapped: false })
  } finally {
    setMonitoredDays(h.service, 100)
  }
})

test('identifiers: 422 MISSING_IDENTIFIER, UNNECESSARY_IDENTIFIER, SERVICE_NOT_APPLICABLE; 404 IDENTIFIER_NOT_FOUND', async () => {
  assert.equal((await ask('check', { maxAge: 24 })).body.code, 'MISSING_IDENTIFIER')
  const phone = freshMobile()
  await recordChange(h.service, phone, 'device-change', Date.now() - HOUR_MS)
  const userToken = await camaraToken(h.service, { userId: await addUser(h.service, phone), scopes: ['device-swap:check', 'device-swap:retrieve-date', 'dpv:FraudPreventionAndDetection'] })
  assert.deepEqual((await ask('check', {}, userToken)).body, { swapped: true })
  assert.equal((await ask('retrieve-date', { phoneNumber: phone }, userToken)).body.code, 'UNNECESSARY_IDENTIFIER')
  assert.equal((await ask('retrieve-date', { phoneNumber: '+34912345678' })).body.code, 'SERVICE_NOT_APPLICABLE')
  const unknown = await ask('retrieve-date', { phoneNumber: freshMobile() })
  assert.deepEqual([unknown.status, unknown.body.code], [404, 'IDENTIFIER_NOT_FOUND'])
})

test('SIM Swap scopes do not open Device Swap: 403 PERMISSION_DENIED', async () => {
  const simOnly = await camaraToken(h.service, { scopes: ['sim-swap', 'dpv:FraudPreventionAndDetection'] })
  const { status, body } = await ask('check', { phoneNumber: freshMobile() }, simOnly)
  assert.deepEqual([status, body.code], [403, 'PERMISSION_DENIED'])
})
