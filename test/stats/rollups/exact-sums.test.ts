/**
 * Byte totals past 2^53 (five sessions at the largest accepted size) are stored and answered
 * exactly on both engines: no JS number past 2^53 on the way (SQLite used to refuse to read
 * such a sum: every statistics answer was a 500 from then on).
 */
import assert from 'node:assert/strict'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, test } from 'node:test'
import { divideExact } from '../../../src/lib/exact-sum.ts'
import { importUsage } from '../../../src/stats/import/run-import.ts'
import { startHarness, type Harness } from '../../helpers.ts'

const MAX = 1e15
/** Monday 2024-03-04 10:00 UTC: all sessions in one hour, day and week bucket. */
const T = Date.UTC(2024, 2, 4, 10)

let h: Harness
let key: string
before(async () => {
  h = await startHarness()
  key = await h.key()
})
after(async () => { await h.close() })

const session = (id: string, network: string, bytesUp: number, bytesDown: number) =>
  ({ sessionId: id, network, nodeUid: 'n1', clientId: `c-${id}`, start: T + 1000, end: T + 2000, bytesUp, bytesDown })

async function storedBytes(network: string): Promise<string[]> {
  const rows = await h.service.db.all<{ b: string }>('SELECT CAST(bytes AS TEXT) AS b FROM stats_buckets WHERE network = $1 ORDER BY width', [network])
  return rows.map((r) => r.b)
}

test('ingested through the API: stored sums and answers exact', async () => {
  // 5 x 2e15 + 3 = 10000000000000003: a double would store 10000000000000004.
  const batch = [...Array.from({ length: 5 }, (_, i) => session(`max-${i}`, 'gateway', MAX, MAX)), session('small', 'gateway', 1, 2)]
  const res = await h.app.inject({ method: 'POST', url: '/api/v1/admin/usage', headers: { 'x-api-key': key }, payload: batch })
  assert.equal(res.statusCode, 200, res.body)
  const exact = 10_000_000_000_000_003n
  assert.deepEqual(await storedBytes('gateway'), [String(exact), String(exact), String(exact)])

  const global = await h.app.inject({ method: 'GET', url: '/api/v1/UsageGraph/global-public-stats' })
  assert.equal(global.statusCode, 200, global.body)
  assert.equal(global.json().totalGB, divideExact(exact, 1e9))
  assert.equal(global.json().totalSessions, 6)

  const range = await h.app.inject({ method: 'POST', url: '/api/v1/UsageGraph/global-public-gateway-stats', payload: { start: new Date(T).toISOString(), end: new Date(T + 3_600_000).toISOString() } })
  assert.equal(range.statusCode, 200, range.body)
  const body = range.json()
  assert.equal(body.periodUsage.currentUsageMB, divideExact(exact, 1e6))
  assert.equal(body.totalCumulativeGB, divideExact(exact, 1e9))
  assert.deepEqual(body.periodUsage.dataUsageMB, [[T, divideExact(exact, 1e6)]])

  // A second batch adds to the stored sums through SQL, still exact.
  const more = await h.app.inject({ method: 'POST', url: '/api/v1/admin/usage', headers: { 'x-api-key': key }, payload: [session('more', 'gateway', MAX, 7)] })
  assert.equal(more.statusCode, 200, more.body)
  assert.deepEqual(await storedBytes('gateway'), Array(3).fill(String(exact + 1_000_000_000_000_007n)))
})

test('imported from a file (the bulk path rebuilds weeks in JS): stored sums exact', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'kns-exact-'))
  const file = join(dir, 'usage.ndjson')
  const rows = [...Array.from({ length: 5 }, (_, i) => session(`imp-${i}`, 'wifi', MAX, MAX)), session('imp-small', 'wifi', 2, 3)]
  writeFileSync(file, rows.map((r) => JSON.stringify(r)).join('\n'))
  await importUsage(h.service.db, h.service.secret, file)
  assert.deepEqual(await storedBytes('wifi'), Array(3).fill('10000000000000005'))
})

