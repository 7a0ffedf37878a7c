/**
 * Recording SIM and device changes (issue 34, item 1): every field checked before anything is
 * written, a batch all or none, idempotent by eventId (a repeat is a duplicate; other content a
 * 409), safe when identical batches race, and listeners told of new changes in the transaction.
 */
import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import { CHANGE_KIND_NAMES, MAX_CHANGES_PER_BATCH } from '../../src/contract/swaps-schemas.ts'
import { ConflictError, ValidationError } from '../../src/errors.ts'
import { CHANGE_KINDS, isKnownNumber } from '../../src/swaps/latest-change.ts'
import { ChangeConflict, ChangeRejected, type RecordedChange } from '../../src/swaps/parse-change.ts'
import { recordChanges } from '../../src/swaps/record-changes.ts'
import { startHarness, type Harness } from '../helpers.ts'
import { randomPhone } from '../support/kns.ts'

let h: Harness
before(async () => { h = await startHarness() })
after(async () => { await h.close() })

const HOUR = 3_600_000
let serial = 0
/** A valid change a few hours old, on a fresh number unless given. */
function change(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return { eventId: `op:evt-${process.pid}-${++serial}`, phoneNumber: randomPhone(), kind: 'sim-change', changedAt: new Date(Date.now() - 3 * HOUR).toISOString(), ...overrides }
}
const record = (changes: unknown[], recordedBy = 'test') => h.service.swaps.record(changes, recordedBy)
const stored = async (eventId: string) => h.service.db.get<Record<string, unknown>>('SELECT * FROM sim_changes WHERE event_id = $1', [eventId])
const count = async () => Number((await h.service.db.get<{ n: number | string }>('SELECT COUNT(*) AS n FROM sim_changes'))!.n)

async function rejected(item: Record<string, unknown>, field: string, pattern: RegExp, index = 0): Promise<void> {
  const batch = [change(), change()]
  batch.splice(index, 0, item)
  const before = await count()
  await assert.rejects(record(batch), (err: unknown) => {
    assert.ok(err instanceof ChangeRejected, String(err))
    assert.equal(err.status, 400)
    assert.equal(err.code, 'INVALID_REQUEST')
    assert.equal(err.field, `changes.${index}.${field}`)
    assert.equal(err.index, index)
    assert.match(err.message, pattern)
    return true
  })
  assert.equal(await count(), before, 'nothing of the batch is stored')
}

test('the kinds of the contract are the kinds the records know', () => {
  assert.deepEqual([...CHANGE_KIND_NAMES], [...CHANGE_KINDS])
})

test('a change is stored as reported: canonical number, epoch ms, who and when', async () => {
  const phone = randomPhone()
  const item = change({ phoneNumber: phone.slice(1), kind: 'device-change', changedAt: '2026-11-27T10:15:30.250+02:00' })
  const now = Date.parse('2026-11-28T00:00:00Z')
  assert.deepEqual(await recordChanges(h.service.db, [item], { recordedBy: 'key:abc', now, monitoredDays: 100 }), { recorded: 1, duplicates: 0, outsidePeriod: 0 })
  const row = (await stored(item.eventId as string))!
  assert.deepEqual({ ...row, changed_at: Number(row.changed_at), recorded_at: Number(row.recorded_at) }, {
    event_id: item.eventId, phone, kind: 'device-change', changed_at: Date.parse('2026-11-27T08:15:30.250Z'), approval_number: null, recorded_by: 'key:abc', recorded_at: now,
  })
})

