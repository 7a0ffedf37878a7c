/** Request and response shapes of the statistics endpoints (kns-api.md, area C). */
import { Type, type Static } from 'typebox'
import { StringEnum } from './string-enum.ts'
import { SINGLE_LINE } from './text.ts'

export const NODE_STATUSES = ['Online', 'Offline', 'Pending'] as const
export type NodeStatus = (typeof NODE_STATUSES)[number]
export const NETWORKS = ['gateway', 'wifi'] as const
export type Network = (typeof NETWORKS)[number]

/** Text shown on a map or page: one line (src/lib/text.ts). */
export { SINGLE_LINE }
const text = (min: number, max: number, description: string, extra: Record<string, unknown> = {}) =>
  Type.String({ minLength: min, maxLength: max, pattern: SINGLE_LINE, description, ...extra })

/** Bounds of a session's fields (also checked by hand on the import's fast path). */
export const SESSION_LIMITS = {
  sessionId: 128, nodeUid: 128, clientId: 256, bytes: 1e15,
  /** Latest instant accepted as epoch milliseconds (2100-01-01T00:00:00Z): far beyond any real session, far within BIGINT and 2^53. */
  instantMs: Date.UTC(2100, 0, 1),
  /** Longest session: one reported as lasting longer is a clock or counter fault (report long sessions in parts). */
  durationMs: 31 * 24 * 3_600_000,
} as const

const Uid = text(1, SESSION_LIMITS.nodeUid, 'stable node identifier', { examples: ['gw-0001'] })
const Status = StringEnum(NODE_STATUSES, { description: '`Pending`: installed, not yet serving' })
const Lat = Type.Number({ minimum: -90, maximum: 90, description: 'latitude, degrees' })
const Lon = Type.Number({ minimum: -180, maximum: 180, description: 'longitude, degrees' })

export const Gateway = Type.Object({
  uid: Uid,
  location: text(1, 255, 'place name shown on the map', { examples: ['San Francisco, US'] }),
  lat: Lat,
  lon: Lon,
  status: Status,
  spectrum: text(1, 64, 'radio spectrum, e.g. "CBRS band 48"', { examples: ['CBRS band 48'] }),
})
export type Gateway = Static<typeof Gateway>

export const WifiNode = Type.Object({
  name: text(1, 255, 'display name'),
  uid: Uid,
  status: Status,
  model: text(1, 128, 'hardware model'),
  wifi_level: text(1, 64, 'WiFi generation or level, e.g. "WiFi 6"'),
  lat: Lat,
  lon: Lon,
})
export type WifiNode = Static<typeof WifiNode>

/** Most items a node PUT or a usage POST may carry. */
export const MAX_BATCH = 10_000

export const GatewayList = Type.Array(Gateway, { maxItems: MAX_BATCH })
export const WifiNodeList = Type.Array(WifiNode, { maxItems: MAX_BATCH })

const Instant = Type.Union([
  Type.String({ format: 'date-time', description: 'ISO 8601 with a zone' }),
  Type.Integer({ minimum: 0, maximum: SESSION_LIMITS.instantMs, description: 'epoch milliseconds (before 2100)' }),
])
const Bytes = Type.Integer({ minimum: 0, maximum: SESSION_LIMITS.bytes, description: 'bytes (at most 10^15)' })

/** One usage session as ingested (the raw clientId is hashed before storage). */
export const SessionInput = Type.Object({
  sessionId: text(1, SESSION_LIMITS.sessionId, 'unique ID of the session; re-sending a session is harmless'),
  network: StringEnum(NETWORKS),
  nodeUid: Uid,
  clientId: Type.String({ minLength: 1, maxLength: SESSION_LIMITS.clientId, description: 'opaque device ID; only a keyed hash of it is stored' }),
  start: Instant,
  end: Instant,
  bytesUp: Bytes,
  bytesDown: Bytes,
})
export type SessionInput = Static<typeof SessionInput>

export const UsageBatch = Type.Array(SessionInput, { maxItems: MAX_BATCH, description: 'sessions; or the same as NDJSON (application/x-ndjson)' })

export const NodesUpserted = Type.Object({ upserted: Type.Integer({ description: 'nodes inserted or updated' }) })

export const UsageIngested = Type.Object({
  received: Type.Integer(),
  inserted: Type.Integer({ description: 'sessions stored by this request' }),
  duplicates: Type.Integer({ description: 'sessions already stored (same sessionId and start), ignored' }),
})

export const UsageRejected = Type.Object({
  success: Type.Literal(false),
  code: Type.String(),
  error: Type.String(),
  message: Type.String(),
  field: Type.Optional(Type.String()),
  requestId: Type.String(),
  errors: Type.Optional(Type.Array(Type.Object({
    index: Type.Integer({ description: '0-based position in the array, or 0-based line of the NDJSON body' }),
    reason: Type.String(),
  }), { description: 'every bad session (the first 1000); nothing of the batch was stored' })),
})

export const RangeRequest = Type.Object({
  start: Type.String({ minLength: 1, maxLength: 64, description: 'ISO 8601 date-time with a zone, e.g. 2024-01-01T00:00:00Z' }),
  end: Type.String({ minLength: 1, maxLength: 64, description: 'ISO 8601 date-time with a zone; later than now means now' }),
})

const Series = Type.Array(Type.Array(Type.Number(), { minItems: 2, maxItems: 2 }), {
  description: '[[bucketStartEpochMs, value], ...]: every bucket of the period, in order, zeros included',
})

export const GlobalStats = Type.Object({
  totalUniqueClients: Type.Integer({ description: 'distinct clients ever, both networks' }),
  totalGB: Type.Number({ description: 'bytes up + down of all sessions / 10^9' }),
  totalSessions: Type.Integer(),
})

export const GatewayNode = Type.Object({
  location: Type.String({ description: 'gateway location; for WiFi the node name' }),
  uid: Type.String(),
  lat: Type.Number(),
  lon: Type.Number(),
  status: Type.String(),
  spectrum: Type.String({ description: 'gateway spectrum; for WiFi "wifi"' }),
})

export const RangeStats = Type.Object({
  totalCumulativeUniqueClients: Type.Integer({ description: 'distinct clients of this network with a session before the period end' }),
  totalCumulativeGB: Type.Number(),
  totalCumulativeSessions: Type.Integer(),
  periodUsage: Type.Object({
    currentUsageMB: Type.Number({ description: 'bytes of the sessions that started in the period / 10^6' }),
    currentClients: Type.Integer({ description: 'distinct clients with a session in the period' }),
    currentSessions: Type.Integer({ description: 'sessions that started in the period' }),
    dataUsageMB: Series,
    clients: Series,
    sessions: Series,
    gatewayNodes: Type.Array(GatewayNode),
  }),
})
export type RangeStats = Static<typeof RangeStats>

export const WifiNodeListResponse = Type.Array(WifiNode)

export const NsStats = Type.Object({
  totalNS: Type.Integer({ description: 'sign-ups before the period end' }),
  totalPerCountry: Type.Record(Type.String(), Type.Integer(), { description: 'ISO 3166-1 alpha-2 -> sign-ups before the period end; ZZ = no single country' }),
  periodUsage: Type.Object({
    ns: Type.Integer({ description: 'sign-ups in the period' }),
    ts: Type.Array(Type.Integer(), { description: 'bucket starts, epoch ms' }),
    perCountry: Type.Record(Type.String(), Type.Array(Type.Integer()), { description: 'countries with sign-ups in the period; each array aligned with ts' }),
  }),
})
export type NsStats = Static<typeof NsStats>
