/**
 * Every field of every public statistics endpoint, on a small dataset computed by hand:
 * sessions on the edges of buckets, time zones given as offsets, a client on both networks.
 */
import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import { phoneCountry } from '../../../src/identity/phone.ts'
import { startHarness, type Harness } from '../../helpers.ts'

const HOUR = 3_600_000
const DAY = 24 * HOUR
/** Monday 2024-03-04 00:00 UTC. */
const M = Date.UTC(2024, 2, 4)

let h: Harness
let key: string

const gateways = [
  { uid: 'g1', location: 'San Francisco, US', lat: 37.7749, lon: -122.4194, status: 'Online', spectrum: 'CBRS band 48' },
  { uid: 'g2', location: 'Lisbon, PT', lat: 38.7223, lon: -9.1393, status: 'Offline', spectrum: 'CBRS band 48' },
]
const wifi = [{ name: 'Cafe Lisboa', uid: 'w1', status: 'Online', model: 'KNS-AP6', wifi_level: 'WiFi 6', lat: 38.71, lon: -9.14 }]

const s = (sessionId: string, network: string, nodeUid: string, clientId: string, start: number | string, bytesUp: number, bytesDown: number) =>
  ({ sessionId, network, nodeUid, clientId, start, end: typeof start === 'number' ? start + 60_000 : start, bytesUp, bytesDown })

const sessions = [
  s('s1', 'gateway', 'g1', 'A', M, 1_000_000, 2_000_000), // first instant of hour 0
  s('s2', 'gateway', 'g1', 'A', M + HOUR - 1, 500_000, 0), // last instant of hour 0
  s('s3', 'gateway', 'g2', 'B', '2024-03-04T02:00:00+01:00', 0, 1_500_000), // = M + 1h, offset notation
  s('s4', 'gateway', 'g1', 'C', M + 2.5 * HOUR, 250_000, 250_000),
  s('s5', 'gateway', 'g2', 'A', M - 1, 4_000_000, 0), // Sunday 23:59:59.999: previous day and week
  s('s6', 'wifi', 'w1', 'A', M + 15 * 60_000, 100, 900),
  s('s7', 'wifi', 'w1', 'D', M + DAY + 5 * HOUR, 0, 2_000_000),
]

const signups: [string, number][] = [
  ['+14155550100', M + HOUR], ['+442079460000', M + 2 * HOUR + 1], ['+33142685300', M - HOUR],
  ['+14155550101', M + 5 * DAY], ['+80012345678', M + 10 * 60_000],
]

before(async () => {
  h = await startHarness()
  key = await h.key({ scopes: ['stats'] })
  const headers = { 'x-api-key': key }
  for (const [url, payload] of [['/api/v1/admin/gateways', gateways], ['/api/v1/admin/wifi-nodes', wifi]] as const) {
    const res = await h.app.inject({ method: 'PUT', url, headers, payload })
    assert.equal(res.statusCode, 200, res.body)
  }
  const res = await h.app.inject({ method: 'POST', url: '/api/v1/admin/usage', headers, payload: sessions })
  assert.deepEqual(res.json(), { received: 7, inserted: 7, duplicates: 0 })
  for (const [phone, at] of signups) {
    await h.service.db.run('INSERT INTO numbers (phone, object_id, source, country, created_at) VALUES ($1, $2, $3, $4, $5)',
      [phone, `0x${phone.slice(1).padStart(64, '0')}`, 'minted', phoneCountry(phone), at])
  }
})

after(async () => {
  await h?.close()
})

async function range(path: string, start: string | number, end: string | number) {
  const iso = (v: string | number) => (typeof v === 'number' ? new Date(v).toISOString() : v)
  const res = await h.app.inject({ method: 'POST', url: `/api/v1/UsageGraph/${path}`, payload: { start: iso(start), end: iso(end) } })
  assert.equal(res.statusCode, 200, res.body)
  return res.json()
}

const series = (start: number, width: number, values: number[]) => values.map((v, i) => [start + i * width, v])

test('global-public-stats: distinct clients of both networks, decimal GB, sessions', async () => {
  const res = await h.app.inject({ method: 'GET', url: '/api/v1/UsageGraph/global-public-stats' })
  assert.equal(res.statusCode, 200)
  // A uses both networks and counts once; bytes 3.5 + 1.5 + 0.5 + 4 MB (gateway) + 1000 B + 2 MB (wifi).
  assert.deepEqual(res.json(), { totalUniqueClients: 4, totalGB: 0.011501, totalSessions: 7 })
})

const hourAnswer = {
  totalCumulativeUniqueClients: 3,
  totalCumulativeGB: 0.0095,
  totalCumulativeSessions: 5,
  periodUsage: {
    currentUsageMB: 5.5,
    currentClients: 3,
    currentSessions: 4,
    dataUsageMB: series(M, HOUR, [3.5, 1.5, 0.5]),
    clients: series(M, HOUR, [1, 1, 1]),
    sessions: series(M, HOUR, [2, 1, 1]),
    gatewayNodes: gateways,
  },
}

test('gateway stats over 3 hours: hourly buckets, edges of the hour, cumulative totals before the end', async () => {
  assert.deepEqual(await range('global-public-gateway-stats', M, M + 3 * HOUR), hourAnswer)
})

