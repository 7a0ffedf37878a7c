import { extname } from 'node:path'
import { ConflictError, ValidationError } from '../errors.ts'
import { readRecords, type FileRecord } from '../stats/import/file-records.ts'
import { ChangeConflict, ChangeRejected } from './parse-change.ts'
import type { SwapRecords } from './swap-records.ts'

export type ChangeFileFormat = 'csv' | 'ndjson'

/** The file names `kns sim-changes import` reads, and the format each names (the help lists them from here). */
export const CHANGE_FILE_FORMATS: Readonly<Record<string, ChangeFileFormat>> = { '.csv': 'csv', '.ndjson': 'ndjson', '.jsonl': 'ndjson' }

/** Changes per transaction: well under a request's 1000, so a bad line costs little to redo. */
const BATCH = 500

/** The format given (`--format`), else the one the file's extension names. */
export function changeFileFormat(path: string, given?: string): ChangeFileFormat {
  if (given !== undefined) {
    if (given === 'csv' || given === 'ndjson') return given
    throw new ValidationError(`--format must be csv or ndjson, not ${JSON.stringify(given)}`, { field: 'format' })
  }
  const format = CHANGE_FILE_FORMATS[extname(path).toLowerCase()]
  if (format === undefined) throw new ValidationError(`${path}: name a .csv, .ndjson or .jsonl file, or give --format csv|ndjson`, { field: 'format' })
  return format
}

export interface ImportResult { read: number; recorded: number; duplicates: number; outsidePeriod: number }

/**
 * Streams a file of changes (CSV with a header row naming eventId, phoneNumber, kind,
 * changedAt and optionally approvalNumber; or NDJSON, one object a line) into the records, in
 * transactions of BATCH changes, never holding the file in memory. Idempotent: a file imported
 * again is all duplicates. A bad line stops the import naming it; the batches before it stay
 * recorded (importing the fixed file again counts them as duplicates).
 */
export async function importChanges(records: SwapRecords, path: string, format: ChangeFileFormat, recordedBy = 'cli'): Promise<ImportResult> {
  const result: ImportResult = { read: 0, recorded: 0, duplicates: 0, outsidePeriod: 0 }
  let pending: FileRecord[] = []
  const flush = async () => {
    if (pending.length === 0) return
    const batch = pending
    pending = []
    try {
      const { recorded, duplicates, outsidePeriod } = await records.record(batch.map((r) => r.value), recordedBy)
      result.recorded += recorded
      result.duplicates += duplicates
      result.outsidePeriod += outsidePeriod
    } catch (err) {
      if (err instanceof ChangeRejected) throw new ValidationError(`${path} line ${batch[err.index]!.line}: ${err.reason}`, { field: err.reason.split(' ')[0]! })
      if (err instanceof ChangeConflict) throw new ConflictError(`${path} line ${batch[err.index]!.line}: ${err.reason}`, { field: 'eventId' })
      throw err
    }
  }
  for await (const chunk of readRecords(path, undefined, format)) {
    for (const record of chunk) {
      // NDJSON: a line that is not JSON reads as undefined.
      if (record.value === undefined) throw new ValidationError(`${path} line ${record.line}: not a JSON object`)
      result.read++
      pending.push(record)
      if (pending.length === BATCH) await flush()
    }
  }
  await flush()
  return result
}
