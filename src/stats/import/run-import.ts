/**
 * `kns stats import`: files of any size, streamed in batches, each batch one transaction.
 * Sessions go in raw and their weeks' rollups are then recomputed (store-and-rebuild.ts); nodes are
 * upserts. Sessions are idempotent, so an interrupted import is simply run again: what was
 * stored is recognised, nothing counts twice, and unfinished rollups are finished.
 */
import { statSync } from 'node:fs'
import { Compile } from 'typebox/compile'
import type { Database } from '../../db/engine.ts'
import { ValidationError, ValueOutOfRangeError } from '../../errors.ts'
import { readRecords, type FileRecord } from './file-records.ts'
import { BulkImport } from './store-and-rebuild.ts'
import { IMPORT_BATCH } from './session-batches.ts'
import { bucketStart, WEEK } from '../time.ts'
import { workerBatches } from './reader-batches.ts'
import { upsertGateways, upsertWifiNodes } from '../ingest/ingest.ts'
import { createProgress } from './progress.ts'
import type { Gateway, WifiNode } from '../../contract/stats-schemas.ts'
import { IMPORT_FILES } from './import-files.ts'

export { IMPORT_BATCH } from './session-batches.ts'
const REPORTED = 20

function rejectLines(path: string, bad: { line: number; reason: string }[]): never {
  const list = bad.slice(0, REPORTED).map((b) => `  line ${b.line}: ${b.reason}`).join('\n')
  const more = bad.length > REPORTED ? `\n  ... and ${bad.length - REPORTED} more` : ''
  throw new ValidationError(`${path}: ${bad.length} invalid record${bad.length === 1 ? '' : 's'} in a batch; that batch was not stored ` +
    `(earlier batches were; fix the file and run the import again)\n${list}${more}`)
}

export interface UsageImport {
  read: number
  inserted: number
  duplicates: number
  seconds: number
  /** Weeks whose rollups were recomputed from the rows in memory, and from sessions read back. */
  weeks: { fromMemory: number; readBack: number }
}

/** Page cache of the importing connection (KiB): the rollup tables' pages stay in memory between weeks. */
const IMPORT_CACHE_KIB = 262_144
/** Pages of write-ahead log between checkpoints of the importing connection (80 MB; SQLite's default is 1000). */
const IMPORT_CHECKPOINT_PAGES = 20_000

/** `clientLimit`: clients the reader numbers at most (tests lower it to reach the fallback). */
export async function importUsage(db: Database, secret: Buffer, path: string, options: { now?: number; batchSize?: number; clientLimit?: number } = {}): Promise<UsageImport> {
  const progress = createProgress('usage', statSync(path).size)
  const started = performance.now()
  // A larger write-ahead log between checkpoints: pages the import rewrites (rollups, index
  // pages being filled) are copied back to the database once rather than at every 4 MB.
  // Statement journals in memory: every multi-row insert in a transaction keeps one (to undo
  // itself alone), and in a file they cost a write per page touched (rollup inserts took 2x).
  if (db.engine === 'sqlite') {
    await db.exec(`PRAGMA cache_size = -${IMPORT_CACHE_KIB}; PRAGMA wal_autocheckpoint = ${IMPORT_CHECKPOINT_PAGES}; PRAGMA temp_store = MEMORY`)
  }
  const bulk = new BulkImport(db)
  await bulk.begin()
  let read = 0
  let inserted = 0
  // The weeks before this point have all their sessions, as long as the file is in time order.
  let completeBefore: number | null = -Infinity
  // PostgreSQL plans from table statistics (the week reads, a week's deletes and client
  // lookups): refreshed as the tables grow, or an index probe becomes a scan of a table
  // the planner still believes empty.
  let analyzedAt = 0
  const analyze = async () => {
    if (db.engine !== 'postgres' || inserted < 2 * analyzedAt || inserted === 0) return
    await db.exec('ANALYZE stats_sessions, stats_buckets, stats_bucket_clients, stats_client_weeks, stats_network_clients, stats_clients')
    analyzedAt = Math.max(inserted, 50_000)
  }
  // The recomputation of the weeks the file has gone past runs while the next batches are
  // stored (on PostgreSQL over two connections; on SQLite they take turns); one at a time.
  let recomputing: Promise<unknown> | undefined
  const settle = async () => {
    const pending = recomputing
    recomputing = undefined
    await pending
  }
  try {
    for await (const batch of workerBatches(path, secret, options.now ?? Date.now(), { size: options.batchSize, copyText: db.engine === 'postgres', clientLimit: options.clientLimit })) {
      if (batch.bad.length > 0) rejectLines(path, batch.bad)
      inserted += await bulk.store(batch)
      bulk.offer(batch)
      read = batch.read
      progress.update(batch.bytes, read)
      // A file in time order (the usual export): recompute the weeks it has gone past now,
      // while the reader thread parses what follows, instead of all of them at the end. Once
      // a batch reaches back before that point the file is not in order: the rest waits.
      if (batch.first === Infinity || completeBefore === null) continue
      const week = bucketStart(batch.first, WEEK)
      if (week < completeBefore) completeBefore = null
      else if (week > completeBefore) {
        await settle()
        await analyze()
        completeBefore = week
        recomputing = bulk.rebuild({ before: week })
        // Its failure surfaces at the next settle(); until then it must not count as unhandled.
        recomputing.catch(() => {})
      }
    }
    await settle()
  } catch (err) {
    // A week that could not be totalled stopped the import before anything of it was stored:
    // the weeks stored before it are recomputed, so nothing is left marked for a later import to trip on.
    if (err instanceof ValueOutOfRangeError) {
      await recomputing?.catch(() => {})
      recomputing = undefined
      await bulk.rebuild()
    }
    throw err
  } finally {
    // On an error, what is still running finishes (or fails) before the error is reported.
    await recomputing?.catch(() => {})
    progress.done()
  }
  await analyze()
  // Also when nothing was new: finishes what an interrupted import left.
  const weeks = createProgress('rollups', 1)
  try {
    await bulk.rebuild({ onWeek: (done, total) => weeks.update(done / Math.max(total, 1), done) })
  } finally {
    weeks.done()
  }
  return { read, inserted, duplicates: read - inserted, seconds: (performance.now() - started) / 1000, weeks: { ...bulk.weeks } }
}

const checkers = { gateways: Compile(IMPORT_FILES.gateways), 'wifi-nodes': Compile(IMPORT_FILES['wifi-nodes']) }

export async function importNodes(db: Database, kind: 'gateways' | 'wifi-nodes', path: string): Promise<{ read: number; upserted: number }> {
  const checker = checkers[kind]
  let read = 0
  let upserted = 0
  let batch: unknown[] = []
  const bad: { line: number; reason: string }[] = []
  const flush = async () => {
    if (bad.length > 0) rejectLines(path, bad)
    if (batch.length === 0) return
    upserted += kind === 'gateways' ? await upsertGateways(db, batch as Gateway[]) : await upsertWifiNodes(db, batch as WifiNode[])
    batch = []
  }
  for await (const records of readRecords(path)) {
    for (const { value, line } of records as FileRecord[]) {
      read++
      if (checker.Check(value)) batch.push(value)
      else {
        const first = checker.Errors(value)[0]
        bad.push({ line, reason: first === undefined ? 'not valid JSON' : `${first.instancePath.replace(/^\//, '') || 'record'} ${first.message}` })
      }
      if (batch.length + bad.length >= IMPORT_BATCH) await flush()
    }
  }
  await flush()
  return { read, upserted }
}
