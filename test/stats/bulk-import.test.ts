/**
 * The bulk path of `kns stats import` (raw sessions first, rollups recomputed per week) must
 * leave exactly the statistics of a direct computation, mixed with API ingestion, after an
 * interruption, and whatever the file order.
 */
import assert from 'node:assert/strict'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { after, before, test } from 'node:test'
import { insertRawSessions } from '../../src/stats/bulk-import.ts'
import { createClientHasher } from '../../src/stats/client-hash.ts'
import { importUsage } from '../../src/stats/import.ts'
import { globalStats, rangeStats } from '../../src/stats/queries.ts'
import { normalizePeriod } from '../../src/stats/time.ts'
import { startHarness, type Harness } from '../helpers.ts'
import { expectedGlobal, expectedRange, observedRange, type RawSession } from './oracle.ts'

const HOUR = 3_600_000
const DAY = 24 * HOUR
const T0 = Date.UTC(2024, 2, 6, 9, 41)

let seed = 99
const random = () => {
  seed = (seed * 1103515245 + 12345) % 2147483648
  return seed / 2147483648
}
const pick = (n: number) => Math.floor(random() * n)

const sessions: RawSession[] = Array.from({ length: 700 }, (_, i) => {
  const start = T0 + (random() < 0.4 ? 30 * DAY + pick(4 * DAY) : pick(300 * DAY))
  return {
    sessionId: `b-${i}`, network: random() < 0.5 ? 'gateway' : 'wifi', nodeUid: 'n', clientId: `dev-${pick(random() < 0.5 ? 6 : 50)}`,
    start, end: start + 1000, bytesUp: pick(1e6), bytesDown: pick(1e7),
  }
})

let h: Harness

before(async () => {
  h = await startHarness()
})

after(async () => {
  await h?.close()
})

test('API batches, an interrupted bulk import, more API batches, then the import run again: exact statistics', async () => {
  const key = await h.key({ scopes: ['admin'] })
  const hash = createClientHasher(h.service.secret)
  const api = (list: RawSession[]) => h.app.inject({ method: 'POST', url: '/api/v1/admin/usage', headers: { 'x-api-key': key }, payload: list })
  // The API has the first 150 days; the file has the rest, so recomputation starts mid-way and
  // needs each client's activity from before it.
  const early = sessions.filter((s) => s.start < T0 + 150 * DAY).sort(() => random() - 0.5)
  const late = sessions.filter((s) => s.start >= T0 + 150 * DAY).sort(() => random() - 0.5)
  const [first, second, third] = [early.slice(0, -60), [...early.slice(-60), ...late.slice(0, 40)], late.slice(40)]
  assert.equal((await api(first)).statusCode, 200)
  // An import interrupted after its raw batches, before any rollup was recomputed.
  assert.equal(await insertRawSessions(h.service.db, hash, third.slice(0, 100)), 100)
  const pending = await h.service.db.get<{ rebuild_from: number | null }>('SELECT rebuild_from FROM stats_meta WHERE id = 1')
  assert.notEqual(pending?.rebuild_from, null)
  assert.equal((await api(second)).statusCode, 200)
  // The whole file again (in another order, with sessions the API already sent).
  const file = join(h.env.DATA_DIR!, 'rest.ndjson')
  writeFileSync(file, [...third, ...first.slice(0, 20)].sort(() => random() - 0.5).map((s) => JSON.stringify(s)).join('\n'))
  const result = await importUsage(h.service.db, h.service.secret, file)
  assert.deepEqual({ read: result.read, inserted: result.inserted }, { read: third.length + 20, inserted: third.length - 100 })
  const done = await h.service.db.get<{ rebuild_from: number | null }>('SELECT rebuild_from FROM stats_meta WHERE id = 1')
  assert.equal(done?.rebuild_from, null)

  const global = await globalStats(h.service.db)
  const expected = expectedGlobal(sessions)
  assert.equal(global.totalSessions, expected.totalSessions)
  assert.equal(global.totalUniqueClients, expected.totalUniqueClients)
  for (const [start, length] of [[T0 + 30 * DAY, 2 * DAY], [T0 + 29 * DAY + 5 * HOUR, 9 * DAY], [T0 - 3 * DAY, 200 * DAY], [T0, 320 * DAY]] as const) {
    for (const network of ['gateway', 'wifi'] as const) {
      const period = normalizePeriod(new Date(start).toISOString(), new Date(start + length).toISOString(), Date.now())
      assert.deepEqual(observedRange(await rangeStats(h.service.db, network, period)), expectedRange(sessions, network, period), `${network} ${start} +${length}`)
    }
  }
})
