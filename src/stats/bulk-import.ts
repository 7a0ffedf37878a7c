/**
 * Bulk loading for `kns stats import`: the raw sessions first, in batches, marking the first
 * week whose rollups must be recomputed (stats_meta.rebuild_from); then the rollups of every
 * week from that one on, recomputed from the raw sessions one week per transaction.
 *
 * Per session this is one insert and one read back, instead of the per-client history reads
 * and writes of every API batch, and file order does not matter. Each step is a transaction
 * that leaves the statistics consistent for every week before rebuild_from, so an interrupted
 * import resumes where it stopped (the next import, or the same one run again, finishes it).
 * API ingestion can go on meanwhile: weeks not yet recomputed are recomputed with its sessions.
 */
import type { Database, Executor } from '../db/engine.ts'
import { insertRows } from './bulk.ts'
import { bumpVersion, lockStats, SESSION_COLUMNS, sessionRows } from './ingest.ts'
import { firstWeeksOf, masksOf, recordFirstWeeks, rowsBefore, WEEK_COLUMNS } from './client-history.ts'
import { FIRST_EVER, forEachPoint, hourOf, hoursOfWeek, parsePointKey, pointKey, weeksOfHours, type PointCounts } from './presence.ts'
import type { Network } from './schemas.ts'
import type { RawBatch } from './session-batches.ts'
import { bucketStart, HOUR, WEEK, WIDTHS } from './time.ts'
import type { Session } from './validate-session.ts'

const PG_TYPES = ['bigint', 'text', 'text', 'text', 'text', 'bigint', 'bigint', 'bigint']

/**
 * Stores the rows of a batch (see session-batches.ts) not stored yet, and marks their weeks for
 * recomputation. Returns how many were new.
 */
export async function insertRawBatch(db: Database, batch: Pick<RawBatch, 'rows' | 'first'>): Promise<number> {
  if (batch.rows.length === 0) return 0
  return db.transaction(async (tx) => {
    await lockStats(db, tx)
    let inserted: number
    let first: number
    if (db.engine === 'sqlite') {
      // In process, short multi-row VALUES statements measured fastest (2 us/row, against 3.5 for
      // one statement per row and 6 for json_each).
      inserted = (await insertRows(tx, 'sqlite', 'stats_sessions', SESSION_COLUMNS, batch.rows,
        'ON CONFLICT (start_ms, session_id) DO NOTHING')).changed
      // Which rows were new is not known here: when only some were, the batch's earliest start
      // is an early enough mark (recomputing a week more is harmless).
      first = batch.first
    } else {
      const row = await tx.get<{ n: number; first: number | null }>(`WITH ins AS (
        INSERT INTO stats_sessions (${SESSION_COLUMNS.join(', ')})
        SELECT ${PG_TYPES.map((t, i) => `CAST(e ->> ${i} AS ${t})`).join(', ')} FROM jsonb_array_elements(CAST($1 AS jsonb)) e
        ON CONFLICT (start_ms, session_id) DO NOTHING RETURNING start_ms)
        SELECT COUNT(*) AS n, MIN(start_ms) AS first FROM ins`, [JSON.stringify(batch.rows)])
      inserted = Number(row?.n ?? 0)
      first = Number(row?.first ?? batch.first)
    }
    if (inserted > 0) {
      const week = bucketStart(first, WEEK)
      await tx.run('UPDATE stats_meta SET rebuild_from = CASE WHEN rebuild_from IS NULL OR rebuild_from > $1 THEN $1 ELSE rebuild_from END WHERE id = 1', [week])
    }
    return inserted
  })
}

/** Stores the sessions not stored yet, and marks their weeks for recomputation. Returns how many were new. */
export async function insertRawSessions(db: Database, hashClient: (clientId: string) => string, sessions: readonly Session[]): Promise<number> {
  const rows = sessionRows(hashClient, sessions)
  return insertRawBatch(db, { rows, first: sessions.reduce((m, s) => Math.min(m, s.start), Infinity) })
}

interface RawRow { network: Network; client_hash: string; start_ms: number; bytes: number }

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

interface Sums { sessions: number; bytes: number; clients: number; newClients: number }

