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
import { divideExact } from '../../src/lib/exact-sum.ts'
import { importUsage } from '../../src/stats/import.ts'
import { startHarness, type Harness } from '../helpers.ts'

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
