/**
 * Reading a client's activity history: stats_client_weeks rows (hour masks per network, week
 * and client) and stats_network_clients (each client's first active week per network).
 *
 * stats_client_weeks is keyed by week first, so that a bulk import appends to it; the history
 * of one client is therefore found by point lookups at (week, client), never by a range. Two
 * facts bound those lookups: no client has rows before its first week, and activity more than
 * REACH weeks back counts the same however old it is ("long ago"), so one old row stands for it.
 */
import type { Executor } from '../../db/engine.ts'
import { insertRows } from '../sql-rows.ts'
import type { Network } from '../../contract/stats-schemas.ts'
import { REACH, WEEK } from '../time.ts'

export interface WeekRow { client_hash: string; week_ms: number; d0: number; d1: number; d2: number; d3: number; d4: number; d5: number; d6: number }

export const WEEK_COLUMNS = ['network', 'week_ms', 'client_hash', 'd0', 'd1', 'd2', 'd3', 'd4', 'd5', 'd6'] as const
const ROW_COLUMNS = 'client_hash, week_ms, d0, d1, d2, d3, d4, d5, d6'

/** Weeks back from a client's first new week in which a previous row still matters. */
const REACH_WEEKS = REACH[WEEK]!
/** Backward probes per round, growing: most clients were active in the week or two before. */
const BACK_ROUNDS: readonly number[] = [2, 14, REACH_WEEKS]
/** (week, client) pairs per PostgreSQL statement (two array parameters). */
const PAIRS_PER_QUERY = 20_000

export const masksOf = (row: WeekRow): number[] => [row.d0, row.d1, row.d2, row.d3, row.d4, row.d5, row.d6].map(Number)

const normalise = (row: WeekRow): WeekRow => ({ ...row, week_ms: Number(row.week_ms) })

/** Each client's first active week on `network`; clients never active on it are absent. */
export async function firstWeeksOf(ex: Executor, network: Network, clients: readonly string[]): Promise<Map<string, number>> {
  const first = new Map<string, number>()
  if (ex.engine === 'sqlite') {
    for (const client of clients) {
      const row = await ex.get<{ first_week: number }>('SELECT first_week FROM stats_network_clients WHERE network = $1 AND client_hash = $2', [network, client])
      if (row !== undefined) first.set(client, Number(row.first_week))
    }
    return first
  }
  for (let offset = 0; offset < clients.length; offset += PAIRS_PER_QUERY) {
    const rows = await ex.all<{ client_hash: string; first_week: number }>(
      'SELECT client_hash, first_week FROM stats_network_clients WHERE network = $1 AND client_hash = ANY($2::text[])',
      [network, clients.slice(offset, offset + PAIRS_PER_QUERY)])
    for (const row of rows) first.set(row.client_hash, Number(row.first_week))
  }
  return first
}

/** The rows that exist at the given (client, week) points. */
export async function probeWeeks(ex: Executor, network: Network, points: readonly (readonly [string, number])[]): Promise<WeekRow[]> {
  const found: WeekRow[] = []
  if (ex.engine === 'sqlite') {
    // In process a cached point lookup costs about a microsecond: no batching to gain.
    for (const [client, week] of points) {
      const row = await ex.get<WeekRow>(`SELECT ${ROW_COLUMNS} FROM stats_client_weeks WHERE network = $1 AND week_ms = $2 AND client_hash = $3`,
        [network, week, client])
      if (row !== undefined) found.push(normalise(row))
    }
    return found
  }
  for (let offset = 0; offset < points.length; offset += PAIRS_PER_QUERY) {
    const chunk = points.slice(offset, offset + PAIRS_PER_QUERY)
    // LATERAL + OFFSET 0: one index probe per point, whatever the planner thinks of the arrays.
    const rows = await ex.all<WeekRow>(
      `SELECT x.* FROM unnest($2::bigint[], $3::text[]) AS p (w, h) CROSS JOIN LATERAL (
         SELECT ${ROW_COLUMNS} FROM stats_client_weeks z WHERE z.network = $1 AND z.week_ms = p.w AND z.client_hash = p.h OFFSET 0) x`,
      [network, chunk.map((p) => p[1]), chunk.map((p) => p[0])])
    for (const row of rows) found.push(normalise(row))
  }
  return found
}

/**
 * For each client, the row of its last active week before `before[client]`, as far as it
 * matters: when that week lies more than REACH weeks back, the row of its first week stands
 * for it. Clients without activity before that week are absent. `first` is firstWeeksOf.
 */
