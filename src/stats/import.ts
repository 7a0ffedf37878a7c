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
import { insertRawSessions, rebuildPending } from './bulk-import.ts'
import { upsertGateways, upsertWifiNodes } from './ingest.ts'
import { createProgress } from './progress.ts'
import { Gateway, WifiNode } from './schemas.ts'
import { checkSession, type Session } from './validate-session.ts'

/** Sessions per transaction: large enough to amortise commits, small enough to not hold the write lock long. */
export const IMPORT_BATCH = 10_000
const REPORTED = 20

function rejectLines(path: string, bad: { line: number; reason: string }[]): never {
  const list = bad.slice(0, REPORTED).map((b) => `  line ${b.line}: ${b.reason}`).join('\n')
  const more = bad.length > REPORTED ? `\n  ... and ${bad.length - REPORTED} more` : ''
  throw new ValidationError(`${path}: ${bad.length} invalid record${bad.length === 1 ? '' : 's'} in a batch; that batch was not stored ` +
    `(earlier batches were; fix the file and run the import again)\n${list}${more}`)
}

export interface UsageImport { read: number; inserted: number; duplicates: number; seconds: number }

export async function importUsage(db: Database, hashClient: (id: string) => string, path: string, now = Date.now()): Promise<UsageImport> {
  const progress = createProgress('usage', statSync(path).size)
  const started = performance.now()
  let bytes = 0
  let read = 0
  let inserted = 0
  let batch: Session[] = []
  const bad: { line: number; reason: string }[] = []
  const flush = async () => {
    if (bad.length > 0) rejectLines(path, bad)
    if (batch.length === 0) return
    inserted += await insertRawSessions(db, hashClient, batch)
    batch = []
  }
  try {
    for await (const records of readRecords(path, (n) => { bytes += n })) {
      for (const record of records) {
        read++
        const checked = record.value === undefined ? { reason: 'not valid JSON' } : checkSession(record.value, now)
        if (checked.session !== undefined) batch.push(checked.session)
        else bad.push({ line: record.line, reason: checked.reason })
        if (batch.length + bad.length >= IMPORT_BATCH) await flush()
      }
      progress.update(bytes, read)
    }
    await flush()
  } finally {
    progress.done()
  }
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