/** Recomputes every rollup of one week from the raw sessions. Returns how many clients were new to the service. */
async function rebuildWeek(ex: Executor, engine: Database['engine'], week: number, lastHours: Map<string, number>): Promise<number> {
  const end = week + WEEK
  const raw = await ex.all<RawRow>('SELECT network, client_hash, start_ms, bytes_up + bytes_down AS bytes FROM stats_sessions WHERE start_ms >= $1 AND start_ms < $2', [week, end])
  // Per network: sums per hour first (cheap numeric keys), rolled up to days and the week below.
  const hourSums = new Map<Network, Map<number, Sums>>()
  const hours = new Map<Network, Map<string, Set<number>>>()
  for (const r of raw) {
    const hour = hourOf(Number(r.start_ms))
    let sums = hourSums.get(r.network)
    if (sums === undefined) hourSums.set(r.network, sums = new Map())
    let s = sums.get(hour)
    if (s === undefined) sums.set(hour, s = { sessions: 0, bytes: 0, clients: 0, newClients: 0 })
    s.sessions += 1
    s.bytes += Number(r.bytes)
    let clients = hours.get(r.network)
    if (clients === undefined) hours.set(r.network, clients = new Map())
    let set = clients.get(r.client_hash)
    if (set === undefined) clients.set(r.client_hash, set = new Set())
    set.add(hour)
  }

  const bucketRows: unknown[][] = []
  const pointRows: unknown[][] = []
  const weekRows: unknown[][] = []
  const newToImport = new Set<string>()
  for (const network of ['gateway', 'wifi'] as const) {
    const clients = hours.get(network) ?? new Map<string, Set<number>>()
    const buckets = new Map<number, Map<number, Sums>>(WIDTHS.map((w) => [w, new Map()]))
    const bucket = (width: number, start: number) => {
      const byStart = buckets.get(width)!
      let b = byStart.get(start)
      if (b === undefined) byStart.set(start, b = { sessions: 0, bytes: 0, clients: 0, newClients: 0 })
      return b
    }
    for (const [hour, s] of hourSums.get(network) ?? []) {
      for (const width of WIDTHS) {
        const b = bucket(width, bucketStart(hour * HOUR, width))
        b.sessions += s.sessions
        b.bytes += s.bytes
      }
    }
    // Clients this import has not met yet on this network: their history is in the database.
    const unknown = [...clients.keys()].filter((c) => !lastHours.has(`${network}|${c}`))
    const { last: found, firstSeen } = await lastHoursBefore(ex, network, unknown, week)
    await recordFirstWeeks(ex, network, firstSeen.map((c) => [c, week]))
    for (const c of unknown) newToImport.add(c)
    const points: PointCounts = new Map()
    // In key order, so that the rows below are inserted in the order of their primary keys.
    for (const client of [...clients.keys()].sort()) {
      const set = clients.get(client)!
      const key = `${network}|${client}`
      const prev = lastHours.get(key) ?? found.get(client) ?? null
      const sorted = [...set].sort((a, b) => a - b)
      forEachPoint(prev, sorted, (p) => {
        const b = bucket(p.width, p.bucket)
        b.clients += 1
        if (p.prev === FIRST_EVER) b.newClients += 1
        const k = pointKey(p)
        points.set(k, (points.get(k) ?? 0) + 1)
      })
      for (const [w, masks] of weeksOfHours(sorted)) weekRows.push([network, w, client, ...masks])
      lastHours.set(key, sorted.at(-1)!)
    }
    for (const [width, byStart] of buckets) {
      for (const [start, b] of byStart) bucketRows.push([network, width, start, b.sessions, b.bytes, b.clients, b.newClients])
      await ex.run('DELETE FROM stats_buckets WHERE network = $1 AND width = $2 AND bucket_ms >= $3 AND bucket_ms < $4', [network, width, week, end])
      await ex.run('DELETE FROM stats_bucket_clients WHERE network = $1 AND width = $2 AND bucket_ms >= $3 AND bucket_ms < $4', [network, width, week, end])
    }
    for (const k of [...points.keys()].sort((a, b) => a - b)) {
      const n = points.get(k)!
      const p = parsePointKey(k)
      pointRows.push([network, p.width, p.bucket, p.prev, n])
    }
  }

  await insertRows(ex, engine, 'stats_buckets', ['network', 'width', 'bucket_ms', 'sessions', 'bytes', 'clients', 'new_clients'], bucketRows)
  await insertRows(ex, engine, 'stats_bucket_clients', ['network', 'width', 'bucket_ms', 'prev_ms', 'clients'], pointRows)
  await insertRows(ex, engine, 'stats_client_weeks', WEEK_COLUMNS, weekRows,
    `ON CONFLICT (network, week_ms, client_hash) DO UPDATE SET d0 = excluded.d0, d1 = excluded.d1, d2 = excluded.d2,
     d3 = excluded.d3, d4 = excluded.d4, d5 = excluded.d5, d6 = excluded.d6`)
  // Every client met before in this import is in stats_clients already.
  const { changed } = await insertRows(ex, engine, 'stats_clients', ['client_hash'], [...newToImport].map((c) => [c]), 'ON CONFLICT (client_hash) DO NOTHING')
  return changed
}

