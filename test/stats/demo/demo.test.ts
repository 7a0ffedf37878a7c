/**
 * The demo network's shape (src/stats/demo/demo.ts): how sign-ups and sessions spread over the
 * days, and that the data reaches the end it is given (no empty current day for the explorer).
 */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import fc from 'fast-check'
import { dailyCounts, demoNodes, demoSessions, demoSignups, type DemoOptions } from '../../../src/stats/demo/demo.ts'
import { DAY, HOUR } from '../../../src/stats/time.ts'

/** Each day's exact share of `total` under the demo's growth (1 on the first day to 3 on the last). */
function shares(total: number, days: number): number[] {
  const weights = Array.from({ length: days }, (_, d) => 1 + (2 * d) / Math.max(1, days - 1))
  const sum = weights.reduce((a, b) => a + b, 0)
  return weights.map((w) => (total * w) / sum)
}

test('dailyCounts: the counts add up to the total, no day is more than one from its share, the same arguments give the same counts', () => {
  fc.assert(fc.property(fc.integer({ min: 0, max: 2_000_000 }), fc.integer({ min: 1, max: 5 * 366 }), (total, days) => {
    const counts = dailyCounts(total, days)
    assert.equal(counts.length, days)
    assert.equal(counts.reduce((a, b) => a + b, 0), total)
    const exact = shares(total, days)
    counts.forEach((count, d) => {
      assert.ok(Number.isInteger(count) && count >= 0, `day ${d}: ${count}`)
      assert.ok(Math.abs(count - exact[d]!) <= 1, `day ${d}: ${count} for a share of ${exact[d]}`)
    })
    assert.deepEqual(dailyCounts(total, days), counts)
  }), { numRuns: 300 })
})

test('dailyCounts: the last day is not where the rounding goes (300 sign-ups over 30 days, as the explorer test seeds)', () => {
  const counts = dailyCounts(300, 30)
  // Shares run from 5 to 15 a day: the last day gets its 15, not the ~30 it had when it took the remainder.
  assert.equal(counts.at(-1), 15)
  assert.ok(counts.every((c, d) => d === 0 || c >= counts[d - 1]!), `growing: ${counts.join(' ')}`)
})

const options = (until: number): DemoOptions => ({ sessions: 3000, days: 10, numbers: 200, seed: 7, until })

test('the data reaches `until`: a mid-day end keeps the day\'s past, in the same sessions a later end has', () => {
  const midnight = Date.UTC(2025, 0, 10)
  const until = midnight + 15 * HOUR + 20 * 60_000
  const nodes = demoNodes(options(until))
  const days = [...demoSessions(options(until), nodes)]
  assert.equal(days.length, 10)
  const all = days.flat()
  assert.ok(all.every((s) => s.start >= midnight - 9 * DAY && s.start < until), 'within the 10 days and before the end')
  const today = days.at(-1)!
  assert.ok(today.length > 0 && today.every((s) => s.start >= midnight), 'the last day is the one holding the end')
  // Sessions right up to the end: the last hour before it is not empty.
  assert.ok(today.some((s) => s.start >= until - HOUR), `latest session at ${new Date(Math.max(...today.map((s) => s.start))).toISOString()}`)
  // The same draw whatever the end: an earlier end sees a prefix of the same sessions (a later seed adds only the newer ones).
  const later = [...demoSessions(options(midnight + DAY), nodes)].flat()
  assert.equal(later.length, 3000, 'a whole last day has every session')
  const laterById = new Map(later.map((s) => [s.sessionId, s]))
  for (const s of all) assert.deepEqual(laterById.get(s.sessionId), s)
  assert.deepEqual(later.filter((s) => s.start < until).map((s) => s.sessionId).sort(), all.map((s) => s.sessionId).sort())

  const signups = [...demoSignups(options(until))]
  assert.ok(signups.every((s) => s.createdAt < until) && signups.some((s) => s.createdAt >= midnight), 'sign-ups up to the end too')
  assert.equal([...demoSignups(options(midnight + DAY))].length, 200)
})

test('a day boundary as `until` gives whole days, the day before it the last', () => {
  const until = Date.UTC(2025, 0, 10)
  const days = [...demoSessions(options(until), demoNodes(options(until)))]
  assert.equal(days.flat().length, 3000)
  assert.ok(days.at(-1)!.every((s) => s.start >= until - DAY && s.start < until))
})
