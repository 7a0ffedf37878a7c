/**
 * `POST /api/v1/admin/sim-changes` and `GET /api/v1/admin/sim-changes`: the `sim-changes`
 * scope checked before the body is read, the service's error shape, all or none.
 */
import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import { startHarness, type Harness } from '../helpers.ts'
import { assertError, randomPhone } from '../support/kns.ts'

let h: Harness
let key: string
before(async () => {
  h = await startHarness()
  key = await h.key({ scopes: ['sim-changes'], vendor: 'Operator Feed' })
})
after(async () => { await h.close() })

const URL = '/api/v1/admin/sim-changes'
let serial = 0
const change = (overrides: Record<string, unknown> = {}) =>
  ({ eventId: `feed:${++serial}`, phoneNumber: randomPhone(), kind: 'sim-change', changedAt: new Date(Date.now() - 3_600_000).toISOString(), ...overrides })
const send = (changes: unknown, headers: Record<string, string> = { 'x-api-key': key }) =>
  h.app.inject({ method: 'POST', url: URL, payload: { changes } as object, headers })
const count = async () => Number((await h.service.db.get<{ n: number | string }>('SELECT COUNT(*) AS n FROM sim_changes'))!.n)

test('401 without a key, 403 with a key lacking the scope, before the body is read', async () => {
  assertError(await send([change()], {}), 401, 'UNAUTHORIZED')
  const other = await h.key({ scopes: ['approvals', 'caller', 'signing', 'stats', 'webhooks', 'oidc'] })
  assertError(await send([change()], { 'x-api-key': other }), 403, 'FORBIDDEN')
  // A body that is not even JSON: still 401/403 first.
  const raw = await h.app.inject({ method: 'POST', url: URL, payload: '{not json', headers: { 'content-type': 'application/json', 'x-api-key': other } })
  assertError(raw, 403, 'FORBIDDEN')
  assertError(await h.app.inject({ method: 'GET', url: `${URL}?phoneNumber=%2B447700900123`, headers: { 'x-api-key': other } }), 403, 'FORBIDDEN')
  assert.equal(await count(), 0)
})

test('200 {recorded, duplicates}; the same batch again is all duplicates', async () => {
  const batch = [change(), change({ kind: 'activation' }), change({ kind: 'device-change' })]
  const first = await send(batch)
  assert.equal(first.statusCode, 200, first.body)
  assert.deepEqual(first.json(), { recorded: 3, duplicates: 0, outsidePeriod: 0 })
  const again = await send(batch)
  assert.deepEqual(again.json(), { recorded: 0, duplicates: 3, outsidePeriod: 0 })
  const by = await h.service.db.get<{ recorded_by: string }>('SELECT recorded_by FROM sim_changes WHERE event_id = $1', [batch[0]!.eventId])
  assert.match(by!.recorded_by, /^key:[0-9a-f]{16}$/)
})

test('a bad item is a 400 naming its index and field, and nothing of the batch is stored', async () => {
  const before = await count()
  assertError(await send([change(), change({ kind: 'port-out' })]), 400, 'INVALID_REQUEST', 'changes.1.kind')
  assertError(await send([change(), change(), change({ eventId: 'no spaces please' })]), 400, 'INVALID_REQUEST', 'changes.2.eventId')
  assertError(await send([change({ phoneNumber: 'call me' })]), 400, 'INVALID_REQUEST', 'changes.0.phoneNumber')
  assertError(await send([change({ changedAt: '27/11/2026 08:15' })]), 400, 'INVALID_REQUEST', 'changes.0.changedAt')
  assertError(await send([change({ approvalNumber: 'nope' })]), 400, 'INVALID_REQUEST', 'changes.0.approvalNumber')
  const { eventId: _, ...noId } = change()
  assertError(await send([change(), noId]), 400, 'INVALID_REQUEST', 'changes.1.eventId')
  // Past the schema: the rules of the records.
  const future = assertError(await send([change(), change({ changedAt: new Date(Date.now() + 3_600_000).toISOString() })]), 400, 'INVALID_REQUEST', 'changes.1.changedAt')
  assert.match(future.message as string, /in the future/)
  assertError(await send([change({ approvalNumber: 'a'.repeat(24) })]), 400, 'INVALID_REQUEST', 'changes.0.approvalNumber')
  assertError(await send([]), 400, 'INVALID_REQUEST', 'changes')
  assertError(await send(Array.from({ length: 1001 }, () => change())), 400, 'INVALID_REQUEST', 'changes')
  assert.equal(await count(), before)
})