test('a bucket total past 2^63 - 1 is refused whole with 422 VALUE_OUT_OF_RANGE, nothing stored, answers intact', async () => {
  const post = (payload: object[]) => h.app.inject({ method: 'POST', url: '/api/v1/admin/usage', headers: { 'x-api-key': key }, payload })
  const global = async () => {
    const res = await h.app.inject({ method: 'GET', url: '/api/v1/UsageGraph/global-public-stats' })
    assert.equal(res.statusCode, 200, res.body)
    return res.json()
  }
  const seeded = await post([session('edge-seed', 'gateway', 1, 1)])
  assert.equal(seeded.statusCode, 200, seeded.body)
  // The stored hour, day and week totals of the gateway network a session short of the limit.
  const near = 9_223_372_036_854_775_000n
  await h.service.db.run('UPDATE stats_buckets SET bytes = $1 WHERE network = $2', [near, 'gateway'])
  const before = await global()
  const sessionsBefore = await h.service.db.get<{ n: number }>('SELECT COUNT(*) AS n FROM stats_sessions')

  // Added by the database to the stored total (the upsert): PostgreSQL's 22003, SQLite's trigger.
  const over = await post([session('edge-over', 'gateway', 1000, 0)])
  assert.equal(over.statusCode, 422, over.body)
  assert.equal(over.json().code, 'VALUE_OUT_OF_RANGE')
  // Summed in the process first: one batch whose own total is past the limit.
  const huge = await post(Array.from({ length: 4612 }, (_, i) => session(`edge-huge-${i}`, 'wifi', MAX, MAX)))
  assert.equal(huge.statusCode, 422, huge.body)
  assert.equal(huge.json().code, 'VALUE_OUT_OF_RANGE')

  assert.deepEqual(await storedBytes('gateway'), Array(3).fill(String(near)))
  assert.deepEqual(await h.service.db.get('SELECT COUNT(*) AS n FROM stats_sessions'), sessionsBefore)
  assert.deepEqual(await global(), before)
  // A session that fits still goes in.
  const fits = await post([session('edge-fits', 'gateway', 7, 0)])
  assert.equal(fits.statusCode, 200, fits.body)
  assert.deepEqual(await storedBytes('gateway'), Array(3).fill(String(near + 7n)))
})

test('imported from a file: a week whose total is past 2^63 - 1 is refused with VALUE_OUT_OF_RANGE, never stored as a float', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'kns-exact-'))
  const file = join(dir, 'usage.ndjson')
  const weekLater = T + 7 * 86_400_000
  const rows = Array.from({ length: 4612 }, (_, i) => ({ ...session(`imp-huge-${i}`, 'wifi', MAX, MAX), start: weekLater + 1000, end: weekLater + 2000 }))
  writeFileSync(file, rows.map((r) => JSON.stringify(r)).join('\n'))
  await assert.rejects(importUsage(h.service.db, h.service.secret, file), (err: Error & { code?: string }) => err.code === 'VALUE_OUT_OF_RANGE')
  const kinds = await h.service.db.all<{ t: string }>("SELECT DISTINCT CAST(bytes AS TEXT) AS t FROM stats_buckets WHERE network = 'wifi'")
  for (const { t } of kinds) assert.match(t, /^\d+$/)
  // Stopped before storing the week it could not total: nothing is left marked, and later imports go on.
  const meta = await h.service.db.get<{ rebuild_from: number | null }>('SELECT rebuild_from FROM stats_meta WHERE id = 1')
  assert.equal(meta?.rebuild_from, null, 'no week left marked for rebuild')
  const later = join(dir, 'later.ndjson')
  writeFileSync(later, JSON.stringify({ ...session('imp-after', 'wifi', 1000, 2000), start: weekLater + 3 * 86_400_000, end: weekLater + 3 * 86_400_000 + 1000 }))
  const result = await importUsage(h.service.db, h.service.secret, later)
  assert.equal(result.inserted, 1, 'a later import is not stopped by the refused week')
})
