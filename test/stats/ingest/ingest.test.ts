/** Admin ingestion: nodes upserted by uid, sessions idempotent, batches whole or not at all. */
import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import { startHarness, type Harness } from '../../helpers.ts'

let h: Harness
let key: string
const T = Date.UTC(2025, 4, 1, 12)

before(async () => {
  h = await startHarness()
  key = await h.key({ scopes: ['stats'] })
})

after(async () => {
  await h?.close()
})

const session = (i: number, extra: Record<string, unknown> = {}) => ({
  sessionId: `sess-${i}`, network: 'gateway', nodeUid: 'g1', clientId: `device-${i % 3}`, start: T + i * 60_000, end: T + i * 60_000 + 5_000,
  bytesUp: 1000, bytesDown: 2000, ...extra,
})

function usage(payload: unknown, headers: Record<string, string> = {}) {
  return h.app.inject({ method: 'POST', url: '/api/v1/admin/usage', headers: { 'x-api-key': key, ...headers }, payload: payload as string })
}

async function totals() {
  return (await h.app.inject({ method: 'GET', url: '/api/v1/UsageGraph/global-public-stats' })).json()
}

test('sessions are idempotent: the same batch again changes nothing', async () => {
  const batch = [0, 1, 2, 3].map((i) => session(i))
  assert.deepEqual((await usage(batch)).json(), { received: 4, inserted: 4, duplicates: 0 })
  const first = await totals()
  assert.deepEqual(first, { totalUniqueClients: 3, totalGB: 0.000012, totalSessions: 4 })
  assert.deepEqual((await usage(batch)).json(), { received: 4, inserted: 0, duplicates: 4 })
  // Overlapping batch, and the same session twice within one batch.
  assert.deepEqual((await usage([session(3), session(4), session(4)])).json(), { received: 3, inserted: 1, duplicates: 2 })
  assert.equal((await totals()).totalSessions, 5)
})

test('a batch with one bad line stores nothing and reports every bad line with its index and reason', async () => {
  const before = await totals()
  const batch = [session(10), session(11, { bytesUp: -5 }), session(12), session(13, { network: 'lte' }), session(14, { end: T - 1 })]
  const res = await usage(batch)
  assert.equal(res.statusCode, 400)
  const body = res.json()
  assert.equal(body.code, 'INVALID_REQUEST')
  assert.equal(body.success, false)
  assert.deepEqual(body.errors, [
    { index: 1, reason: 'bytesUp must be >= 0' },
    { index: 3, reason: 'network must be "gateway" or "wifi"' },
    { index: 4, reason: 'end is before start' },
  ])
  assert.deepEqual(await totals(), before)
  const raw = await h.service.db.get<{ n: number }>("SELECT COUNT(*) AS n FROM stats_sessions WHERE session_id IN ('sess-10', 'sess-12')")
  assert.equal(Number(raw?.n), 0)
})

test('each kind of bad session is named', async () => {
  const { sessionId: _, ...noId } = session(20)
  const cases: [unknown, RegExp][] = [
    [noId, /sessionId is required/],
    [session(21, { start: 'yesterday' }), /start must be an ISO 8601 date-time/],
    [session(22, { start: 1_000_000, end: 1_000_001 }), /before 2000-01-01/],
    [session(23, { start: Date.now() + 3_600_000, end: Date.now() + 3_700_000 }), /start is in the future/],
    [session(24, { bytesDown: 1.5 }), /bytesDown/],
    [session(25, { clientId: '' }), /clientId/],
    ['not an object', /session must be object/],
  ]
  for (const [value, reason] of cases) {
    const res = await usage([value])
    assert.equal(res.statusCode, 400, JSON.stringify(value))
    assert.match(res.json().errors[0].reason, reason)
  }
})

test('NDJSON bodies: lines are indexed from 0, blank lines skipped, bad JSON reported', async () => {
  const ok = [session(30), session(31)].map((s) => JSON.stringify(s)).join('\n')
  const res = await usage(`${ok}\n\n`, { 'content-type': 'application/x-ndjson' })
  assert.deepEqual(res.json(), { received: 2, inserted: 2, duplicates: 0 })
  const bad = await usage(`${JSON.stringify(session(32))}\n\n{"sessionId": \n${JSON.stringify(session(33, { bytesUp: 'x' }))}`, { 'content-type': 'application/x-ndjson' })
  assert.equal(bad.statusCode, 400)
  assert.deepEqual(bad.json().errors.map((e: { index: number }) => e.index), [2, 3])
})

