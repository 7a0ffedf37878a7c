/**
 * Usage files -> batches of stats_sessions rows ready to insert: parsed, validated and hashed.
 *
 * CSV records with the usual shape take a fast path that checks the cells by hand; anything
 * it is not sure of (quotes, odd cells, a value out of range) goes through checkSession, so
 * accepted records and the reasons of rejected ones are exactly those of the API.
 */
import { copyText } from '../sql-rows.ts'
import { csvObject, formatOf, readCsvRows, readRecords } from './file-records.ts'
import { SESSION_LIMITS, SINGLE_LINE } from '../../contract/stats-schemas.ts'
import { EARLIEST_MS } from '../time.ts'
import { checkSession, FUTURE_TOLERANCE_MS, type Session } from '../ingest/validate-session.ts'
import type { WeekActivity } from '../rollups/week-activity.ts'

/** Sessions per transaction: large enough to amortise commits, small enough to not hold the write lock long. */
export const IMPORT_BATCH = 10_000

export interface BadLine { line: number; reason: string }

export interface RawBatch {
  /**
   * Rows [start_ms, session_id, network, node_uid, client_hash, end_ms, bytes_up, bytes_down]
   * (a session repeated within the batch included: the first one is stored). Empty in a batch
   * the reader thread sent as COPY text only (`copy` and `starts`).
   */
  rows: unknown[][]
  /** Each session's start_ms, in order, when `rows` were left out. */
  starts?: Float64Array
  /** The rows in COPY's text format, when the worker was asked for it (PostgreSQL). */
  copy?: string
  /** Earliest start_ms of the rows (Infinity when none). */
  first: number
  /** Records of this batch that were rejected: the batch must not be stored. */
  bad: BadLine[]
  /** Records read so far, and bytes of the file read so far (progress). */
  read: number
  bytes: number
  /**
   * From the reader thread (reader-thread.ts): the hashes of the clients it numbered since the
   * last batch (numbers first, first + 1, ...), the weeks it finished collecting, and whether
   * it stopped collecting.
   */
  newClients?: { first: number; hashes: string[] }
  finished?: [number, WeekActivity][]
  stopCollecting?: boolean
}

type Row = [number, string, string, string, string, number, number, number]

const FIELDS = ['sessionId', 'network', 'nodeUid', 'clientId', 'start', 'end', 'bytesUp', 'bytesDown'] as const
const DIGITS = /^\d{1,16}$/
const SINGLE_LINE_TEXT = new RegExp(SINGLE_LINE, 'u')
const { sessionId: MAX_SESSION_ID, nodeUid: MAX_NODE_UID, clientId: MAX_CLIENT_ID, bytes: MAX_BYTES, durationMs: MAX_DURATION } = SESSION_LIMITS

/** The session of a CSV record in the usual shape, or undefined when checkSession must decide. */
function fastSession(cells: string[], at: number[], now: number): Session | undefined {
  const [sessionId, network, nodeUid, clientId, startText, endText, upText, downText] = at.map((i) => cells[i]!)
  if (network !== 'gateway' && network !== 'wifi') return undefined
  if (sessionId!.length < 1 || sessionId!.length > MAX_SESSION_ID || !SINGLE_LINE_TEXT.test(sessionId!)) return undefined
  if (nodeUid!.length < 1 || nodeUid!.length > MAX_NODE_UID || !SINGLE_LINE_TEXT.test(nodeUid!)) return undefined
  if (clientId!.length < 1 || clientId!.length > MAX_CLIENT_ID) return undefined
  if (!DIGITS.test(startText!) || !DIGITS.test(endText!) || !DIGITS.test(upText!) || !DIGITS.test(downText!)) return undefined
  const start = Number(startText)
  const end = Number(endText)
  const bytesUp = Number(upText)
  const bytesDown = Number(downText)
  if (start < EARLIEST_MS || start > now + FUTURE_TOLERANCE_MS || end < start || end - start > MAX_DURATION || bytesUp > MAX_BYTES || bytesDown > MAX_BYTES) return undefined
  return { sessionId: sessionId!, network, nodeUid: nodeUid!, clientId: clientId!, start, end, bytesUp, bytesDown }
}

/** Column of each session field in `header`, or undefined when the fast path cannot apply. */
function fieldColumns(header: string[]): number[] | undefined {
  if (new Set(header).size !== header.length) return undefined
  const at = FIELDS.map((f) => header.indexOf(f))
  return at.every((i) => i >= 0) ? at : undefined
}

/** A cell the fast path checked (no control characters) in COPY's text format: only a backslash needs escaping. */
const copyCell = (text: string): string => (text.includes('\\') ? text.replaceAll('\\', '\\\\') : text)

/**
 * Batches of the sessions of `path`, in file order, each with its bad records; with `copy`,
 * also their rows in COPY's text format (PostgreSQL), written from the file's own digits
 * where the fast path read them rather than from the parsed numbers.
 */
export async function* sessionBatches(path: string, hashClient: (clientId: string) => string, now: number, size = IMPORT_BATCH, options: { copy?: boolean } = {}): AsyncGenerator<RawBatch> {
  const wantCopy = options.copy ?? false
  let rows: Row[] = []
  let copy = ''
  let bad: BadLine[] = []
  let first = Infinity
  let read = 0
  let bytes = 0
  const onBytes = (n: number) => { bytes += n }
  /** `digits`: the fast path's cells for start, end, bytesUp and bytesDown. */
  const add = (value: unknown, line: number, session?: Session, digits?: readonly string[]) => {
    read++
    const checked = session !== undefined ? { session } : value === undefined ? { reason: 'not valid JSON' } : checkSession(value, now)
    const s = checked.session
    if (s === undefined) {
      bad.push({ line, reason: checked.reason! })
      return
    }
    const row: Row = [s.start, s.sessionId, s.network, s.nodeUid, hashClient(s.clientId), s.end, s.bytesUp, s.bytesDown]
    rows.push(row)
    if (wantCopy) {
      copy += digits === undefined
        ? copyText([row])
        : `${digits[0]}\t${copyCell(s.sessionId)}\t${s.network}\t${copyCell(s.nodeUid)}\t${row[4]}\t${digits[1]}\t${digits[2]}\t${digits[3]}\n`
    }
    if (s.start < first) first = s.start
  }
  const take = (): RawBatch => {
    const batch: RawBatch = { rows, first, bad, read, bytes }
    if (wantCopy && bad.length === 0) batch.copy = copy
    rows = []
    copy = ''
    bad = []
    first = Infinity
    return batch
  }
  if (formatOf(path) === 'csv') {
    let at: number[] | undefined
    let seen: string[] | undefined
    for await (const { header, rows: records } of readCsvRows(path, onBytes)) {
      if (header !== seen) at = fieldColumns(seen = header)
      for (const { cells, line } of records) {
        const session = at !== undefined && cells.length === header.length ? fastSession(cells, at, now) : undefined
        if (session === undefined) add(csvObject(header, cells), line)
        else add(undefined, line, session, wantCopy ? [cells[at![4]!]!, cells[at![5]!]!, cells[at![6]!]!, cells[at![7]!]!] : undefined)
        if (rows.length + bad.length >= size) yield take()
      }
    }
  } else {
    for await (const records of readRecords(path, onBytes)) {
      for (const { value, line } of records) {
        add(value, line)
        if (rows.length + bad.length >= size) yield take()
      }
    }
  }
  if (rows.length + bad.length > 0 || read === 0) yield take()
}
