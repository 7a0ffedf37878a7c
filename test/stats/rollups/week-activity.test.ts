import assert from 'node:assert/strict'
import { test } from 'node:test'
import { ClientNumbers } from '../../../src/stats/rollups/client-numbers.ts'
import { CollectedWeeks, WeekActivityBuilder, WeekCollector, type WeekActivity } from '../../../src/stats/rollups/week-activity.ts'

const HOUR = 3_600_000
const WEEK0 = Date.UTC(2025, 0, 6) // a Monday
const WEEK = 7 * 24 * HOUR
const row = (start: number, network: string, client: string, bytes = 10) => [start, 's', network, 'n', client, start, bytes, 0]

const hoursOf = (activity: WeekActivity, network: 'gateway' | 'wifi', numbers: ClientNumbers) => {
  const { clients, offsets, activeHours } = activity[network]
  return Array.from(clients, (c, i) => [numbers.hashes[c], Array.from(activeHours.subarray(offsets[i]!, offsets[i + 1]!))])
}

test('a week built from sessions in any order: clients by hash, hours ascending and distinct, sums per hour', () => {
  const numbers = new ClientNumbers()
  const builder = new WeekActivityBuilder()
  const h = WEEK0 / HOUR
  for (const [hour, client, network] of [[5, 'b', 'gateway'], [2, 'b', 'gateway'], [5, 'b', 'gateway'], [3, 'a', 'gateway'], [1, 'c', 'wifi']] as const) {
    builder.add(network, numbers.numberOf(client), WEEK0 + hour * HOUR + 1000, 7)
  }
  const week = builder.build(numbers)
  assert.deepEqual(hoursOf(week, 'gateway', numbers), [['a', [h + 3]], ['b', [h + 2, h + 5]]])
  assert.deepEqual(hoursOf(week, 'wifi', numbers), [['c', [h + 1]]])
  assert.deepEqual(week.gateway.sums.get(h + 5), { sessions: 2, bytes: 14 })
  assert.equal(builder.size, 5, 'entries held: an hour seen again out of order counts until the build removes it')
})

test('the reader hands a week over once the file is past it, and never collects it again', () => {
  const numbers = new ClientNumbers()
  const collector = new WeekCollector()
  const rows = [row(WEEK0 + HOUR, 'gateway', 'x'), row(WEEK0 + WEEK + HOUR, 'wifi', 'y')]
  collector.add(rows, rows.map((r) => numbers.numberOf(r[4] as string)))
  assert.deepEqual(collector.finishBefore(numbers, WEEK0).map(([w]) => w), [])
  assert.deepEqual(collector.finishBefore(numbers, WEEK0 + WEEK).map(([w]) => w), [WEEK0])
  const late = [row(WEEK0 + 2 * HOUR, 'gateway', 'z')]
  collector.add(late, [numbers.numberOf('z')])
  assert.deepEqual(collector.finishBefore(numbers).map(([w]) => w), [WEEK0 + WEEK])
})

test('collected weeks are served only while everything stored in them came through the reader', () => {
  const numbers = new ClientNumbers()
  const activity = () => new WeekActivityBuilder().build(numbers)
  const weeks = new CollectedWeeks(WEEK0 + HOUR) // the database held a session in WEEK0 before the import
  const w1 = WEEK0 + WEEK
  const w2 = WEEK0 + 2 * WEEK
  const w3 = WEEK0 + 3 * WEEK
  const w4 = WEEK0 + 4 * WEEK
  weeks.stored([WEEK0 + 5 * HOUR, w1, w2, w3], true)
  weeks.stored([w2 + HOUR], false) // a re-run: some row was stored already
  for (const w of [WEEK0, w1, w2, w3]) weeks.offer(w, activity())
  weeks.stored([w3 + 2 * HOUR], true) // a late row after the hand-over
  weeks.offer(w4, activity())
  weeks.offer(w4, activity()) // offered twice: out of order
  assert.deepEqual([WEEK0, w1, w2, w3, w4].map((w) => weeks.take(w) !== undefined), [false, true, false, false, false])
  assert.equal(weeks.take(w1), undefined, 'served once only')
  const off = new CollectedWeeks(null)
  off.offer(w1, activity())
  off.disable()
  assert.equal(off.take(w1), undefined)
})
