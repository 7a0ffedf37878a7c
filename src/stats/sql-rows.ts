import type { Executor } from '../db/engine.ts'

/** Bound parameters per statement: under SQLite's 32766 and PostgreSQL's 65535. */
const MAX_PARAMS = 30_000
/**
 * SQLite compiles a multi-row VALUES into a compound select whose preparation grows faster
 * than linearly (3750 rows took seconds); in process, short statements cost nothing extra
 * (16 rows measured best).
 * PostgreSQL wants few round trips.
 */
const ROWS_PER_STATEMENT = { sqlite: 16, postgres: 5000 } as const

/**
 * Multi-row `INSERT INTO table (columns) VALUES (...), (...) <suffix>`, in statements of
 * at most MAX_PARAMS parameters: the common SQL of both engines, and far fewer round trips
 * than one statement per row. Returns the RETURNING rows when the suffix has a RETURNING
 * clause, otherwise the number of rows changed (as `changed`).
 */
export async function insertRows<T = Record<string, unknown>>(
  ex: Executor, table: string, columns: readonly string[], rows: readonly (readonly unknown[])[], suffix = '',
): Promise<{ rows: T[]; changed: number }> {
  const out: T[] = []
  let changed = 0
  if (rows.length === 0) return { rows: out, changed }
  const perStatement = Math.max(1, Math.min(ROWS_PER_STATEMENT[ex.engine], Math.floor(MAX_PARAMS / columns.length)))
  const returning = /\bRETURNING\b/i.test(suffix)
  const shape = `${table}\u0000${columns.join(',')}\u0000${suffix}`
  for (let offset = 0; offset < rows.length; offset += perStatement) {
    const count = Math.min(perStatement, rows.length - offset)
    const params: unknown[] = []
    for (let r = offset; r < offset + count; r++) for (const value of rows[r]!) params.push(value)
    const sql = statementFor(shape, table, columns, suffix, count)
    if (returning) {
      const got = await ex.all<T>(sql, params)
      out.push(...got)
      changed += got.length
    } else {
      changed += await ex.run(sql, params)
    }
  }
  return { rows: out, changed }
}

/**
 * The SQL of one statement shape and row count, built once: the engines cache prepared
 * statements by their text, and a string already hashed is found without reading it again.
 */
const statements = new Map<string, string>()

function statementFor(shape: string, table: string, columns: readonly string[], suffix: string, count: number): string {
  const key = `${shape}\u0000${count}`
  let sql = statements.get(key)
  if (sql === undefined) {
    const tuples: string[] = []
    for (let r = 0; r < count; r++) tuples.push(`(${columns.map((_, c) => `$${r * columns.length + c + 1}`).join(',')})`)
    sql = `INSERT INTO ${table} (${columns.join(', ')}) VALUES ${tuples.join(',')} ${suffix}`
    if (statements.size > 1000) statements.clear()
    statements.set(key, sql)
  }
  return sql
}

/**
 * Rows whose keys are known to be free (their key range was just emptied, or never held rows):
 * on PostgreSQL through COPY, which measured 3-4x faster than multi-row INSERT there (no
 * statement to parse and plan, no parameters to bind); elsewhere through insertRows.
 */
export async function appendRows(ex: Executor, table: string, columns: readonly string[], rows: readonly (readonly unknown[])[]): Promise<void> {
  if (rows.length === 0) return
  if (ex.engine === 'postgres' && ex.copyFrom !== undefined) await copyInto(ex, table, columns, copyText(rows))
  else await insertRows(ex, table, columns, rows)
}

/** `COPY table (columns) FROM STDIN` with `text` in COPY's text format (see copyText). PostgreSQL only. */
export async function copyInto(ex: Executor, table: string, columns: readonly string[], text: string): Promise<void> {
  if (ex.copyFrom === undefined) throw new Error(`COPY needs PostgreSQL (engine: ${ex.engine})`)
  await ex.copyFrom(`COPY ${table} (${columns.join(', ')}) FROM STDIN`, text)
}

const COPY_SPECIAL = /[\\\t\n\r]/
const COPY_ESCAPES: Record<string, string> = { '\\': '\\\\', '\t': '\\t', '\n': '\\n', '\r': '\\r' }

/** Rows in COPY's text format: tab-separated, one per line, backslash escapes; null as \N. */
export function copyText(rows: readonly (readonly unknown[])[]): string {
  let text = ''
  for (const row of rows) {
    for (let c = 0; c < row.length; c++) {
      const cell = row[c]
      if (c > 0) text += '\t'
      if (cell === null || cell === undefined) {
        text += '\\N'
        continue
      }
      const value = String(cell)
      text += COPY_SPECIAL.test(value) ? value.replace(/[\\\t\n\r]/g, (ch) => COPY_ESCAPES[ch]!) : value
    }
    text += '\n'
  }
  return text
}