test('each field is checked, and a bad item names its index and field; nothing of its batch is stored', async () => {
  await rejected(change({ eventId: undefined }), 'eventId', /eventId is required/)
  await rejected(change({ eventId: '' }), 'eventId', /required/)
  await rejected(change({ eventId: 'has space' }), 'eventId', /letters, digits/, 1)
  await rejected(change({ eventId: 'x'.repeat(129) }), 'eventId', /1-128/)
  await rejected(change({ eventId: 42 }), 'eventId', /must be a string/)
  await rejected(change({ phoneNumber: '0800 FLOWERS' }), 'phoneNumber', /E\.164/, 2)
  await rejected(change({ phoneNumber: '+0123456789' }), 'phoneNumber', /E\.164/)
  await rejected(change({ phoneNumber: undefined }), 'phoneNumber', /required/)
  await rejected(change({ kind: 'port-out' }), 'kind', /one of activation, sim-change, device-change/)
  await rejected(change({ kind: undefined }), 'kind', /required/)
  await rejected(change({ changedAt: '2026-11-27T08:15:00' }), 'changedAt', /time zone/)
  await rejected(change({ changedAt: '2026-11-27 08:15:00Z' }), 'changedAt', /RFC 3339/)
  await rejected(change({ changedAt: '2026-11-27T08:15Z' }), 'changedAt', /RFC 3339/)
  await rejected(change({ changedAt: 1764231300000 }), 'changedAt', /must be a string/)
  await rejected(change({ changedAt: '2026-02-30T08:15:00Z' }), 'changedAt', /not a real date/)
  await rejected(change({ changedAt: new Date(Date.now() + 10 * 60_000).toISOString() }), 'changedAt', /in the future/, 1)
  await rejected(change({ approvalNumber: 'ABC' }), 'approvalNumber', /24 lowercase hex/)
  await rejected(change({ approvalNumber: 7 }), 'approvalNumber', /24 lowercase hex/)
  await assert.rejects(record([change(), 'not an object']), (err: unknown) => err instanceof ChangeRejected && err.field === 'changes.1.item')
})

test('a little clock skew is allowed; the monitored period is the configured one; an older change records its line only', async () => {
  assert.equal((await record([change({ changedAt: new Date(Date.now() + 2 * 60_000).toISOString() })])).recorded, 1)
  assert.equal((await record([change({ changedAt: new Date(Date.now() - 99 * 24 * HOUR).toISOString() })])).recorded, 1)
  // Another operator's period: 7 days. An activation of 8 days ago: the line is known, the change not kept.
  const phoneNumber = `+4479111${String(Math.floor(Math.random() * 1e5)).padStart(5, '0')}`
  const old = change({ phoneNumber, kind: 'activation', changedAt: new Date(Date.now() - 8 * 24 * HOUR).toISOString() })
  assert.deepEqual(await recordChanges(h.service.db, [old, change()], { recordedBy: 't', monitoredDays: 7 }), { recorded: 1, duplicates: 0, outsidePeriod: 1 })
  assert.equal(await isKnownNumber(h.service.db, phoneNumber), true)
  assert.equal((await h.service.db.get<{ n: number }>('SELECT COUNT(*) AS n FROM sim_changes WHERE phone = $1', [phoneNumber]))!.n == 0, true)
  assert.equal((await recordChanges(h.service.db, [old], { recordedBy: 't', monitoredDays: 10 })).recorded, 1)
})

test('idempotent by eventId: the same report again is a duplicate, whatever the offset it is written in', async () => {
  const t = Math.floor(Date.now() / 1000) * 1000 - 5 * HOUR
  const a = change({ changedAt: new Date(t).toISOString() })
  const b = change({ kind: 'activation' })
  const at = (changes: unknown[]) => recordChanges(h.service.db, changes, { recordedBy: 'first', monitoredDays: 100 })
  assert.deepEqual(await at([a, b]), { recorded: 2, duplicates: 0, outsidePeriod: 0 })
  const before = await count()
  // The same instant written in +01:00.
  const inParis = `${new Date(t + HOUR).toISOString().slice(0, 19)}+01:00`
  assert.deepEqual(await at([{ ...a, changedAt: inParis }, b, change()]), { recorded: 1, duplicates: 2, outsidePeriod: 0 })
  assert.equal(await count(), before + 1)
  assert.equal((await stored(a.eventId as string))!.recorded_by, 'first', 'a duplicate changes nothing')
  // Given twice in one batch: once stored, once a duplicate.
  const c = change()
  assert.deepEqual(await record([c, { ...c }]), { recorded: 1, duplicates: 1, outsidePeriod: 0 })
})