/**
 * A recomputation transaction goes on with the next week until it has run this long: each
 * commit writes every page it changed, and a week's client rows are spread over the whole of
 * stats_client_weeks, so one commit per week wrote that table again and again. Short enough
 * that API ingestion waiting for the lock is not held up for long.
 */
const STEP_MS = 1000

/**
 * Recomputes the rollups of the weeks from stats_meta.rebuild_from on, a few weeks per
 * transaction, advancing the mark with each. One instance carries each client's last active
 * hour from week to week (bounded by the number of clients), also across calls: an import
 * recomputes the weeks its file has gone past while it reads the rest.
 */
export class WeekRebuilder {
  readonly #db: Database
  readonly #lastHours = new Map<string, number>()
  #expected: { week: number; version: number } | null = null

  constructor(db: Database) {
    this.#db = db
  }

  /**
   * Recomputes the pending weeks that start before `before` (all of them when omitted).
   * `onWeek` reports progress (weeks done, weeks to do). Returns the number of weeks done.
   */
  async run(options: { before?: number; onWeek?: (done: number, total: number) => void } = {}): Promise<number> {
    const db = this.#db
    const before = options.before ?? Infinity
    let done = 0
    for (;;) {
      const step = await db.transaction(async (tx) => {
        await lockStats(db, tx)
        const meta = await tx.get<{ rebuild_from: number | null; version: number; last: number | null }>(
          'SELECT rebuild_from, version, (SELECT MAX(start_ms) FROM stats_sessions) AS last FROM stats_meta WHERE id = 1')
        if (meta?.rebuild_from === null || meta?.rebuild_from === undefined) return null
        let week = Number(meta.rebuild_from)
        if (week >= before) return null
        // Another import marked an earlier week, or API ingestion changed some client's history,
        // since the last step: what was carried may be out of date.
        if (this.#expected !== null && (week !== this.#expected.week || Number(meta.version) !== this.#expected.version)) this.#lastHours.clear()
        const last = Number(meta.last ?? week)
        const started = performance.now()
        let weeks = 0
        let newClients = 0
        let next: number
        do {
          newClients += await rebuildWeek(tx, db.engine, week, this.#lastHours)
          weeks++
          next = week + WEEK
          week = next
        } while (next <= last && next < before && performance.now() - started < STEP_MS)
        await tx.run('UPDATE stats_meta SET rebuild_from = $1 WHERE id = 1', [next > last ? null : next])
        await bumpVersion(tx, newClients)
        return { next, version: Number(meta.version) + 1, weeks, remaining: Math.max(0, Math.ceil((last + 1 - next) / WEEK)) }
      })
      if (step === null) return done
      this.#expected = { week: step.next, version: step.version }
      done += step.weeks
      options.onWeek?.(done, done + step.remaining)
    }
  }
}

/** Recomputes the rollups of every pending week. */
export function rebuildPending(db: Database, onWeek?: (done: number, total: number) => void): Promise<number> {
  return new WeekRebuilder(db).run({ onWeek })
}
