/**
 * `kns stats import`: files of any size, streamed in batches, each batch one transaction.
 * Sessions go in raw and their weeks' rollups are then recomputed (bulk-import.ts); nodes are
 * upserts. Sessions are idempotent, so an interrupted import is simply run again: what was
 * stored is recognised, nothing counts twice, and unfinished rollups are finished.
 */
import { statSync } from 'node:fs'
import { Compile } from 'typebox/compile'
import type { Database } from '../db/engine.ts'
import { ValidationError } from '../errors.ts'
import { readRecords, type FileRecord } from './file-records.ts'
import { insertRawBatch, rebuildPending } from './bulk-import.ts'
import { IMPORT_BATCH, sessionBatches } from './session-batches.ts'
import { upsertGateways, upsertWifiNodes } from './ingest.ts'
import { createProgress } from './progress.ts'
import { Gateway, WifiNode } from './schemas.ts'

export { IMPORT_BATCH } from './session-batches.ts'
const REPORTED = 20

function rejectLines(path: string, bad: { line: number; reason: string }[]): never {
  const list = bad.slice(0, REPORTED).map((b) => `  line ${b.line}: ${b.reason}`).join('\n')
  const more = bad.length > REPORTED ? `\n  ... and ${bad.length - REPORTED} more` : ''
  throw new ValidationError(`${path}: ${bad.length} invalid record${bad.length === 1 ? '' : 's'} in a batch; that batch was not stored ` +
    `(earlier batches were; fix the file and run the import again)\n${list}${more}`)
}

export interface UsageImport { read: number; inserted: number; duplicates: number; seconds: number }

/** Page cache of the importing connection (KiB): the rollup tables' pages stay in memory between weeks. */
const IMPORT_CACHE_KIB = 262_144

export async function importUsage(db: Database, hashClient: (id: string) => string, path: string, now = Date.now()): Promise<UsageImport> {
  const progress = createProgress('usage', statSync(path).size)
  const started = performance.now()
  if (db.engine === 'sqlite') await db.exec(`PRAGMA cache_size = -${IMPORT_CACHE_KIB}`)
  let read = 0
  let inserted = 0
  try {
    for await (const batch of sessionBatches(path, hashClient, now)) {
      if (batch.bad.length > 0) rejectLines(path, batch.bad)
      inserted += await insertRawBatch(db, batch)
      read = batch.read
      progress.update(batch.bytes, read)
    }
  } finally {
    progress.done()
  }
  // The week queries below read the sessions by time: planned from statistics that may still
  // describe an empty table, they would scan it whole.
  if (db.engine === 'postgres' && inserted > 0) await db.exec('ANALYZE stats_sessions')
  // Also when nothing was new: finishes what an interrupted import left.
  const weeks = createProgress('rollups', 1)
  try {
    await rebuildPending(db, (done, total) => weeks.update(done / Math.max(total, 1), done))
  } finally {
    weeks.done()
  }
  return { read, inserted, duplicates: read - inserted, seconds: (performance.now() - started) / 1000 }
}

const checkers = { gateways: Compile(Gateway), 'wifi-nodes': Compile(WifiNode) }

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