test('the same eventId with other content is a 409 naming it; nothing of the batch is stored', async () => {
  const a = change({ approvalNumber: undefined })
  await record([a])
  const before = await count()
  for (const other of [{ kind: 'device-change' }, { phoneNumber: randomPhone() }, { changedAt: new Date(Date.now() - HOUR).toISOString() }, { approvalNumber: null, kind: 'activation' }]) {
    await assert.rejects(record([change(), { ...a, ...other }]), (err: unknown) => {
      assert.ok(err instanceof ChangeConflict && err instanceof ConflictError, String(err))
      assert.equal(err.status, 409)
      assert.equal(err.code, 'CONFLICT')
      assert.equal(err.field, 'changes.1.eventId')
      assert.ok(err.message.includes(a.eventId as string), err.message)
      return true
    })
  }
  // Inside one batch.
  const c = change()
  await assert.rejects(record([c, change(), { ...c, kind: 'activation' }]), (err: unknown) => err instanceof ChangeConflict && err.index === 2 && /earlier in this batch/.test(err.message))
  assert.equal(await count(), before)
})

test(`at most ${MAX_CHANGES_PER_BATCH} changes a batch; an empty one records nothing`, async () => {
  await assert.rejects(record(Array.from({ length: MAX_CHANGES_PER_BATCH + 1 }, () => change())), (err: unknown) => err instanceof ValidationError && err.field === 'changes')
  assert.deepEqual(await record([]), { recorded: 0, duplicates: 0, outsidePeriod: 0 })
  const phone = randomPhone()
  assert.deepEqual(await record(Array.from({ length: MAX_CHANGES_PER_BATCH }, () => change({ phoneNumber: phone }))), { recorded: MAX_CHANGES_PER_BATCH, duplicates: 0, outsidePeriod: 0 })
})

test('identical batches started together: one records, the others count duplicates; overlapping ones do not deadlock', async () => {
  const batch = Array.from({ length: 50 }, () => change())
  const results = await Promise.all(Array.from({ length: 4 }, (_, i) => record(batch, `racer-${i}`)))
  assert.equal(results.reduce((n, r) => n + r.recorded, 0), 50, JSON.stringify(results))
  assert.equal(results.reduce((n, r) => n + r.duplicates, 0), 150)
  for (const r of results) assert.equal(r.recorded + r.duplicates, 50)
  // Two batches sharing events in opposite orders, at once.
  const shared = Array.from({ length: 30 }, () => change())
  const [x, y] = await Promise.all([record([...shared, change()]), record([change(), ...shared.toReversed()])])
  assert.equal(x.recorded + y.recorded, 32)
  assert.equal(x.duplicates + y.duplicates, 30)
  // A conflicting twin raced: exactly one wins, the other is a 409.
  const twin = change()
  const settled = await Promise.allSettled([record([twin]), record([{ ...twin, kind: 'device-change' }])])
  assert.equal(settled.filter((s) => s.status === 'fulfilled').length, 1)
  assert.ok(settled.some((s) => s.status === 'rejected' && s.reason instanceof ChangeConflict))
})

test('listeners see the newly recorded changes (never duplicates) inside the transaction, and can refuse the batch', async () => {
  const seen: RecordedChange[][] = []
  const stop = h.service.swaps.onRecorded(async (tx, recorded) => {
    seen.push([...recorded])
    // Inside the transaction: the rows are there for the listener.
    const n = await tx.get<{ n: number | string }>(`SELECT COUNT(*) AS n FROM sim_changes WHERE event_id IN (${recorded.map((_, i) => `$${i + 1}`).join(', ')})`, recorded.map((r) => r.eventId))
    assert.equal(Number(n!.n), recorded.length)
  })
  try {
    const a = change()
    const b = change()
    await record([a], 'key:k1')
    await record([a, b], 'key:k1')
    await record([a, b])
    assert.deepEqual(seen.map((batch) => batch.map((r) => r.eventId)), [[a.eventId], [b.eventId]], 'duplicates are not told, nor an all-duplicate batch')
    assert.equal(seen[0]![0]!.recordedBy, 'key:k1')
    assert.equal(seen[0]![0]!.phone, a.phoneNumber)
  } finally {
    stop()
  }
  const refuse = h.service.swaps.onRecorded(async () => { throw new Error('the subscription store is down') })
  const c = change()
  try {
    await assert.rejects(record([c]), /subscription store is down/)
  } finally {
    refuse()
  }
  assert.equal(await stored(c.eventId as string), undefined, 'a listener that fails rolls the batch back')
  assert.equal((await record([c])).recorded, 1)
})
