/**
 * Client history is found by point lookups going back week by week from new activity, in
 * rounds, up to REACH weeks, and beyond that through the client's first week (client-history.ts).
 * Clients with gaps of every size (one week, a few, dozens, more than five years), sessions
 * sent late, before a client's first week, through the API and through a bulk import, on one
 * network or both: the answers must still equal the direct computation.
 */
import assert from 'node:assert/strict'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { after, before, test } from 'node:test'
import { prng } from '../../../src/stats/demo/demo.ts'
import { importUsage } from '../../../src/stats/import/run-import.ts'
import { globalStats, rangeStats } from '../../../src/stats/public/queries.ts'
import { normalizePeriod, WEEK } from '../../../src/stats/time.ts'
import { startHarness, type Harness } from '../../helpers.ts'
import { expectedGlobal, expectedRange, observedRange, type RawSession } from '../public/oracle.ts'

const HOUR = 3_600_000
const DAY = 24 * HOUR
const T0 = Date.UTC(2019, 0, 7, 10)
/** Gaps between a client's active weeks: within the first probe round, the second, the third, and beyond REACH (264 weeks). */
const GAPS_WEEKS = [1, 2, 5, 16, 40, 120, 270, 300]

const random = prng(7_2026)
const pick = (n: number) => Math.floor(random() * n)

function history(): RawSession[] {
  const out: RawSession[] = []
  let n = 0
  for (let client = 0; client < 24; client++) {
    let at = T0 + pick(10 * WEEK)
    for (let visit = 0; visit < 4 && at < Date.UTC(2025, 6, 1); visit++) {
      for (let k = 0; k < 1 + pick(3); k++) {
        const start = at + pick(3 * DAY)
        out.push({
          sessionId: `h-${n++}`, network: client % 3 === 0 ? (random() < 0.5 ? 'gateway' : 'wifi') : 'gateway', nodeUid: 'n1',
          clientId: `hist-${client}`, start, end: start + HOUR, bytesUp: pick(1e6), bytesDown: pick(1e7),
        })
      }
      at += GAPS_WEEKS[(client + visit) % GAPS_WEEKS.length]! * WEEK
    }
  }
  return out
}

const sessions = history()
let h: Harness

before(async () => {
  h = await startHarness()
})

after(async () => {
  await h?.close()
})

async function assertExact(label: string, stored: RawSession[]): Promise<void> {
  const global = await globalStats(h.service.db)
  const expected = expectedGlobal(stored)
  assert.equal(global.totalSessions, expected.totalSessions, label)
  assert.equal(global.totalUniqueClients, expected.totalUniqueClients, label)
  const periods: [number, number][] = [[T0 + 300 * WEEK, 5 * 365 * DAY], [T0 + 20 * WEEK, 5 * 365 * DAY], [T0 + 270 * WEEK, 100 * DAY], [T0 + 5 * WEEK, 3 * DAY]]
  for (let i = 0; i < 6; i++) periods.push([T0 + pick(330 * WEEK), [2 * DAY, 90 * DAY, 3 * 365 * DAY][i % 3]!])
  for (const [start, length] of periods) {
    for (const network of ['gateway', 'wifi'] as const) {
      const period = normalizePeriod(new Date(start).toISOString(), new Date(start + length).toISOString(), Date.now())
      assert.deepEqual(observedRange(await rangeStats(h.service.db, network, period)), expectedRange(stored, network, period), `${label}: ${network} ${new Date(start).toISOString()} +${length / DAY} d`)
    }
  }
}

test('the history spans more than five years, with gaps of every size', () => {
  const last = Math.max(...sessions.map((s) => s.start))
  assert.ok(last - T0 > 300 * WEEK, 'longer than REACH weeks')
  assert.ok(sessions.length > 150)
})

test('API ingestion: in order, then late sessions (before first weeks, inside gaps): exact', async () => {
  const key = await h.key({ scopes: ['stats'] })
  const api = async (list: RawSession[]) => {
    const res = await h.app.inject({ method: 'POST', url: '/api/v1/admin/usage', headers: { 'x-api-key': key }, payload: list })
    assert.equal(res.statusCode, 200, res.body)
  }
  const sorted = [...sessions].sort((a, b) => a.start - b.start)
  // Every third session held back and sent afterwards, newest first: late, some before the
  // client's first stored week, some inside a gap.
  const held = sorted.filter((_, i) => i % 3 === 1)
  const inOrder = sorted.filter((_, i) => i % 3 !== 1)
  for (let i = 0; i < inOrder.length; i += 17) await api(inOrder.slice(i, i + 17))
  await assertExact('in order', inOrder)
  for (let i = held.length; i > 0; i -= 5) await api(held.slice(Math.max(0, i - 5), i).reverse())
  await assertExact('with late sessions', sessions)
})

test('a bulk import on top of API data, with more sessions of the same clients years later: exact', async () => {
  const later = sessions.filter((_, i) => i % 4 === 0).map((s, i) => ({ ...s, sessionId: `later-${i}`, start: s.start + 280 * WEEK, end: s.end + 280 * WEEK }))
    .filter((s) => s.start < Date.now() - DAY)
  const file = join(h.env.DATA_DIR!, 'later.ndjson')
  writeFileSync(file, [...later].sort(() => random() - 0.5).map((s) => JSON.stringify(s)).join('\n'))
  const result = await importUsage(h.service.db, h.service.secret, file)
  assert.equal(result.inserted, later.length)
  await assertExact('after the import', [...sessions, ...later])
})