export async function rowsBefore(ex: Executor, network: Network, before: ReadonlyMap<string, number>, first: ReadonlyMap<string, number>): Promise<Map<string, WeekRow>> {
  const found = new Map<string, WeekRow>()
  // Per client: the next week to probe (going back) and the last one worth probing.
  let pending: { client: string; next: number; lowest: number }[] = []
  for (const [client, week] of before) {
    const firstWeek = first.get(client)
    if (firstWeek === undefined || firstWeek >= week) continue
    pending.push({ client, next: week - WEEK, lowest: Math.max(firstWeek, week - REACH_WEEKS * WEEK) })
  }
  let probed = 0
  for (const upTo of BACK_ROUNDS) {
    if (pending.length === 0) break
    const points: [string, number][] = []
    for (const p of pending) {
      for (let week = p.next, n = probed; week >= p.lowest && n < upTo; week -= WEEK, n++) points.push([p.client, week])
    }
    for (const row of await probeWeeks(ex, network, points)) {
      const seen = found.get(row.client_hash)
      if (seen === undefined || seen.week_ms < row.week_ms) found.set(row.client_hash, row)
    }
    pending = pending.filter((p) => {
      if (found.has(p.client)) return false
      p.next -= (upTo - probed) * WEEK
      return p.next >= p.lowest
    })
    probed = upTo
  }
  // Nothing within reach, yet active before: the first week's row is as good as the real one.
  const longAgo: [string, number][] = []
  for (const [client, week] of before) {
    const firstWeek = first.get(client)
    if (!found.has(client) && firstWeek !== undefined && firstWeek < week - REACH_WEEKS * WEEK) longAgo.push([client, firstWeek])
  }
  for (const row of await probeWeeks(ex, network, longAgo)) found.set(row.client_hash, row)
  return found
}

/** The network's latest week with any client activity (null: none yet). */
export async function lastWeekOf(ex: Executor, network: Network): Promise<number | null> {
  const row = await ex.get<{ w: number | null }>('SELECT MAX(week_ms) AS w FROM stats_client_weeks WHERE network = $1', [network])
  return row?.w === null || row?.w === undefined ? null : Number(row.w)
}

/**
 * Each client's rows from its last active week before `from[client]` (see rowsBefore) to the
 * network's latest week, in week order: the part of its history that new activity from that
 * week on can change. Clients never active on the network get an empty list.
 */
export async function loadWindows(ex: Executor, network: Network, from: ReadonlyMap<string, number>): Promise<{ windows: Map<string, WeekRow[]>; first: Map<string, number> }> {
  const first = await firstWeeksOf(ex, network, [...from.keys()])
  const windows = new Map<string, WeekRow[]>([...from.keys()].map((c) => [c, []]))
  if (first.size === 0) return { windows, first }
  const last = await lastWeekOf(ex, network)
  const points: [string, number][] = []
  for (const [client, week] of from) {
    if (!first.has(client) || last === null) continue
    for (let w = Math.max(week, first.get(client)!); w <= last; w += WEEK) points.push([client, w])
  }
  for (const row of (await rowsBefore(ex, network, from, first)).values()) windows.get(row.client_hash)!.push(row)
  for (const row of await probeWeeks(ex, network, points)) windows.get(row.client_hash)!.push(row)
  for (const rows of windows.values()) rows.sort((a, b) => a.week_ms - b.week_ms)
  return { windows, first }
}

const FIRST_WEEK_CONFLICT = 'ON CONFLICT (network, client_hash) DO UPDATE SET first_week = excluded.first_week WHERE excluded.first_week < stats_network_clients.first_week'

/** Records first active weeks (an earlier week replaces a later one); one row per client. */
export async function recordFirstWeeks(ex: Executor, network: Network, rows: readonly (readonly [string, number])[]): Promise<void> {
  if (rows.length === 0) return
  if (ex.engine === 'postgres') {
    // Two array parameters: PostgreSQL plans this once, where thousands of VALUES rows cost a parse each time.
    await ex.run(`INSERT INTO stats_network_clients (network, client_hash, first_week)
      SELECT $1, c, w FROM unnest($2::text[], $3::bigint[]) AS t (c, w) ${FIRST_WEEK_CONFLICT}`, [network, rows.map((r) => r[0]), rows.map((r) => r[1])])
    return
  }
  await insertRows(ex, 'stats_network_clients', ['network', 'client_hash', 'first_week'], rows.map(([client, week]) => [network, client, week]), FIRST_WEEK_CONFLICT)
}

/** Adds clients to the set of every client ever seen. Returns how many were not in it. */
export async function recordClients(ex: Executor, clients: Iterable<string>): Promise<number> {
  const list = [...clients]
  if (list.length === 0) return 0
  if (ex.engine === 'postgres') {
    return ex.run('INSERT INTO stats_clients (client_hash) SELECT unnest($1::text[]) ON CONFLICT (client_hash) DO NOTHING', [list])
  }
  return (await insertRows(ex, 'stats_clients', ['client_hash'], list.map((c) => [c]), 'ON CONFLICT (client_hash) DO NOTHING')).changed
}
