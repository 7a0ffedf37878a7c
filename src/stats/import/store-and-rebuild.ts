/**
 * Bulk loading for `kns stats import`: raw sessions stored in batches, each batch marking the
 * first week whose rollups must be recomputed (stats_meta.rebuild_from); the rollups of every
 * week from that one on are then recomputed whole, a few weeks per transaction.
 *
 * Per session this is one insert, instead of the per-client history reads and writes of every
 * API batch. While the file comes in time order, the weeks it has gone past are recomputed as
 * it goes, from the rows kept in memory (week-activity.ts) rather than read back; anything
 * else (a file out of order, a re-run, sessions stored before, other writers) falls back to
 * reading the week's sessions. Each transaction leaves the statistics consistent for every
 * week before rebuild_from, so an interrupted import resumes where it stopped (the next
 * import, or the same one run again, finishes it). API ingestion can go on meanwhile: weeks not
 * yet recomputed are recomputed with its sessions.
 */
import type { Database, Executor } from '../../db/engine.ts'
import { withLength } from '../../lib/typed-arrays.ts'
import { OUT_OF_RANGE_MESSAGE, refusingOverflow } from '../rollups/bucket-bytes.ts'
import { ValueOutOfRangeError } from '../../errors.ts'
import { ClientNumbers } from '../rollups/client-numbers.ts'
import { bumpVersion, lockRollups, lockSessions, sessionRows } from '../ingest/ingest.ts'
import { storeRawRows } from './raw-sessions.ts'
import type { RawBatch } from './session-batches.ts'
import { bucketStart, WEEK } from '../time.ts'
import type { Session } from '../ingest/validate-session.ts'
import { CollectedWeeks, readWeek } from '../rollups/week-activity.ts'
import { LastHours, rebuildWeek } from '../rollups/rebuild-week.ts'

/**
 * A recomputation transaction goes on with the next week until it has run this long: fewer
 * commits, and short enough that API ingestion waiting for the lock is not held up for long.
 */
const STEP_MS = 1000

export class BulkImport {
  readonly #db: Database
  /** Each client's last active hour, carried from week to week (bounded by the number of clients). */
  readonly #lastHours = new LastHours()
  /** The clients met by this import, numbered; and the number of each client the reader thread numbered. */
  readonly #numbers = new ClientNumbers()
  #fromReader = new Int32Array(1024)
  /** Rows kept for the weeks being filled; null until begin(). */
  #collected: CollectedWeeks | null = null
  /** stats_meta.version as this import left it: any other value means someone else wrote. */
  #version: number | null = null
  /** The rebuild mark as this import left it. */
  #nextWeek: number | null = null
  /** Each (network, week)'s stored byte total as far as this import knows it (see #checkWeekTotals). */
  readonly #weekBytes = new Map<string, bigint>()
  /** Weeks recomputed from rows kept in memory, and from sessions read back. */
  readonly weeks = { fromMemory: 0, readBack: 0 }

  constructor(db: Database) {
    this.#db = db
  }

  /** Starts keeping stored rows in memory, for the weeks nothing else has written to. */
  async begin(): Promise<void> {
    const meta = await this.#db.get<{ version: number; last: number | null }>('SELECT version, (SELECT MAX(start_ms) FROM stats_sessions) AS last FROM stats_meta WHERE id = 1')
    this.#version = Number(meta!.version)
    this.#collected = new CollectedWeeks(meta!.last === null ? null : Number(meta!.last))
  }

