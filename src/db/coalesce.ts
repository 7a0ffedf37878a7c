/**
 * Coalescing of concurrent calls. Under load, many requests ask the database the same kind of
 * question within one event-loop turn; sent together they cost one statement instead of one
 * per request: on PostgreSQL one round trip (the client's and the server's per-query work is
 * most of a point lookup's cost), on SQLite one commit for many inserts (a commit writes
 * WAL frames; the insert itself is a few microseconds). And the requests then finish
 * together, which makes the event loop's and the sockets' work per request smaller too.
 *
 * Nothing is delayed beyond the current turn: the batch is sent from setImmediate, right
 * after the I/O callbacks that queued it, so a lone request waits for nothing. With
 * `inFlight`, calls arriving while that many batches run wait for one of them to finish and
 * then go together (group commit): under load the batches grow instead of the round trips
 * multiplying, which is what a database server on the same small machine needs (on 2 cores,
 * each PostgreSQL round trip costs ~60 µs of its CPU on top of the rows' work).
 */
import { isStorableKey } from '../lib/storable-key.ts'
import type { Database, Executor } from './engine.ts'

export interface CoalesceOptions {
  /** A batch reaching this size is sent at once. */
  max?: number
  /** Batches running at once (default: no limit). */
  inFlight?: number
}

interface Pending<I, O> { item: I; resolve(value: O): void; reject(err: unknown): void }

/**
 * `runBatch(items)` answers every item, in order; an Error in the answers rejects only its
 * item, a thrown error rejects them all.
 */
export function coalesce<I, O>(runBatch: (items: I[]) => Promise<(O | Error)[]>, options: CoalesceOptions = {}): (item: I) => Promise<O> {
  const max = options.max ?? 256
  const limit = options.inFlight ?? Infinity
  let queue: Pending<I, O>[] = []
  let scheduled = false
  let running = 0

  const schedule = () => {
    if (scheduled) return
    scheduled = true
    setImmediate(flush)
  }
  const finished = () => {
    running--
    if (queue.length > 0) schedule()
  }
  const flush = () => {
    scheduled = false
    if (queue.length === 0 || running >= limit) return
    let batch: Pending<I, O>[]
    if (queue.length > max) {
      batch = queue.splice(0, max)
      schedule()
    } else {
      batch = queue
      queue = []
    }
    running++
    runBatch(batch.map((p) => p.item)).finally(finished).then((answers) => {
      batch.forEach((p, i) => {
        const answer = answers[i]
        if (answer instanceof Error) p.reject(answer)
        else p.resolve(answer as O)
      })
    }, (err: unknown) => {
      for (const p of batch) p.reject(err)
    })
  }

  return (item) => new Promise<O>((resolve, reject) => {
    queue.push({ item, resolve, reject })
    if (queue.length >= max && running < limit) flush()
    else schedule()
  })
}

/** True for a whole database (not a transaction's executor): only those may coalesce. */
export function isDatabase(ex: Executor): ex is Database {
  return typeof (ex as Partial<Database>).transaction === 'function'
}

const lookups = new WeakMap<Executor, Map<string, (key: string) => Promise<unknown>>>()

/**
 * A point lookup by a unique text key. Concurrent lookups through the same database are
 * answered together: on PostgreSQL as one `sqlMany` (the keys as a text array in $1; it
 * returns the matching rows, `keyColumn` among their columns), on SQLite as `sqlOne` per key
 * (the key in $1). Inside a transaction, `sqlOne` runs at once.
 *
 * One caller's key must never fail another's lookup. So keys are checked before they join a
 * batch (a key no database could hold, such as one with NUL, which PostgreSQL refuses in
 * text, matches nothing and never reaches the database), and a batch that fails anyway is
 * retried key by key, so only the key at fault gets the error.
 *
 * On SQLite the gain is not the database's: the requests of one turn get their answers, and
 * write their responses, together, so the event loop and the sockets work in bulk instead of
 * one request per wake-up (transaction_details measured 181 -> 90 µs CPU per request).
 *
 * `options` (read when the statement is first used) as for coalesce: `inFlight` makes the keys
 * that arrive while a batch runs wait for it and go together, for lookups polled so often that
 * their requests arrive a few per event-loop turn (transaction_details).
 */
export function lookupByKey<T>(ex: Executor, sqlOne: string, sqlMany: string, keyColumn: string, key: string,
  options: CoalesceOptions = {}): Promise<T | undefined> {
  if (!isStorableKey(key)) return Promise.resolve(undefined)
  if (!isDatabase(ex)) return ex.get<T>(sqlOne, [key])
  let byStatement = lookups.get(ex)
  if (byStatement === undefined) lookups.set(ex, byStatement = new Map())
  let lookup = byStatement.get(sqlMany)
  if (lookup === undefined) {
    const one = (k: string) => ex.get(sqlOne, [k]).catch((err: unknown) => (err instanceof Error ? err : new Error(String(err))))
    lookup = coalesce<string, unknown>(async (keys) => {
      // In process, a lookup by primary key costs microseconds: one statement per key.
      if (ex.engine === 'sqlite' || keys.length === 1) return Promise.all(keys.map(one))
      let rows: Record<string, unknown>[]
      try {
        rows = await ex.all<Record<string, unknown>>(sqlMany, [[...new Set(keys)]])
      } catch {
        return Promise.all(keys.map(one))
      }
      const byKey = new Map(rows.map((row) => [row[keyColumn] as string, row]))
      return keys.map((k) => byKey.get(k))
    }, options)
    byStatement.set(sqlMany, lookup)
  }
  return lookup(key) as Promise<T | undefined>
}
