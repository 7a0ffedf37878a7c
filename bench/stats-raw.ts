/**
 * The range statistics computed straight from the raw sessions, with SQL over stats_sessions:
 * the baseline the rollups are measured against, and a check that they give the same answer.
 */
import type { Executor } from '../src/db/engine.ts'
import { networkNodes } from '../src/stats/public/queries.ts'
import type { Network, RangeStats } from '../src/contract/stats-schemas.ts'
import { bucketsOf, bucketSql, type Period } from '../src/stats/time.ts'

export async function rawRangeStats(db: Executor, network: Network, period: Period): Promise<RangeStats> {
  const bucket = bucketSql('start_ms', period.width)
  const params = [network, period.start, period.end]
  const series = await db.all<{ b: number; sessions: number; bytes: number; clients: number }>(
    `SELECT ${bucket} AS b, COUNT(*) AS sessions, SUM(bytes_up + bytes_down) AS bytes, COUNT(DISTINCT client_hash) AS clients
     FROM stats_sessions WHERE network = $1 AND start_ms >= $2 AND start_ms < $3 GROUP BY ${bucket}`, params)
  const period_ = await db.get<{ clients: number }>(
    'SELECT COUNT(DISTINCT client_hash) AS clients FROM stats_sessions WHERE network = $1 AND start_ms >= $2 AND start_ms < $3', params)
  const total = await db.get<{ sessions: number; bytes: number; clients: number }>(
    `SELECT COUNT(*) AS sessions, COALESCE(SUM(bytes_up + bytes_down), 0) AS bytes, COUNT(DISTINCT client_hash) AS clients
     FROM stats_sessions WHERE network = $1 AND start_ms < $2`, [network, period.end])
  const byBucket = new Map(series.map((r) => [Number(r.b), r]))
  const ts = bucketsOf(period)
  const at = (t: number) => byBucket.get(t)
  const bytes = ts.map((t) => Number(at(t)?.bytes ?? 0))
  return {
    totalCumulativeUniqueClients: Number(total?.clients ?? 0),
    totalCumulativeGB: Number(total?.bytes ?? 0) / 1e9,
    totalCumulativeSessions: Number(total?.sessions ?? 0),
    periodUsage: {
      currentUsageMB: bytes.reduce((a, b) => a + b, 0) / 1e6,
      currentClients: Number(period_?.clients ?? 0),
      currentSessions: ts.reduce((sum, t) => sum + Number(at(t)?.sessions ?? 0), 0),
      dataUsageMB: ts.map((t, i) => [t, bytes[i]! / 1e6]),
      clients: ts.map((t) => [t, Number(at(t)?.clients ?? 0)]),
      sessions: ts.map((t) => [t, Number(at(t)?.sessions ?? 0)]),
      gatewayNodes: await networkNodes(db, network),
    },
  }
}