  /**
   * Stores the rows of a batch (see session-batches.ts) not stored yet, and marks their weeks.
   * Returns how many were new. Takes only the sessions lock: on PostgreSQL it runs beside a
   * recomputation on another connection, until the mark waits for that one's commit.
   */
  async store(batch: Pick<RawBatch, 'rows' | 'starts' | 'first' | 'copy'>): Promise<number> {
    const starts = batch.starts ?? Float64Array.from(batch.rows, (row) => row[0] as number)
    if (starts.length === 0) return 0
    return this.#db.transaction(async (tx) => {
      await lockSessions(this.#db, tx)
      await relaxDurability(tx)
      const totals = await this.#checkWeekTotals(tx, batch)
      const { inserted, first } = await storeRawRows(tx, batch)
      for (const [key, total] of totals) this.#weekBytes.set(key, total)
      if (inserted > 0) {
        await tx.run('UPDATE stats_meta SET rebuild_from = CASE WHEN rebuild_from IS NULL OR rebuild_from > $1 THEN $1 ELSE rebuild_from END WHERE id = 1',
          [bucketStart(first, WEEK)])
      }
      await this.#bump(tx, 0)
      this.#collected?.stored(starts, inserted === starts.length)
      return inserted
    })
  }

  /**
   * Refuses a batch (nothing stored, no week marked) that would carry a (network, week) past
   * 2^63 - 1 bytes: the week's rollup could never be totalled, and a marked week that cannot
   * be recomputed would stop every later import there. The week total is the largest of its
   * buckets (hours and days add up to it). Known totals are read once per week this import
   * touches (exactly: NUMERIC on PostgreSQL; SQLite's SUM raises on overflow) and kept up to
   * date in memory. A session stored already and sent again is counted again: the check errs
   * on the side of refusing, and only near 2^63.
   */
  async #checkWeekTotals(tx: Executor, batch: Pick<RawBatch, 'rows' | 'copy'>): Promise<Map<string, bigint>> {
    const added = weekByteSums(batch)
    const totals = new Map<string, bigint>()
    for (const [key, bytes] of added) {
      const known = this.#weekBytes.get(key) ?? await storedWeekBytes(tx, key)
      const total = known + bytes
      if (total > INT64_MAX) {
        throw new ValueOutOfRangeError(`${OUT_OF_RANGE_MESSAGE} (the import stopped before the week of ${new Date(Number(key.split('|')[1])).toISOString().slice(0, 10)}; the weeks stored before it are kept)`)
      }
      totals.set(key, total)
    }
    return totals
  }

  /**
   * What the reader thread sent with a batch: the hashes of the clients it numbered since the
   * last batch, the weeks it finished collecting (see CollectedWeeks), and whether it stopped.
   */
  offer(batch: Pick<RawBatch, 'newClients' | 'finished' | 'stopCollecting'>): void {
    if (batch.newClients !== undefined) {
      const { first, hashes } = batch.newClients
      this.#fromReader = withLength(this.#fromReader, first + hashes.length)
      for (let i = 0; i < hashes.length; i++) this.#fromReader[first + i] = this.#numbers.numberOf(hashes[i]!)
    }
    if (batch.stopCollecting === true) this.#collected?.disable()
    for (const [week, activity] of batch.finished ?? []) {
      // The reader's numbers -> this import's (which also numbers clients met in weeks read back).
      for (const network of [activity.gateway, activity.wifi]) {
        const clients = network.clients
        for (let i = 0; i < clients.length; i++) clients[i] = this.#fromReader[clients[i]!]!
      }
      this.#collected?.offer(week, activity)
    }
  }

  /**
   * Recomputes the pending weeks that start before `before` (all of them when omitted).
   * `onWeek` reports progress (weeks done, weeks to do). Returns the number of weeks done.
   */
  async rebuild(options: { before?: number; onWeek?: (done: number, total: number) => void } = {}): Promise<number> {
    const before = options.before ?? Infinity
    let done = 0
    for (;;) {
      const step = await this.#db.transaction(async (tx) => {
        await this.#start(tx)
        const meta = await tx.get<{ rebuild_from: number | null; last: number | null }>(
          'SELECT rebuild_from, (SELECT MAX(start_ms) FROM stats_sessions) AS last FROM stats_meta WHERE id = 1')
        if (meta?.rebuild_from === null || meta?.rebuild_from === undefined) return null
        let week = Number(meta.rebuild_from)
        if (week >= before) return null
        // The mark moved back (sessions for weeks already done): the hours carried are ahead of it.
        if (this.#nextWeek !== null && week !== this.#nextWeek) this.#lastHours.clear()
        const last = Number(meta.last ?? week)
        const started = performance.now()
        let weeks = 0
        let newClients = 0
        do {
          let activity = this.#collected?.take(week)
          if (activity !== undefined) this.weeks.fromMemory++
          else {
            activity = await readWeek(tx, week, this.#numbers)
            this.weeks.readBack++
          }
          const weekActivity = activity
          newClients += await refusingOverflow(() => rebuildWeek(tx, week, weekActivity, this.#lastHours, this.#numbers))
          weeks++
          week += WEEK
        } while (week <= last && week < before && performance.now() - started < STEP_MS)
        await tx.run('UPDATE stats_meta SET rebuild_from = $1 WHERE id = 1', [week > last ? null : week])
        await this.#bump(tx, newClients)
        return { next: week, weeks, remaining: Math.max(0, Math.ceil((last + 1 - week) / WEEK)) }
      })
      if (step === null) return done
      this.#nextWeek = step.next
      done += step.weeks
      options.onWeek?.(done, done + step.remaining)
    }
  }

  /**
   * Takes the rollups lock and the stats_meta row (so a store in flight on another connection
   * has committed its mark and version first); when someone else changed the statistics
   * since, nothing kept in memory is trusted.
   */
  async #start(tx: Executor): Promise<void> {
    await lockRollups(this.#db, tx)
    await relaxDurability(tx)
    const row = await tx.get<{ version: number }>(`SELECT version FROM stats_meta WHERE id = 1${tx.engine === 'postgres' ? ' FOR UPDATE' : ''}`)
    this.#observe(Number(row!.version), false)
  }

  /** Bumps the version (ETags, cached answers). */
  async #bump(tx: Executor, newClients: number): Promise<void> {
    this.#observe(await bumpVersion(tx, newClients), true)
  }

  /**
   * A version read (`own` false) or just written by this import: anything but the last one it
   * saw (plus one for its own bump) means someone else wrote in between. Bumps are serialised
   * by the row lock, and each transaction of this import bumps once.
   */
  #observe(version: number, own: boolean): void {
    if (this.#version !== null && version !== this.#version + (own ? 1 : 0)) {
      this.#lastHours.clear()
      this.#collected?.disable()
    }
    this.#version = version
  }
}