test('the same eventId with other content is a 409 CONFLICT naming it', async () => {
  const a = change()
  assert.equal((await send([a])).statusCode, 200)
  const before = await count()
  const body = assertError(await send([change(), { ...a, kind: 'device-change' }]), 409, 'CONFLICT', 'changes.1.eventId')
  assert.ok((body.message as string).includes(a.eventId), body.message as string)
  assert.equal(await count(), before)
})

test('1000 changes of the longest fields fit the body limit and are recorded in one request', async () => {
  const longest = (i: number) => change({ eventId: `${String(i).padStart(4, '0')}:${'x'.repeat(123)}`, changedAt: `${new Date(Date.now() - 7_200_000).toISOString().slice(0, 19)}.123456789+00:00` })
  const batch = Array.from({ length: 1000 }, (_, i) => longest(i))
  const res = await send(batch)
  assert.equal(res.statusCode, 200, res.body.slice(0, 300))
  assert.deepEqual(res.json(), { recorded: 1000, duplicates: 0, outsidePeriod: 0 })
  // Past the limit: 413, and nothing read into the records.
  const before = await count()
  assertError(await send(Array.from({ length: 1000 }, (_, i) => ({ ...longest(i + 1000), note: 'n'.repeat(1100) }))), 413, 'PAYLOAD_TOO_LARGE')
  assert.equal(await count(), before)
})

test('GET lists a number\'s kept records, newest first', async () => {
  const phone = randomPhone()
  const at = (hoursAgo: number) => new Date(Date.now() - hoursAgo * 3_600_000).toISOString()
  const activation = change({ phoneNumber: phone, kind: 'activation', changedAt: at(48) })
  const swap = change({ phoneNumber: phone, changedAt: at(2) })
  const device = change({ phoneNumber: phone, kind: 'device-change', changedAt: at(1) })
  assert.equal((await send([swap, activation, device, change()])).statusCode, 200)
  const res = await h.app.inject({ method: 'GET', url: `${URL}?phoneNumber=${encodeURIComponent(phone)}`, headers: { 'x-api-key': key } })
  assert.equal(res.statusCode, 200, res.body)
  const { changes } = res.json() as { changes: Array<Record<string, unknown>> }
  assert.deepEqual(changes.map((c) => c.eventId), [device.eventId, swap.eventId, activation.eventId])
  assert.deepEqual(Object.keys(changes[0]!).sort(), ['approvalNumber', 'changedAt', 'eventId', 'kind', 'phoneNumber', 'recordedAt', 'recordedBy'])
  assert.equal(changes[1]!.changedAt, swap.changedAt)
  assert.equal(changes[1]!.phoneNumber, phone)
  assert.equal(changes[1]!.approvalNumber, null)
  // Without the +, and with a limit.
  const one = await h.app.inject({ method: 'GET', url: `${URL}?phoneNumber=${phone.slice(1)}&limit=1`, headers: { 'x-api-key': key } })
  assert.deepEqual((one.json() as { changes: unknown[] }).changes.length, 1)
  assertError(await h.app.inject({ method: 'GET', url: `${URL}?phoneNumber=nope`, headers: { 'x-api-key': key } }), 400, 'INVALID_REQUEST', 'phoneNumber')
  assertError(await h.app.inject({ method: 'GET', url: `${URL}?phoneNumber=${phone.slice(1)}&limit=0`, headers: { 'x-api-key': key } }), 400, 'INVALID_REQUEST', 'limit')
})
