/**
 * The statistics computed directly from raw sessions and sign-ups, the slow obvious way:
 * what the rollup-based answers must equal exactly.
 */
import { bucketsOf, bucketStart, type Period } from '../../../src/stats/time.ts'
import type { Session } from '../../../src/stats/ingest/validate-session.ts'

/** A session as ingested (clientId still raw). */
export type RawSession = Session

const bytesOf = (s: RawSession) => s.bytesUp + s.bytesDown

export function expectedGlobal(sessions: RawSession[]) {
  return {
    totalUniqueClients: new Set(sessions.map((s) => s.clientId)).size,
    totalGB: sessions.reduce((sum, s) => sum + bytesOf(s), 0) / 1e9,
    totalSessions: sessions.length,
  }
}

/** Numbers of a range answer, without the nodes; MB/GB kept as integer bytes for exact comparison. */
export function expectedRange(sessions: RawSession[], network: 'gateway' | 'wifi', period: Period) {
  const mine = sessions.filter((s) => s.network === network)
  const before = mine.filter((s) => s.start < period.end)
  const inPeriod = before.filter((s) => s.start >= period.start)
  const buckets = bucketsOf(period)
  const perBucket = buckets.map((t) => inPeriod.filter((s) => bucketStart(s.start, period.width) === t))
  return {
    totalCumulativeUniqueClients: new Set(before.map((s) => s.clientId)).size,
    totalCumulativeBytes: before.reduce((sum, s) => sum + bytesOf(s), 0),
    totalCumulativeSessions: before.length,
    currentBytes: inPeriod.reduce((sum, s) => sum + bytesOf(s), 0),
    currentClients: new Set(inPeriod.map((s) => s.clientId)).size,
    currentSessions: inPeriod.length,
    bytes: perBucket.map((list, i) => [buckets[i]!, list.reduce((sum, s) => sum + bytesOf(s), 0)]),
    clients: perBucket.map((list, i) => [buckets[i]!, new Set(list.map((s) => s.clientId)).size]),
    sessions: perBucket.map((list, i) => [buckets[i]!, list.length]),
  }
}

/** A range answer in the oracle's terms (MB back to integer bytes, which is exact below 2^53). */
export function observedRange(body: {
  totalCumulativeUniqueClients: number; totalCumulativeGB: number; totalCumulativeSessions: number
  periodUsage: { currentUsageMB: number; currentClients: number; currentSessions: number; dataUsageMB: number[][]; clients: number[][]; sessions: number[][] }
}) {
  const p = body.periodUsage
  return {
    totalCumulativeUniqueClients: body.totalCumulativeUniqueClients,
    totalCumulativeBytes: Math.round(body.totalCumulativeGB * 1e9),
    totalCumulativeSessions: body.totalCumulativeSessions,
    currentBytes: Math.round(p.currentUsageMB * 1e6),
    currentClients: p.currentClients,
    currentSessions: p.currentSessions,
    bytes: p.dataUsageMB.map(([t, mb]) => [t, Math.round(mb! * 1e6)]),
    clients: p.clients,
    sessions: p.sessions,
  }
}
