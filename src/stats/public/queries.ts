/**
 * The public answers, read from the rollups only. Each answer's numbers come from one SQL
 * statement, so they are from one snapshot and always agree with each other.
 */
import type { Executor } from '../../db/engine.ts'
import { divideExact, exactInteger } from '../../lib/exact-sum.ts'
import type { Network, NsStats, RangeStats, WifiNode } from '../../contract/stats-schemas.ts'
import { bucketsOf, bucketSql, bucketStart, DAY, HOUR, WEEK, type Period } from '../time.ts'

const MB = 1e6
const GB = 1e9

/**
 * Byte sums leave the database as exact integers in text: a JS number loses bytes past 2^53,
 * and node:sqlite refuses to read such an integer at all. Summed in two parts (whole GB and
 * the rest) so that even a sum past SQLite's 64-bit SUM() stays exact on both engines.
 */
const exactBytesSum = (column: string) =>
  `CAST(COALESCE(SUM(${column} / ${GB}), 0) AS TEXT) AS gb, CAST(COALESCE(SUM(${column} % ${GB}), 0) AS TEXT) AS rest`

function bytesOfParts(gb: string | null | undefined, rest: string | null | undefined): bigint {
  return exactInteger(gb) * BigInt(GB) + exactInteger(rest)
}

export async function statsVersion(db: Executor): Promise<number> {
  const row = await db.get<{ version: number }>('SELECT version FROM stats_meta WHERE id = 1')
  return Number(row?.version ?? 0)
}

export async function globalStats(db: Executor): Promise<{ totalUniqueClients: number; totalGB: number; totalSessions: number }> {
  // Week buckets partition all time: their sums are the totals.
  const row = await db.get<{ sessions: number; gb: string; rest: string; clients: number }>(
    `SELECT COALESCE(SUM(sessions), 0) AS sessions, ${exactBytesSum('bytes')},
            (SELECT all_clients FROM stats_meta WHERE id = 1) AS clients
     FROM stats_buckets WHERE width = ${WEEK}`)
  return {
    totalUniqueClients: Number(row?.clients ?? 0),
    totalGB: divideExact(bytesOfParts(row?.gb, row?.rest), GB),
    totalSessions: Number(row?.sessions ?? 0),
  }
}

/** `b` and `r`: bytes as exact text (per bucket in `b`; totals as whole GB in `b` and the rest in `r`). */
interface RangeRow { kind: 'b' | 'p' | 't'; k: number; a: number; b: string; r: string; c: number }

export async function rangeStats(db: Executor, network: Network, period: Period): Promise<RangeStats> {
  const { start, end, width } = period
  const weekFloor = bucketStart(end, WEEK)
  const dayFloor = bucketStart(end, DAY)
  const rows = await db.all<RangeRow>(
    // b: the period's buckets; p: its distinct clients (each counted at its first active
    // bucket in the period); t: everything before the end, from whole weeks, then days, then hours.
    `SELECT 'b' AS kind, bucket_ms AS k, sessions AS a, CAST(bytes AS TEXT) AS b, '0' AS r, clients AS c
       FROM stats_buckets WHERE network = $1 AND width = $2 AND bucket_ms >= $3 AND bucket_ms < $4
     UNION ALL
     SELECT 'p', 0, COALESCE(SUM(clients), 0), '0', '0', 0
       FROM stats_bucket_clients WHERE network = $1 AND width = $2 AND bucket_ms >= $3 AND bucket_ms < $4 AND prev_ms < $3
     UNION ALL
     SELECT 't', 0, COALESCE(SUM(sessions), 0), CAST(COALESCE(SUM(bytes / ${GB}), 0) AS TEXT), CAST(COALESCE(SUM(bytes % ${GB}), 0) AS TEXT),
            COALESCE(SUM(new_clients), 0)
       FROM stats_buckets WHERE network = $1 AND (
         (width = ${WEEK} AND bucket_ms < $5) OR
         (width = ${DAY} AND bucket_ms >= $5 AND bucket_ms < $6) OR
         (width = ${HOUR} AND bucket_ms >= $6 AND bucket_ms < $4))`,
    [network, width, start, end, weekFloor, dayFloor])
  const byBucket = new Map<number, RangeRow>()
  let periodClients = 0
  let totals = { sessions: 0, bytes: 0n, clients: 0 }
  for (const row of rows) {
    if (row.kind === 'b') byBucket.set(Number(row.k), row)
    else if (row.kind === 'p') periodClients = Number(row.a)
    else totals = { sessions: Number(row.a), bytes: bytesOfParts(row.b, row.r), clients: Number(row.c) }
  }
  const dataUsageMB: number[][] = []
  const clients: number[][] = []
  const sessions: number[][] = []
  let periodBytes = 0n
  let periodSessions = 0
  for (const t of bucketsOf(period)) {
    const row = byBucket.get(t)
    const bytes = exactInteger(row?.b)
    const count = Number(row?.a ?? 0)
    periodBytes += bytes
    periodSessions += count
    dataUsageMB.push([t, divideExact(bytes, MB)])
    clients.push([t, Number(row?.c ?? 0)])
    sessions.push([t, count])
  }
  return {
    totalCumulativeUniqueClients: totals.clients,
    totalCumulativeGB: divideExact(totals.bytes, GB),
    totalCumulativeSessions: totals.sessions,
    periodUsage: {
      currentUsageMB: divideExact(periodBytes, MB),
      currentClients: periodClients,
      currentSessions: periodSessions,
      dataUsageMB,
      clients,
      sessions,
      gatewayNodes: await networkNodes(db, network),
    },
  }
}

