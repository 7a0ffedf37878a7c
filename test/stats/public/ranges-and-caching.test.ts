/** Range validation, bucket widths, and the HTTP caching of the public statistics. */
import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import { AnswerCache } from '../../../src/stats/public/answer-cache.ts'
import { DAY, HOUR, normalizePeriod, WEEK } from '../../../src/stats/time.ts'
import { startHarness, type Harness } from '../../helpers.ts'

let h: Harness

before(async () => {
  h = await startHarness()
})

after(async () => {
  await h?.close()
})

const post = (path: string, payload: unknown, headers: Record<string, string> = {}) =>
  h.app.inject({ method: 'POST', url: `/api/v1/UsageGraph/${path}`, payload: payload as string, headers })

test('every invalid range is a 400 naming the field', async () => {
  const cases: [unknown, string, RegExp][] = [
    [{ start: 'yesterday', end: '2024-01-02T00:00:00Z' }, 'start', /ISO 8601/],
    [{ start: '2024-01-01', end: '2024-01-02T00:00:00Z' }, 'start', /ISO 8601/], // a date without a time
    [{ start: '2024-01-01T00:00:00', end: '2024-01-02T00:00:00Z' }, 'start', /ISO 8601/], // no zone
    [{ start: '2024-02-30T00:00:00Z', end: '2024-03-02T00:00:00Z' }, 'start', /ISO 8601/],
    [{ start: '2024-01-01T00:00:00Z', end: 'soon' }, 'end', /ISO 8601/],
    [{ start: '2024-01-02T00:00:00Z', end: '2024-01-02T00:00:00Z' }, 'start', /before end/],
    [{ start: '2024-01-03T00:00:00Z', end: '2024-01-02T00:00:00Z' }, 'start', /before end/],
    [{ start: '2019-01-01T00:00:00Z', end: '2024-01-01T00:00:00.001Z' }, 'end', /5 years/],
    [{ start: '2099-01-01T00:00:00Z', end: '2099-02-01T00:00:00Z' }, 'start', /future/],
    [{ start: '2024-01-01T00:00:00Z' }, 'end', /required/],
    [{ end: '2024-01-01T00:00:00Z' }, 'start', /required/],
    [{ start: 20240101, end: '2024-01-02T00:00:00Z' }, 'start', /string/],
  ]
  for (const path of ['global-public-gateway-stats', 'global-public-wifi-stats', 'global-public-ns-stats']) {
    for (const [payload, field, message] of cases) {
      const res = await post(path, payload)
      assert.equal(res.statusCode, 400, `${path} ${JSON.stringify(payload)}: ${res.body}`)
      const body = res.json()
      assert.equal(body.code, 'INVALID_REQUEST')
      assert.equal(body.field, field, JSON.stringify(payload))
      assert.match(body.error, message)
    }
  }
})

test('exactly 5 years is allowed; an end in the future means now', async () => {
  assert.equal((await post('global-public-gateway-stats', { start: '2019-01-01T00:00:00Z', end: '2024-01-01T00:00:00Z' })).statusCode, 200)
  const now = Date.now()
  const res = await post('global-public-gateway-stats', { start: new Date(now - 2 * HOUR).toISOString(), end: '2999-01-01T00:00:00Z' })
  assert.equal(res.statusCode, 200)
  const ts = res.json().periodUsage.sessions.map(([t]: number[]) => t)
  assert.equal(ts.length, 3) // widened to whole hours around [now - 2h, now)
  assert.ok(ts[2] <= now && now < ts[2] + HOUR)
})

test('bucket width: hour up to 3 days, day up to 180 days, week beyond; widened to whole UTC buckets', () => {
  const now = Date.UTC(2030, 0, 1)
  const at = (iso: string) => iso
  assert.deepEqual(normalizePeriod(at('2024-01-01T10:30:00Z'), at('2024-01-04T10:30:00Z'), now),
    { start: Date.UTC(2024, 0, 1, 10), end: Date.UTC(2024, 0, 4, 11), width: HOUR })
  assert.equal(normalizePeriod(at('2024-01-01T10:30:00Z'), at('2024-01-04T10:30:00.001Z'), now).width, DAY)
  assert.deepEqual(normalizePeriod(at('2024-01-01T10:30:00Z'), at('2024-06-29T10:30:00Z'), now),
    { start: Date.UTC(2024, 0, 1), end: Date.UTC(2024, 5, 30), width: DAY })
  // 2024-01-03 is a Wednesday: weeks start on the Monday before.
  assert.deepEqual(normalizePeriod(at('2024-01-03T00:00:00Z'), at('2024-12-31T00:00:00Z'), now),
    { start: Date.UTC(2024, 0, 1), end: Date.UTC(2025, 0, 6), width: WEEK })
  assert.deepEqual(normalizePeriod(at('2024-01-01T00:00:00+02:00'), at('2024-01-01T03:00:00+02:00'), now),
    { start: Date.UTC(2023, 11, 31, 22), end: Date.UTC(2024, 0, 1, 1), width: HOUR })
})

