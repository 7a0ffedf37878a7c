/**
 * Records from import files of any size, streamed with bounded memory: CSV with a header
 * row, NDJSON (one JSON value per line) or a JSON array (split into its elements as it is
 * read). The format follows the file extension.
 */
import { createReadStream } from 'node:fs'
import { extname } from 'node:path'
import { ValidationError } from '../../errors.ts'
import { CsvParser } from './csv.ts'

export interface FileRecord {
  /** The parsed value, or undefined when the line is not valid JSON. */
  value: unknown
  /** 1-based line where the record starts. */
  line: number
}

export type FileFormat = 'csv' | 'ndjson' | 'json'

/** The file extensions an import reads, and the format each names (the CLI's help lists them from here). */
export const IMPORT_FORMATS: Readonly<Record<string, FileFormat>> = { '.csv': 'csv', '.ndjson': 'ndjson', '.jsonl': 'ndjson', '.json': 'json' }

export function formatOf(path: string): FileFormat {
  const ext = extname(path).toLowerCase()
  const format = IMPORT_FORMATS[ext]
  if (format !== undefined) return format
  const names = Object.keys(IMPORT_FORMATS)
  throw new ValidationError(`${path}: unknown file type "${ext}" (use ${names.slice(0, -1).join(', ')} or ${names.at(-1)})`)
}

/** CSV cells are text: these columns hold numbers when they look like one. */
const NUMERIC = new Set(['lat', 'lon', 'bytesUp', 'bytesDown', 'start', 'end'])
const NUMBER = /^-?\d+(\.\d+)?([eE][-+]?\d+)?$/

export function csvObject(header: string[], cells: string[]): Record<string, unknown> {
  const out: Record<string, unknown> = {}
  header.forEach((name, i) => {
    const cell = cells[i]
    if (cell === undefined) return
    out[name] = NUMERIC.has(name) && NUMBER.test(cell) ? Number(cell) : cell
  })
  return out
}

/** Splits a JSON array into the text of its elements, across chunk boundaries. */
class JsonArraySplitter {
  #buffer = ''
  #pos = 0
  #depth = 0
  #inString = false
  #escaped = false
  #start = -1
  #line = 1
  #startLine = 1
  #opened = false

  push(chunk: string, emit: (text: string, line: number) => void): void {
    this.#buffer += chunk
    const b = this.#buffer
    for (let i = this.#pos; i < b.length; i++) {
      const c = b.charCodeAt(i)
      if (c === 10) this.#line++
      if (this.#inString) {
        if (this.#escaped) this.#escaped = false
        else if (c === 92) this.#escaped = true
        else if (c === 34) this.#inString = false
        continue
      }
      if (c === 34) this.#inString = true
      if (!this.#opened) {
        if (c === 91) { this.#opened = true; this.#depth = 1 }
        else if (c > 32) throw new ValidationError(`line ${this.#line}: a JSON array was expected`)
        continue
      }
      if (c === 123 || c === 91) {
        if (this.#depth === 1 && this.#start < 0) { this.#start = i; this.#startLine = this.#line }
        this.#depth++
      } else if (c === 125 || c === 93) {
        this.#depth--
        if (this.#depth === 1 && this.#start >= 0) {
          emit(b.slice(this.#start, i + 1), this.#startLine)
          this.#start = -1
        }
      } else if (this.#depth === 1 && this.#start < 0 && c > 32 && c !== 44) {
        throw new ValidationError(`line ${this.#line}: array elements must be objects`)
      }
    }
    // Keep only the unfinished element.
    const keep = this.#start >= 0 ? this.#start : b.length
    this.#buffer = b.slice(keep)
    if (this.#start >= 0) this.#start = 0
    this.#pos = this.#buffer.length
  }
}

/**
 * Batches of records from `path`, in file order. `onBytes` reports bytes read (progress);
 * `format`: the file's, when its name does not say it (`kns sim-changes import --format`).
 */
export async function* readRecords(path: string, onBytes: (bytes: number) => void = () => {}, format: FileFormat = formatOf(path)): AsyncGenerator<FileRecord[]> {
  if (format === 'csv') {
    for await (const { header, rows } of readCsvRows(path, onBytes)) yield rows.map(({ cells, line }) => ({ value: csvObject(header, cells), line }))
    return
  }
  const stream = createReadStream(path, { highWaterMark: 1 << 20 })
  const decoder = new TextDecoder('utf-8', { fatal: true })
  const json = new JsonArraySplitter()
  let carry = ''
  let line = 0
  const parse = (text: string): unknown => {
    try { return JSON.parse(text) } catch { return undefined }
  }
  for await (const chunk of stream as AsyncIterable<Buffer>) {
    onBytes(chunk.length)
    const text = decoder.decode(chunk, { stream: true })
    const out: FileRecord[] = []
    if (format === 'json') {
      json.push(text, (element, at) => out.push({ value: parse(element), line: at }))
    } else {
      const lines = (carry + text).split('\n')
      carry = lines.pop()!
      for (const l of lines) {
        line++
        if (l.trim() !== '') out.push({ value: parse(l), line })
      }
    }
    if (out.length > 0) yield out
  }
  if (format === 'ndjson' && carry.trim() !== '') yield [{ value: parse(carry), line: line + 1 }]
}

/** A CSV record as cells, with the file's header. */
export interface CsvRow { cells: string[]; line: number }

/**
 * Batches of CSV records as cells (header excluded, blank lines skipped), for callers that
 * read the cells themselves; `header` is the file's header row, trimmed.
 */
export async function* readCsvRows(path: string, onBytes: (bytes: number) => void = () => {}): AsyncGenerator<{ header: string[]; rows: CsvRow[] }> {
  const stream = createReadStream(path, { highWaterMark: 1 << 20 })
  const decoder = new TextDecoder('utf-8', { fatal: true })
  const csv = new CsvParser()
  let header: string[] | undefined
  let out: CsvRow[] = []
  const take = (cells: string[], line: number) => {
    if (header === undefined) header = cells.map((c) => c.trim())
    else if (!(cells.length === 1 && cells[0] === '')) out.push({ cells, line })
  }
  for await (const chunk of stream as AsyncIterable<Buffer>) {
    onBytes(chunk.length)
    csv.push(decoder.decode(chunk, { stream: true }), take)
    if (out.length > 0 && header !== undefined) {
      yield { header, rows: out }
      out = []
    }
  }
  csv.end(take)
  if (out.length > 0 && header !== undefined) yield { header, rows: out }
}
