/**
 * Maintains the rollups for newly stored sessions, inside the ingesting transaction.
 *
 * Sessions and bytes are plain sums per bucket. Distinct clients need each client's history:
 * for every client of the batch, its week rows from the last one before the batch's earliest
 * new week onwards are read, and the points (bucket, previous bucket) of that window are
 * computed before and after adding the new hours. The difference is what changes in
 * stats_bucket_clients and in the clients / new_clients of stats_buckets. That is exact for
 * late and out-of-order sessions too; for in-order ones the window is one or two rows.
 * (The points of the window's first row are the same before and after, so the unknown
 * activity before it cancels out.)
 */
import type { Executor } from '../../db/engine.ts'
import { addExact, type ExactSum } from '../../lib/exact-sum.ts'
import { checkBucketBytes } from './bucket-bytes.ts'
import { insertRows } from '../sql-rows.ts'
import { loadWindows, masksOf, recordClients, recordFirstWeeks, WEEK_COLUMNS } from './client-history.ts'
import { addPointChange, FIRST_EVER, hourOf, hoursOfWeek, mergeHours, parsePointKey, weeksOfHours, type PointCounts } from './presence.ts'
import type { Network } from '../../contract/stats-schemas.ts'
import { bucketStart, WEEK, WIDTHS } from '../time.ts'

/** A stored session, as the rollups see it. */
export interface StoredSession {
  network: Network
  clientHash: string
  start: number
  bytes: number
}

interface BucketDelta { sessions: number; bytes: ExactSum; clients: number; newClients: number }

class Deltas {
  readonly buckets = new Map<string, BucketDelta>()
  readonly points = new Map<Network, PointCounts>()

  bucket(network: Network, width: number, bucket: number): BucketDelta {
    const key = `${network}|${width}|${bucket}`
    let delta = this.buckets.get(key)
    if (delta === undefined) this.buckets.set(key, delta = { sessions: 0, bytes: 0, clients: 0, newClients: 0 })
    return delta
  }

  pointsOf(network: Network): PointCounts {
    let counts = this.points.get(network)
    if (counts === undefined) this.points.set(network, counts = new Map())
    return counts
  }
}

/** Folds the clients' new active hours into the point deltas; returns the week rows to write. */
async function clientDeltas(ex: Executor, network: Network, newHours: Map<string, Set<number>>, deltas: Deltas): Promise<unknown[][]> {
  const firstWeeks = new Map<string, number>()
  for (const [client, hours] of newHours) firstWeeks.set(client, bucketStart(Math.min(...hours) * 3_600_000, WEEK))
  const { windows, first } = await loadWindows(ex, network, firstWeeks)
  await recordFirstWeeks(ex, network, [...firstWeeks].filter(([client, week]) => (first.get(client) ?? Infinity) > week))
  const counts = deltas.pointsOf(network)
  const weekRows: unknown[][] = []
  for (const [client, hourSet] of newHours) {
    const rows = windows.get(client) ?? []
    const before = rows.flatMap((row) => hoursOfWeek(row.week_ms, masksOf(row)))
    const added = [...hourSet].sort((a, b) => a - b)
    const after = mergeHours(before, added)
    if (after.length === before.length) continue // every new hour was known already
    addPointChange(counts, before, after)
    const changedWeeks = new Set(added.map((hour) => bucketStart(hour * 3_600_000, WEEK)))
    for (const [week, masks] of weeksOfHours(after)) {
      if (changedWeeks.has(week)) weekRows.push([network, week, client, ...masks])
    }
  }
  return weekRows
}

/** Updates every rollup for `sessions` (all newly stored). Returns how many clients were new to the service. */
export async function applyToRollups(ex: Executor, sessions: readonly StoredSession[]): Promise<number> {
  if (sessions.length === 0) return 0
  const deltas = new Deltas()
  const hoursByNetwork = new Map<Network, Map<string, Set<number>>>()
  for (const s of sessions) {
    for (const width of WIDTHS) {
      const delta = deltas.bucket(s.network, width, bucketStart(s.start, width))
      delta.sessions += 1
      delta.bytes = addExact(delta.bytes, s.bytes)
    }
    let clients = hoursByNetwork.get(s.network)
    if (clients === undefined) hoursByNetwork.set(s.network, clients = new Map())
    let hours = clients.get(s.clientHash)
    if (hours === undefined) clients.set(s.clientHash, hours = new Set())
    hours.add(hourOf(s.start))
  }

  const weekRows: unknown[][] = []
  for (const [network, newHours] of hoursByNetwork) weekRows.push(...await clientDeltas(ex, network, newHours, deltas))

  const pointRows: unknown[][] = []
  for (const [network, counts] of deltas.points) {
    for (const [key, count] of counts) {
      if (count === 0) continue
      const point = parsePointKey(key)
      pointRows.push([network, point.width, point.bucket, point.prev, count])
      const delta = deltas.bucket(network, point.width, point.bucket)
      delta.clients += count
      if (point.prev === FIRST_EVER) delta.newClients += count
    }
  }
  const bucketRows = [...deltas.buckets].map(([key, d]) => {
    const [network, width, bucket] = key.split('|')
    checkBucketBytes(d.bytes)
    return [network, Number(width), Number(bucket), d.sessions, d.bytes, d.clients, d.newClients]
  })

  await insertRows(ex, 'stats_client_weeks', WEEK_COLUMNS, weekRows,
    `ON CONFLICT (network, week_ms, client_hash) DO UPDATE SET d0 = excluded.d0, d1 = excluded.d1, d2 = excluded.d2,
     d3 = excluded.d3, d4 = excluded.d4, d5 = excluded.d5, d6 = excluded.d6`)
  await insertRows(ex, 'stats_bucket_clients', ['network', 'width', 'bucket_ms', 'prev_ms', 'clients'], pointRows,
    'ON CONFLICT (network, width, bucket_ms, prev_ms) DO UPDATE SET clients = stats_bucket_clients.clients + excluded.clients')
  await insertRows(ex, 'stats_buckets', ['network', 'width', 'bucket_ms', 'sessions', 'bytes', 'clients', 'new_clients'], bucketRows,
    `ON CONFLICT (network, width, bucket_ms) DO UPDATE SET sessions = stats_buckets.sessions + excluded.sessions,
     bytes = stats_buckets.bytes + excluded.bytes, clients = stats_buckets.clients + excluded.clients,
     new_clients = stats_buckets.new_clients + excluded.new_clients`)
  const everyClient = new Set(sessions.map((s) => s.clientHash))
  return recordClients(ex, everyClient)
}