test('public answers carry Cache-Control and an ETag, and answer 304 to If-None-Match', async () => {
  const requests = [
    () => h.app.inject({ method: 'GET', url: '/api/v1/UsageGraph/global-public-stats' }),
    () => post('global-public-gateway-stats', { start: '2024-01-01T00:00:00Z', end: '2024-01-02T00:00:00Z' }),
    () => post('global-public-ns-stats', { start: '2024-01-01T00:00:00Z', end: '2024-01-02T00:00:00Z' }),
    () => h.app.inject({ method: 'POST', url: '/api/v1/Wifi/wifi-nodes' }),
  ]
  for (const request of requests) {
    const first = await request()
    assert.equal(first.statusCode, 200)
    assert.match(String(first.headers['cache-control']), /^public, max-age=\d+$/)
    const etag = String(first.headers.etag)
    assert.match(etag, /^"[A-Za-z0-9_-]+"$/)
    const again = await request()
    assert.equal(again.headers.etag, etag, 'same data, same ETag')
  }
  const etag = String((await requests[1]!()).headers.etag)
  const conditional = await post('global-public-gateway-stats', { start: '2024-01-01T00:00:00Z', end: '2024-01-02T00:00:00Z' }, { 'if-none-match': `"other", W/${etag}` })
  assert.equal(conditional.statusCode, 304)
  assert.equal(conditional.body, '')
  assert.equal(conditional.headers.etag, etag)
  const otherPeriod = await post('global-public-gateway-stats', { start: '2024-01-01T00:00:00Z', end: '2024-01-03T00:00:00Z' }, { 'if-none-match': etag })
  assert.equal(otherPeriod.statusCode, 200)
})

test('new data changes the ETag', async () => {
  const before = String((await h.app.inject({ method: 'GET', url: '/api/v1/UsageGraph/global-public-stats' })).headers.etag)
  const key = await h.key({ scopes: ['stats'] })
  const start = Date.UTC(2024, 0, 1, 5)
  const ingest = await h.app.inject({ method: 'POST', url: '/api/v1/admin/usage', headers: { 'x-api-key': key }, payload: [{ sessionId: 'e1', network: 'wifi', nodeUid: 'w', clientId: 'c', start, end: start, bytesUp: 1, bytesDown: 1 }] })
  assert.equal(ingest.statusCode, 200)
  const res = await h.app.inject({ method: 'GET', url: '/api/v1/UsageGraph/global-public-stats', headers: { 'if-none-match': before } })
  assert.equal(res.statusCode, 200)
  assert.notEqual(res.headers.etag, before)
  assert.equal(res.json().totalSessions, 1)
})

test('identical concurrent requests are computed once', async () => {
  const db = h.service.db
  const original = db.all.bind(db)
  let rangeQueries = 0
  db.all = (async (sql: string, params?: readonly unknown[]) => {
    if (sql.includes('stats_bucket_clients')) rangeQueries++
    return original(sql, params)
  }) as typeof db.all
  try {
    const payload = { start: '2023-05-01T00:00:00Z', end: '2023-05-09T00:00:00Z' }
    const answers = await Promise.all(Array.from({ length: 20 }, () => post('global-public-wifi-stats', payload)))
    assert.ok(answers.every((a) => a.statusCode === 200 && a.body === answers[0]!.body))
    assert.equal(rangeQueries, 1)
  } finally {
    db.all = original
  }
})

test('the answer cache coalesces in-flight computations and keeps versioned answers only', async () => {
  const cache = new AnswerCache()
  let calls = 0
  const compute = async () => { calls++; await new Promise((r) => setTimeout(r, 20)); return { n: calls } }
  const [a, b] = await Promise.all([cache.get('k', compute, false), cache.get('k', compute, false)])
  assert.equal(calls, 1)
  assert.equal(a, b)
  await cache.get('k', compute, false)
  assert.equal(calls, 2, 'unversioned answers are not kept')
  await cache.get('v1|k', compute, true)
  await cache.get('v1|k', compute, true)
  assert.equal(calls, 3, 'versioned answers are kept')
  await assert.rejects(cache.get('boom', async () => { throw new Error('x') }, true))
  assert.equal((await cache.get('boom', async () => 1, true)), 1, 'a failure is not kept')
})
