/**
 * One week's usage as the rollups need it: per network, the sessions and bytes of each hour
 * and each client's active hours. Read from the stored sessions, or collected from the rows
 * of an import as it stores them (so that a week the import alone filled need not be read back).
 */
import type { Executor } from '../db/engine.ts'
import type { Network } from './schemas.ts'
import { bucketStart, HOUR, WEEK } from './time.ts'

export interface HourSums { sessions: number; bytes: number }

export interface NetworkActivity {
  /** Sessions and bytes by hour index (hours since the epoch). */
  hours: Map<number, HourSums>
  /** Each client's active hours: ascending and distinct once `finish` has run. */
  clients: Map<string, number[]>
}

export class WeekActivity {
  readonly gateway: NetworkActivity = { hours: new Map(), clients: new Map() }
  readonly wifi: NetworkActivity = { hours: new Map(), clients: new Map() }
  #inOrder = true
  /** Client-hours held (memory bound of collecting). */
  size = 0

  of(network: Network): NetworkActivity {
    return network === 'wifi' ? this.wifi : this.gateway
  }

  add(network: Network, client: string, start: number, bytes: number): void {
    const activity = network === 'wifi' ? this.wifi : this.gateway
    const hour = Math.floor(start / HOUR)
    const sums = activity.hours.get(hour)
    if (sums === undefined) activity.hours.set(hour, { sessions: 1, bytes })
    else {
      sums.sessions++
      sums.bytes += bytes
    }
    const list = activity.clients.get(client)
    if (list === undefined) {
      activity.clients.set(client, [hour])
      this.size++
      return
    }
    const last = list[list.length - 1]!
    if (last === hour) return
    if (hour < last) this.#inOrder = false
    list.push(hour)
    this.size++
  }

  /** Sorts and de-duplicates the hour lists when sessions came out of order. */
  finish(): this {
    if (this.#inOrder) return this
    for (const activity of [this.gateway, this.wifi]) {
      for (const [client, list] of activity.clients) activity.clients.set(client, [...new Set(list)].sort((a, b) => a - b))
    }
    this.#inOrder = true
    return this
  }
}

/** The week's activity from the stored sessions (read in key order, so the hour lists need no sorting). */
export async function readWeek(ex: Executor, week: number): Promise<WeekActivity> {
  const activity = new WeekActivity()
  const rows = await ex.all<{ network: Network; client_hash: string; start_ms: number; bytes: number }>(
    'SELECT network, client_hash, start_ms, bytes_up + bytes_down AS bytes FROM stats_sessions WHERE start_ms >= $1 AND start_ms < $2 ORDER BY start_ms',
    [week, week + WEEK])
  for (const r of rows) activity.add(r.network, r.client_hash, Number(r.start_ms), Number(r.bytes))
  return activity.finish()
}

/** Most client-hours an import holds in memory before it reads weeks back instead. */
const COLLECT_LIMIT = 4_000_000

/**
 * The activity of the weeks an import is filling, collected from the rows it stores. A week
 * is only served from here while everything stored in it came through here: not when it held
 * sessions before the import (`freshAfter`), when some row was already stored (a re-run), after
 * it was served once (later rows make it stale), or after anyone else changed the statistics.
 */
export class CollectedWeeks {
  readonly #weeks = new Map<number, WeekActivity | null>()
  readonly #freshAfter: number
  #size = 0
  #enabled = true

  /** `lastStored`: the latest session start stored before the import (null: none). */
  constructor(lastStored: number | null) {
    this.#freshAfter = lastStored === null ? -Infinity : bucketStart(lastStored, WEEK)
  }

  /** Rows as stored by the import ([start_ms, session_id, network, node_uid, client_hash, end_ms, bytes_up, bytes_down]); `allNew`: every one of them was new. */
  add(rows: readonly (readonly unknown[])[], allNew: boolean): void {
    if (!this.#enabled) return
    for (const row of rows) {
      const start = row[0] as number
      const week = bucketStart(start, WEEK)
      let activity = this.#weeks.get(week)
      if (activity === null) continue
      if (!allNew || week <= this.#freshAfter) {
        this.#drop(week)
        continue
      }
      if (activity === undefined) this.#weeks.set(week, activity = new WeekActivity())
      this.#size -= activity.size
      activity.add(row[2] as Network, row[4] as string, start, (row[6] as number) + (row[7] as number))
      this.#size += activity.size
    }
    if (this.#size > COLLECT_LIMIT) this.disable()
  }

  /** The week's activity if it is complete here; the week is read back from then on. */
  take(week: number): WeekActivity | undefined {
    const activity = this.#weeks.get(week)
    if (!this.#enabled || activity === null || activity === undefined) return undefined
    this.#drop(week)
    return activity.finish()
  }

  /** From now on every week is read back. */
  disable(): void {
    this.#enabled = false
    this.#weeks.clear()
    this.#size = 0
  }

  #drop(week: number): void {
    this.#size -= this.#weeks.get(week)?.size ?? 0
    this.#weeks.set(week, null)
  }
}
