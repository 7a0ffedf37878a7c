/** Each statistics operation, public and admin: its schemas, each with one realistic example (see api-operations.ts). */
import { Type } from 'typebox'
import { exemplified } from './examples.ts'
import { GatewayList, GlobalStats, NodesUpserted, NsStats, RangeRequest, RangeStats, UsageBatch, UsageIngested, WifiNodeList, WifiNodeListResponse } from './stats-schemas.ts'

const HOUR = 3_600_000
const START = Date.UTC(2026, 10, 27, 0, 0, 0)
/** Hourly buckets of one day, from START. */
const hourly = (values: number[]) => values.map((value, i) => [START + i * HOUR, value])
const DAY = { summary: 'One day (hourly buckets)', value: { start: '2026-11-27T00:00:00Z', end: '2026-11-28T00:00:00Z' } }
const GATEWAY = { uid: 'gw-0001', location: 'San Francisco, US', lat: 37.7749, lon: -122.4194, status: 'Online' as const, spectrum: 'CBRS band 48' }
const WIFI_NODE = { name: 'Mission Library', uid: 'wf-0042', status: 'Online' as const, model: 'UniFi U6 Pro', wifi_level: 'WiFi 6', lat: 37.7599, lon: -122.4148 }
/** A quiet night, then the day: 24 hourly values. */
const DAY_SHAPE = [2, 1, 1, 0, 0, 1, 3, 6, 9, 11, 12, 12, 13, 12, 11, 12, 12, 13, 11, 9, 7, 5, 4, 3]
const total = (values: number[]) => values.reduce((a, b) => a + b, 0)
/** The series sum to the period's totals, as the answers' do. */
const [MB_PER, SESSIONS_PER] = [250, 11]
const NS_PER_COUNTRY = { US: DAY_SHAPE.map((v) => (v > 10 ? 1 : 0)), GB: DAY_SHAPE.map((v) => (v === 12 ? 1 : 0)) }

/** GET /api/v1/UsageGraph/global-public-stats */
export const GlobalPublicStats = {
  answer: exemplified(GlobalStats, { summary: 'Totals of both networks', value: { totalUniqueClients: 48213, totalGB: 91734.52, totalSessions: 1830457 } }),
}

/** POST /api/v1/UsageGraph/global-public-gateway-stats and .../global-public-wifi-stats */
export const RangePublicStats = {
  body: exemplified(RangeRequest, DAY),
  answer: exemplified(RangeStats, {
    summary: 'A day of one network (series shortened to its 24 buckets)',
    value: {
      totalCumulativeUniqueClients: 31877, totalCumulativeGB: 61280.9, totalCumulativeSessions: 1204331,
      periodUsage: {
        currentUsageMB: total(DAY_SHAPE) * MB_PER, currentClients: 412, currentSessions: total(DAY_SHAPE) * SESSIONS_PER,
        dataUsageMB: hourly(DAY_SHAPE.map((v) => v * MB_PER)), clients: hourly(DAY_SHAPE.map((v) => v * 8)), sessions: hourly(DAY_SHAPE.map((v) => v * SESSIONS_PER)),
        gatewayNodes: [GATEWAY],
      },
    },
  }),
}

/** POST /api/v1/Wifi/wifi-nodes */
export const WifiNodes = {
  answer: exemplified(WifiNodeListResponse, { summary: 'One node', value: [WIFI_NODE] }),
}

/** POST /api/v1/UsageGraph/global-public-ns-stats */
export const NsPublicStats = {
  body: exemplified(RangeRequest, DAY),
  answer: exemplified(NsStats, {
    summary: 'Sign-ups of a day, per country',
    value: {
      totalNS: 5210, totalPerCountry: { US: 3120, GB: 1488, DE: 590, ZZ: 12 },
      periodUsage: {
        ns: total(Object.values(NS_PER_COUNTRY).flat()), ts: DAY_SHAPE.map((_, i) => START + i * HOUR), perCountry: NS_PER_COUNTRY,
      },
    },
  }),
}

const UPSERTED = { summary: 'Stored', value: { upserted: 1 } }

/** PUT /api/v1/admin/gateways */
export const UpsertGateways = {
  body: exemplified(GatewayList, { summary: 'One gateway', value: [GATEWAY] }),
  answer: exemplified(NodesUpserted, UPSERTED),
}

/** PUT /api/v1/admin/wifi-nodes */
export const UpsertWifiNodes = {
  body: exemplified(WifiNodeList, { summary: 'One WiFi node', value: [WIFI_NODE] }),
  answer: exemplified(NodesUpserted, UPSERTED),
}

/** POST /api/v1/admin/usage */
export const IngestUsage = {
  body: {
    content: {
      'application/json': {
        schema: exemplified(UsageBatch, {
          summary: 'Two sessions, one per network',
          value: [
            { sessionId: 'gw-0001:2026-11-27T14:02:11Z:7f3a', network: 'gateway', nodeUid: 'gw-0001', clientId: 'imsi-310170845512398', start: '2026-11-27T14:02:11Z', end: '2026-11-27T14:48:40Z', bytesUp: 18230411, bytesDown: 412993020 },
            { sessionId: 'wf-0042-0000913', network: 'wifi', nodeUid: 'wf-0042', clientId: 'a4:83:e7:1b:22:9c', start: 1795788000000, end: 1795790700000, bytesUp: 5120344, bytesDown: 98213877 },
          ],
        }),
      },
      'application/x-ndjson': { schema: Type.String({ description: 'one session (JSON object) per line' }) },
    },
  },
  answer: exemplified(UsageIngested, { summary: 'Both stored', value: { received: 2, inserted: 2, duplicates: 0 } }),
}