test('at most 10 000 sessions per request (413), with a body limit larger than the default', async () => {
  const many = Array.from({ length: 10_001 }, (_, i) => session(100_000 + i))
  const res = await usage(many)
  assert.equal(res.statusCode, 413)
  assert.equal(res.json().code, 'PAYLOAD_TOO_LARGE')
  const ok = await usage(many.slice(0, 10_000))
  assert.equal(ok.statusCode, 200, ok.body.slice(0, 300))
  assert.equal(ok.json().inserted, 10_000)
})

test('other bodies: not an array is 400, another content type is 415', async () => {
  assert.equal((await usage({ sessions: [] })).statusCode, 400)
  assert.equal((await usage('x', { 'content-type': 'text/csv' })).statusCode, 415)
})

test('ingestion needs an admin key: 401 without, 403 without the scope; the public endpoints need none', async () => {
  const noKey = await h.app.inject({ method: 'POST', url: '/api/v1/admin/usage', payload: [session(40)] })
  assert.equal(noKey.statusCode, 401)
  const approvals = await h.key({ scopes: ['approvals'] })
  for (const [method, url] of [['POST', '/api/v1/admin/usage'], ['PUT', '/api/v1/admin/gateways'], ['PUT', '/api/v1/admin/wifi-nodes']] as const) {
    const res = await h.app.inject({ method, url, headers: { 'x-api-key': approvals }, payload: [] })
    assert.equal(res.statusCode, 403, url)
  }
  assert.equal((await h.app.inject({ method: 'GET', url: '/api/v1/UsageGraph/global-public-stats' })).statusCode, 200)
})

test('nodes are upserted by uid; statuses and coordinates are validated', async () => {
  const put = (url: string, payload: unknown) => h.app.inject({ method: 'PUT', url, headers: { 'x-api-key': key }, payload: payload as string })
  const gw = { uid: 'gw-1', location: 'Austin, US', lat: 30.27, lon: -97.74, status: 'Pending', spectrum: 'CBRS band 48' }
  assert.deepEqual((await put('/api/v1/admin/gateways', [gw])).json(), { upserted: 1 })
  assert.deepEqual((await put('/api/v1/admin/gateways', [{ ...gw, status: 'Online' }])).json(), { upserted: 1 })
  const stats = await h.app.inject({ method: 'POST', url: '/api/v1/UsageGraph/global-public-gateway-stats', payload: { start: '2025-05-01T00:00:00Z', end: '2025-05-02T00:00:00Z' } })
  assert.deepEqual(stats.json().periodUsage.gatewayNodes, [{ ...gw, status: 'Online' }])
  for (const bad of [{ status: 'Broken' }, { lat: 90.5 }, { lon: -181 }, { uid: '' }, { spectrum: undefined }]) {
    const res = await put('/api/v1/admin/gateways', [{ ...gw, ...bad }])
    assert.equal(res.statusCode, 400, JSON.stringify(bad))
    assert.equal(res.json().code, 'INVALID_REQUEST')
  }
  const node = { name: 'Library', uid: 'w-1', status: 'Offline', model: 'AP-7', wifi_level: 'WiFi 6E', lat: -33.86, lon: 151.2 }
  assert.deepEqual((await put('/api/v1/admin/wifi-nodes', [node])).json(), { upserted: 1 })
  assert.equal((await put('/api/v1/admin/wifi-nodes', [{ ...node, model: undefined }])).statusCode, 400)
  const list = await h.app.inject({ method: 'POST', url: '/api/v1/Wifi/wifi-nodes' })
  assert.deepEqual(list.json(), [node])
})

test('only a keyed hash of clientId is stored', async () => {
  await usage([session(50, { clientId: 'imei-356938035643809' })])
  const rows = await h.service.db.all<{ client_hash: string }>('SELECT client_hash FROM stats_sessions')
  assert.ok(rows.length > 0)
  for (const row of rows) {
    assert.match(row.client_hash, /^[A-Za-z0-9_-]{16}$/)
    assert.ok(!row.client_hash.includes('356938'))
  }
})