const INT64_MAX = 2n ** 63n - 1n

/** Bytes per `network|week` of a batch's rows (or of its COPY text, PostgreSQL), exactly. */
export function weekByteSums(batch: Pick<RawBatch, 'rows' | 'copy'>): Map<string, bigint> {
  // Added as doubles (exact while under 2^53, the usual case by far); a key past that is added
  // again in BigInt, so the answer is exact either way without a BigInt per row.
  const quick = new Map<string, number>()
  const each = (visit: (start: number, network: string, up: string | number, down: string | number) => void) => {
    if (batch.rows.length > 0) {
      for (const row of batch.rows) visit(row[0] as number, row[2] as string, row[6] as number, row[7] as number)
    } else if (batch.copy !== undefined) {
      // COPY text: one line per row, columns by tab, in SESSION_COLUMNS order (an escaped tab is a backslash and t, never a tab).
      for (const line of batch.copy.split('\n')) {
        if (line === '') continue
        const cols = line.split('\t')
        visit(Number(cols[0]), cols[2]!, cols[6]!, cols[7]!)
      }
    }
  }
  const keyOf = (start: number, network: string) => `${network}|${bucketStart(start, WEEK)}`
  each((start, network, up, down) => {
    const key = keyOf(start, network)
    quick.set(key, (quick.get(key) ?? 0) + Number(up) + Number(down))
  })
  const sums = new Map<string, bigint>()
  const large = new Set<string>()
  for (const [key, sum] of quick) {
    if (Number.isSafeInteger(sum)) sums.set(key, BigInt(sum))
    else large.add(key)
  }
  if (large.size > 0) {
    each((start, network, up, down) => {
      const key = keyOf(start, network)
      if (large.has(key)) sums.set(key, (sums.get(key) ?? 0n) + BigInt(up) + BigInt(down))
    })
  }
  return sums
}

/** A (network, week)'s stored byte total, exactly. */
async function storedWeekBytes(tx: Executor, key: string): Promise<bigint> {
  const [network, week] = key.split('|') as [string, string]
  const params = [network, Number(week), Number(week) + WEEK]
  if (tx.engine === 'postgres') {
    const row = await tx.get<{ total: string | null }>('SELECT (SUM(bytes_up) + SUM(bytes_down))::text AS total FROM stats_sessions WHERE network = $1 AND start_ms >= $2 AND start_ms < $3', params)
    return BigInt(row?.total ?? 0)
  }
  try {
    const row = await tx.get<{ up: number | bigint | null; down: number | bigint | null }>(
      'SELECT SUM(bytes_up) AS up, SUM(bytes_down) AS down FROM stats_sessions WHERE network = $1 AND start_ms >= $2 AND start_ms < $3', params)
    return BigInt(row?.up ?? 0) + BigInt(row?.down ?? 0)
  } catch (err) {
    // SQLite's SUM raises "integer overflow" past 2^63 - 1: the week is past the limit already.
    if (err instanceof Error && /integer overflow/.test(err.message)) return INT64_MAX + 1n
    throw err
  }
}

/** The import's transactions need not wait for the disk: a crash loses at most the last few, and the import run again stores them (see docs/design/import.md). */
async function relaxDurability(tx: Executor): Promise<void> {
  if (tx.engine === 'postgres') await tx.run('SET LOCAL synchronous_commit TO OFF')
}

/** Stores the sessions not stored yet, and marks their weeks for recomputation. Returns how many were new. */
export async function insertRawSessions(db: Database, hashClient: (clientId: string) => string, sessions: readonly Session[]): Promise<number> {
  const rows = sessionRows(hashClient, sessions)
  return new BulkImport(db).store({ rows, first: sessions.reduce((m, s) => Math.min(m, s.start), Infinity) })
}

/** Recomputes the rollups of every pending week. */
export function rebuildPending(db: Database, onWeek?: (done: number, total: number) => void): Promise<number> {
  return new BulkImport(db).rebuild({ onWeek })
}
