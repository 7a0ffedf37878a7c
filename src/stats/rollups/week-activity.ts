/**
 * One week's usage as the rollups need it: per network, the sessions and bytes of each hour
 * and each client's active hours. Read from the stored sessions, or collected by an import's
 * reader thread from the rows it produces (so that a week the import alone filled need not be
 * read back, and the importing thread is spared a map lookup per session).
 *
 * A finished week is plain data (a map and typed arrays) that crosses threads by structured
 * clone: clients as numbers (client-numbers.ts) sorted by hash (the order of the rollup tables'
 * keys), their hours packed into one Int32Array.
 */
import type { Executor } from '../../db/engine.ts'
import { addExact, type ExactSum } from '../../lib/exact-sum.ts'
import { withLength } from '../../lib/typed-arrays.ts'
import type { ClientNumbers } from './client-numbers.ts'
import type { Network } from '../../contract/stats-schemas.ts'
import { bucketStart, HOUR, WEEK } from '../time.ts'

export interface HourSums { sessions: number; bytes: ExactSum }

export interface NetworkActivity {
  /** Sessions and bytes by hour index (hours since the epoch). */
  sums: Map<number, HourSums>
  /** The clients active in the week, as numbers (client-numbers.ts), in ascending order of their hashes. */
  clients: Int32Array
  /** Client i's active hours (ascending, distinct) are activeHours[offsets[i]] .. activeHours[offsets[i + 1] - 1]. */
  offsets: Int32Array
  activeHours: Int32Array
}

export type WeekActivity = Record<Network, NetworkActivity>

class NetworkBuilder {
  readonly sums = new Map<number, HourSums>()
  /** Per client number: 1 + its index in `members` (0: not active in the week yet). */
  #slots = new Int32Array(1024)
  readonly #members: number[] = []
  readonly #hours: number[][] = []
  #inOrder = true

  /** Returns whether the client-hour is new. */
  add(client: number, hour: number, bytes: number): boolean {
    const sums = this.sums.get(hour)
    if (sums === undefined) this.sums.set(hour, { sessions: 1, bytes })
    else {
      sums.sessions++
      sums.bytes = addExact(sums.bytes, bytes)
    }
    this.#slots = withLength(this.#slots, client + 1)
    const slot = this.#slots[client]!
    if (slot === 0) {
      this.#members.push(client)
      this.#hours.push([hour])
      this.#slots[client] = this.#members.length
      return true
    }
    const list = this.#hours[slot - 1]!
    const last = list[list.length - 1]!
    if (last === hour) return false
    if (hour < last) this.#inOrder = false
    list.push(hour)
    return true
  }

  build(numbers: ClientNumbers): NetworkActivity {
    const clients = Int32Array.from(this.#members).sort(numbers.compare)
    const lists = Array.from(clients, (c) => {
      const list = this.#hours[this.#slots[c]! - 1]!
      return this.#inOrder ? list : [...new Set(list)].sort((a, b) => a - b)
    })
    const offsets = new Int32Array(clients.length + 1)
    for (let i = 0; i < lists.length; i++) offsets[i + 1] = offsets[i]! + lists[i]!.length
    const activeHours = new Int32Array(offsets[clients.length]!)
    for (let i = 0; i < lists.length; i++) activeHours.set(lists[i]!, offsets[i]!)
    return { sums: this.sums, clients, offsets, activeHours }
  }
}

/** Collects one week's sessions, in any order, by client number. */
export class WeekActivityBuilder {
  readonly #gateway = new NetworkBuilder()
  readonly #wifi = new NetworkBuilder()
  /** Client-hours held (memory bound of collecting). */
  size = 0