export async function networkNodes(db: Executor, network: Network): Promise<RangeStats['periodUsage']['gatewayNodes']> {
  const sql = network === 'gateway'
    ? 'SELECT location, uid, lat, lon, status, spectrum FROM stats_gateways ORDER BY uid'
    : `SELECT name AS location, uid, lat, lon, status, 'wifi' AS spectrum FROM stats_wifi_nodes ORDER BY uid`
  const rows = await db.all<{ location: string; uid: string; lat: number; lon: number; status: string; spectrum: string }>(sql)
  return rows.map((r) => ({ location: r.location, uid: r.uid, lat: Number(r.lat), lon: Number(r.lon), status: r.status, spectrum: r.spectrum }))
}

export async function wifiNodes(db: Executor): Promise<WifiNode[]> {
  const rows = await db.all<WifiNode>('SELECT name, uid, status, model, wifi_level, lat, lon FROM stats_wifi_nodes ORDER BY uid')
  return rows.map((r) => ({ ...r, lat: Number(r.lat), lon: Number(r.lon) }))
}

/** Countries come from libphonenumber-js at sign-up; numbers of no single country count as ZZ. */
export const NO_COUNTRY = 'ZZ'

export async function nsStats(db: Executor, period: Period): Promise<NsStats> {
  const bucket = bucketSql('created_at', period.width)
  const rows = await db.all<{ kind: 't' | 'p'; cc: string; k: number; n: number }>(
    `SELECT 't' AS kind, COALESCE(country, '${NO_COUNTRY}') AS cc, 0 AS k, COUNT(*) AS n
       FROM numbers WHERE created_at < $2 GROUP BY COALESCE(country, '${NO_COUNTRY}')
     UNION ALL
     SELECT 'p', COALESCE(country, '${NO_COUNTRY}'), ${bucket}, COUNT(*)
       FROM numbers WHERE created_at >= $1 AND created_at < $2 GROUP BY COALESCE(country, '${NO_COUNTRY}'), ${bucket}`,
    [period.start, period.end])
  const ts = bucketsOf(period)
  const index = new Map(ts.map((t, i) => [t, i]))
  const totalPerCountry: Record<string, number> = {}
  const perCountry: Record<string, number[]> = {}
  let totalNS = 0
  let ns = 0
  for (const row of rows) {
    const n = Number(row.n)
    if (row.kind === 't') {
      totalPerCountry[row.cc] = n
      totalNS += n
    } else {
      const series = perCountry[row.cc] ??= new Array<number>(ts.length).fill(0)
      series[index.get(Number(row.k))!]! += n
      ns += n
    }
  }
  return { totalNS, totalPerCountry: sortKeys(totalPerCountry), periodUsage: { ns, ts, perCountry: sortKeys(perCountry) } }
}

function sortKeys<T>(record: Record<string, T>): Record<string, T> {
  return Object.fromEntries(Object.entries(record).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
}
