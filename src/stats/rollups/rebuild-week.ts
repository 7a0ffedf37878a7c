/**
 * The rollups of one week, recomputed whole from that week's activity (week-activity.ts) and
 * each client's last active hour before it: every bucket, distinct-client point and client
 * week row of the week is replaced. Used by the bulk import (import/store-and-rebuild.ts).
 */
import type { Executor } from '../../db/engine.ts'
import { addExact, type ExactSum } from '../../lib/exact-sum.ts'
import { withLength } from '../../lib/typed-arrays.ts'
import { checkBucketBytes } from './bucket-bytes.ts'
import { appendRows } from '../sql-rows.ts'
import type { ClientNumbers } from './client-numbers.ts'
import { firstWeeksOf, masksOf, recordClients, recordFirstWeeks, rowsBefore, WEEK_COLUMNS } from './client-history.ts'
import { FIRST_EVER, forEachPoint, hoursOfWeek, parsePointKey, pointKey, type PointCounts } from './presence.ts'
import type { Network } from '../../contract/stats-schemas.ts'
import { bucketStart, HOUR, WEEK, WIDTHS } from '../time.ts'
import type { WeekActivity } from './week-activity.ts'

/** Each client's last active hour per network, as far as an import has followed it, by client number (client-numbers.ts). */
export class LastHours {
  /** NaN: not followed. */
  readonly #hours: Record<Network, Float64Array<ArrayBuffer>> = { gateway: new Float64Array(0), wifi: new Float64Array(0) }

  /** The last active hour of client number `n` (undefined: not followed). */
  get(network: Network, n: number): number | undefined {
    const hour = this.#hours[network][n]
    return hour === undefined || Number.isNaN(hour) ? undefined : hour
  }

  set(network: Network, n: number, hour: number): void {
    const hours = this.#hours[network] = withLength(this.#hours[network], n + 1, NaN)
    hours[n] = hour
  }

  /** Forgets everything followed (someone else changed the statistics). */
  clear(): void {
    for (const network of ['gateway', 'wifi'] as const) this.#hours[network] = new Float64Array(0)
  }
}

/**
 * Each client's last active hour before `week` (absent: never active before it), and the
 * clients whose first active week on the network is this one (to record).
 */
async function lastHoursBefore(ex: Executor, network: Network, clients: string[], week: number): Promise<{ last: Map<string, number>; firstSeen: string[] }> {
  const first = await firstWeeksOf(ex, network, clients)
  const rows = await rowsBefore(ex, network, new Map(clients.map((c) => [c, week])), first)
  const last = new Map<string, number>()
  for (const [client, row] of rows) last.set(client, hoursOfWeek(row.week_ms, masksOf(row)).at(-1)!)
  return { last, firstSeen: clients.filter((c) => (first.get(c) ?? Infinity) > week) }
}

interface Sums { sessions: number; bytes: ExactSum; clients: number; newClients: number }

/**
 * Recomputes every rollup of one week from its sessions' activity, whose clients are numbers
 * of `numbers`. Returns how many clients were new to the service.
 */
export async function rebuildWeek(ex: Executor, week: number, activity: WeekActivity, lastHours: LastHours, numbers: ClientNumbers): Promise<number> {
  const end = week + WEEK
  const weekHour = week / HOUR
  const bucketRows: unknown[][] = []
  const pointRows: unknown[][] = []
  const weekRows: unknown[][] = []
  const newToImport = new Set<string>()
  for (const network of ['gateway', 'wifi'] as const) {
    const { sums, clients, offsets, activeHours } = activity[network]
    const buckets = new Map<number, Map<number, Sums>>(WIDTHS.map((w) => [w, new Map()]))
    const bucket = (width: number, start: number) => {
      const byStart = buckets.get(width)!
      let b = byStart.get(start)
      if (b === undefined) byStart.set(start, b = { sessions: 0, bytes: 0, clients: 0, newClients: 0 })
      return b
    }
    for (const [hour, s] of sums) {
      for (const width of WIDTHS) {
        const b = bucket(width, bucketStart(hour * HOUR, width))
        b.sessions += s.sessions
        b.bytes = addExact(b.bytes, s.bytes)
      }
    }
    // Clients this import has not met yet on this network: their history is in the database.
    const unknown: string[] = []
    for (let i = 0; i < clients.length; i++) {
      if (lastHours.get(network, clients[i]!) === undefined) unknown.push(numbers.hashes[clients[i]!]!)
    }
    const { last: found, firstSeen } = await lastHoursBefore(ex, network, unknown, week)
    await recordFirstWeeks(ex, network, firstSeen.map((c) => [c, week]))
    for (const c of unknown) newToImport.add(c)
    const points: PointCounts = new Map()
    // Clients come in key order, so that the rows below are inserted in the order of their primary keys.
    for (let i = 0; i < clients.length; i++) {
      const client = numbers.hashes[clients[i]!]!
      const hours = activeHours.subarray(offsets[i]!, offsets[i + 1]!)
      const prev = lastHours.get(network, clients[i]!) ?? found.get(client) ?? null
      forEachPoint(prev, hours, (p) => {
        const b = bucket(p.width, p.bucket)
        b.clients += 1
        if (p.prev === FIRST_EVER) b.newClients += 1
        const k = pointKey(p)
        points.set(k, (points.get(k) ?? 0) + 1)
      })
      const masks = [0, 0, 0, 0, 0, 0, 0]
      for (let h = 0; h < hours.length; h++) {
        const offset = hours[h]! - weekHour
        const day = Math.floor(offset / 24)
        masks[day] = masks[day]! | (1 << offset % 24)
      }
      weekRows.push([network, week, client, ...masks])
      lastHours.set(network, clients[i]!, hours[hours.length - 1]!)
    }
    for (const [width, byStart] of buckets) {
      for (const [start, b] of byStart) checkBucketBytes(b.bytes)
      for (const [start, b] of byStart) bucketRows.push([network, width, start, b.sessions, b.bytes, b.clients, b.newClients])
    }
    await ex.run(`DELETE FROM stats_buckets WHERE network = $1 AND width IN (${WIDTHS.join(', ')}) AND bucket_ms >= $2 AND bucket_ms < $3`, [network, week, end])
    await ex.run(`DELETE FROM stats_bucket_clients WHERE network = $1 AND width IN (${WIDTHS.join(', ')}) AND bucket_ms >= $2 AND bucket_ms < $3`, [network, week, end])
    // The activity holds every client of the week, so the week's rows are replaced as a whole.
    await ex.run('DELETE FROM stats_client_weeks WHERE network = $1 AND week_ms = $2', [network, week])
    for (const k of [...points.keys()].sort((a, b) => a - b)) {
      const n = points.get(k)!
      const p = parsePointKey(k)
      pointRows.push([network, p.width, p.bucket, p.prev, n])
    }
  }

  // The week's rows were deleted above: nothing can conflict.
  await appendRows(ex, 'stats_buckets', ['network', 'width', 'bucket_ms', 'sessions', 'bytes', 'clients', 'new_clients'], bucketRows)
  await appendRows(ex, 'stats_bucket_clients', ['network', 'width', 'bucket_ms', 'prev_ms', 'clients'], pointRows)
  await appendRows(ex, 'stats_client_weeks', WEEK_COLUMNS, weekRows)
  // Every client met before in this import is in stats_clients already.
  return recordClients(ex, newToImport)
}