test('time zones given as offsets name the same instants', async () => {
  assert.deepEqual(await range('global-public-gateway-stats', '2024-03-04T05:30:00+05:30', '2024-03-03T21:00:00-06:00'), hourAnswer)
})

test('a period not on bucket boundaries widens to whole UTC buckets', async () => {
  assert.deepEqual(await range('global-public-gateway-stats', '2024-03-04T00:30:00Z', '2024-03-04T02:10:00.5Z'), hourAnswer)
})

test('a period starting on an hour boundary leaves out the sessions just before it', async () => {
  const body = await range('global-public-gateway-stats', M + HOUR, M + 3 * HOUR)
  assert.deepEqual(body.periodUsage.sessions, series(M + HOUR, HOUR, [1, 1]))
  assert.equal(body.periodUsage.currentSessions, 2)
  assert.equal(body.periodUsage.currentClients, 2)
  assert.equal(body.periodUsage.currentUsageMB, 2)
  assert.equal(body.totalCumulativeSessions, 5)
})

test('four days: daily buckets; a client active on two days counts once in the period', async () => {
  const body = await range('global-public-gateway-stats', M - DAY, M + 3 * DAY)
  assert.deepEqual(body, {
    totalCumulativeUniqueClients: 3,
    totalCumulativeGB: 0.0095,
    totalCumulativeSessions: 5,
    periodUsage: {
      currentUsageMB: 9.5,
      currentClients: 3,
      currentSessions: 5,
      dataUsageMB: series(M - DAY, DAY, [4, 5.5, 0, 0]),
      clients: series(M - DAY, DAY, [1, 3, 0, 0]),
      sessions: series(M - DAY, DAY, [1, 4, 0, 0]),
      gatewayNodes: gateways,
    },
  })
})

test('more than 180 days: weekly buckets from Monday 00:00 UTC, zero weeks included', async () => {
  const body = await range('global-public-gateway-stats', M - 7 * DAY, M + 200 * DAY)
  const weeks = 30 // 207 days, widened to end on a Monday
  const zeros = new Array(weeks - 2).fill(0)
  assert.deepEqual(body.periodUsage.sessions, series(M - 7 * DAY, 7 * DAY, [1, 4, ...zeros]))
  assert.deepEqual(body.periodUsage.clients, series(M - 7 * DAY, 7 * DAY, [1, 3, ...zeros]))
  assert.deepEqual(body.periodUsage.dataUsageMB, series(M - 7 * DAY, 7 * DAY, [4, 5.5, ...zeros]))
  assert.equal(body.periodUsage.currentClients, 3)
  assert.equal(body.periodUsage.currentSessions, 5)
})

test('wifi stats: its own sessions and clients; nodes with name as location and spectrum "wifi"', async () => {
  const body = await range('global-public-wifi-stats', M, M + 2 * DAY)
  const bytes = new Array(48).fill(0)
  bytes[0] = 0.001
  bytes[29] = 2
  assert.deepEqual(body, {
    totalCumulativeUniqueClients: 2,
    totalCumulativeGB: 0.002001,
    totalCumulativeSessions: 2,
    periodUsage: {
      currentUsageMB: 2.001,
      currentClients: 2,
      currentSessions: 2,
      dataUsageMB: series(M, HOUR, bytes),
      clients: series(M, HOUR, bytes.map((b) => (b > 0 ? 1 : 0))),
      sessions: series(M, HOUR, bytes.map((b) => (b > 0 ? 1 : 0))),
      gatewayNodes: [{ location: 'Cafe Lisboa', uid: 'w1', lat: 38.71, lon: -9.14, status: 'Online', spectrum: 'wifi' }],
    },
  })
})

test('cumulative totals stop at the end of the period', async () => {
  const body = await range('global-public-gateway-stats', M - 2 * DAY, M)
  assert.equal(body.totalCumulativeSessions, 1)
  assert.equal(body.totalCumulativeUniqueClients, 1)
  assert.equal(body.totalCumulativeGB, 0.004)
})

test('wifi-nodes: every node with all seven fields, with or without a JSON body', async () => {
  for (const request of [{}, { headers: { 'content-type': 'application/json' } }, { payload: {} }]) {
    const res = await h.app.inject({ method: 'POST', url: '/api/v1/Wifi/wifi-nodes', ...request })
    assert.equal(res.statusCode, 200, res.body)
    assert.deepEqual(res.json(), wifi)
  }
})

test('ns-stats: totals before the end per country, the period per bucket and country, ZZ for no country', async () => {
  const body = await range('global-public-ns-stats', M, M + 3 * HOUR)
  assert.deepEqual(body, {
    totalNS: 4,
    totalPerCountry: { FR: 1, GB: 1, US: 1, ZZ: 1 },
    periodUsage: {
      ns: 3,
      ts: [M, M + HOUR, M + 2 * HOUR],
      perCountry: { GB: [0, 0, 1], US: [0, 1, 0], ZZ: [1, 0, 0] },
    },
  })
  const later = await range('global-public-ns-stats', M - DAY, M + 10 * DAY)
  assert.equal(later.totalNS, 5)
  assert.deepEqual(later.totalPerCountry, { FR: 1, GB: 1, US: 2, ZZ: 1 })
  assert.equal(later.periodUsage.ts.length, 11)
  assert.deepEqual(later.periodUsage.perCountry.US, [0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0])
  assert.deepEqual(later.periodUsage.perCountry.FR, [1, ...new Array(10).fill(0)])
})