  add(network: Network, client: number, start: number, bytes: number): void {
    if ((network === 'wifi' ? this.#wifi : this.#gateway).add(client, Math.floor(start / HOUR), bytes)) this.size++
  }

  /** `numbers`: where the client numbers come from, for their order. */
  build(numbers: ClientNumbers): WeekActivity {
    return { gateway: this.#gateway.build(numbers), wifi: this.#wifi.build(numbers) }
  }
}

/** The week's activity from the stored sessions, its clients numbered by `numbers`. */
export async function readWeek(ex: Executor, week: number, numbers: ClientNumbers): Promise<WeekActivity> {
  const activity = new WeekActivityBuilder()
  const rows = await ex.all<{ network: Network; client_hash: string; start_ms: number; bytes: number }>(
    'SELECT network, client_hash, start_ms, bytes_up + bytes_down AS bytes FROM stats_sessions WHERE start_ms >= $1 AND start_ms < $2 ORDER BY start_ms',
    [week, week + WEEK])
  for (const r of rows) activity.add(r.network, numbers.numberOf(r.client_hash), Number(r.start_ms), Number(r.bytes))
  return activity.build(numbers)
}

/** Most client-hours an import's reader holds for the weeks it has not finished. */
const COLLECT_LIMIT = 4_000_000

/**
 * The reader thread's side: the activity of the rows it produces, by week, handed over once
 * the file has gone past the week. A row for a week already handed over is not collected:
 * the importing thread sees it stored and reads that week back (CollectedWeeks).
 */
export class WeekCollector {
  readonly #open = new Map<number, WeekActivityBuilder>()
  readonly #handedOver = new Set<number>()
  #size = 0
  #enabled = true

  get enabled(): boolean {
    return this.#enabled
  }

  /**
   * Rows as produced for stats_sessions ([start_ms, session_id, network, node_uid, client_hash,
   * end_ms, bytes_up, bytes_down]) and the number of each row's client in `numbers`.
   */
  add(rows: readonly (readonly unknown[])[], clients: ArrayLike<number>): void {
    if (!this.#enabled) return
    for (let i = 0; i < rows.length; i++) {
      const row = rows[i]!
      const start = row[0] as number
      const week = bucketStart(start, WEEK)
      let activity = this.#open.get(week)
      if (activity === undefined) {
        if (this.#handedOver.has(week)) continue
        this.#open.set(week, activity = new WeekActivityBuilder())
      }
      this.#size -= activity.size
      activity.add(row[2] as Network, clients[i]!, start, (row[6] as number) + (row[7] as number))
      this.#size += activity.size
    }
    if (this.#size > COLLECT_LIMIT) this.stop()
  }

  /** Collects nothing more (the weeks not handed over yet are read back). */
  stop(): void {
    this.#enabled = false
    this.#open.clear()
  }

  /** The weeks before `week` (all of them when omitted), finished and handed over. */
  finishBefore(numbers: ClientNumbers, week = Infinity): [number, WeekActivity][] {
    const done: [number, WeekActivity][] = []
    for (const [w, builder] of this.#open) {
      if (w >= week) continue
      this.#open.delete(w)
      this.#size -= builder.size
      this.#handedOver.add(w)
      done.push([w, builder.build(numbers)])
    }
    return done
  }
}

/**
 * The importing thread's side: the weeks the reader handed over, served to the recomputation
 * only while everything stored in them came through the reader: not when the week held
 * sessions before the import (`freshAfter`), when a batch touching it had a row stored already
 * (a re-run), when a row for it was stored after the hand-over (a file out of order), after it
 * was served once, or after anyone else changed the statistics.
 */
export class CollectedWeeks {
  readonly #weeks = new Map<number, WeekActivity | null>()
  readonly #freshAfter: number
  #enabled = true

  /** `lastStored`: the latest session start stored before the import (null: none). */
  constructor(lastStored: number | null) {
    this.#freshAfter = lastStored === null ? -Infinity : bucketStart(lastStored, WEEK)
  }

  /** A batch of sessions starting at `starts` was stored; `allNew`: every one of them was new. */
  stored(starts: ArrayLike<number>, allNew: boolean): void {
    if (!this.#enabled) return
    let previous = NaN
    for (let i = 0; i < starts.length; i++) {
      const week = bucketStart(starts[i]!, WEEK)
      if (week === previous) continue
      previous = week
      const state = this.#weeks.get(week)
      // Rows for a week already handed over make it stale; rows not new make it unknown.
      if (state === null || (state === undefined && allNew && week > this.#freshAfter)) continue
      this.#weeks.set(week, null)
    }
  }

  /** A finished week from the reader. */
  offer(week: number, activity: WeekActivity): void {
    if (!this.#enabled || week <= this.#freshAfter) return
    this.#weeks.set(week, this.#weeks.has(week) ? null : activity)
  }

  /** The week's activity if it is complete here; the week is read back from then on. */
  take(week: number): WeekActivity | undefined {
    const activity = this.#weeks.get(week)
    if (!this.#enabled || activity === null || activity === undefined) return undefined
    this.#weeks.set(week, null)
    return activity
  }

  /** From now on every week is read back. */
  disable(): void {
    this.#enabled = false
    this.#weeks.clear()
  }
}
