/**
 * Every row of every table of the service's database, in a deterministic order, to prove
 * that rejected requests stored nothing: SQLite's tables from sqlite_master, PostgreSQL's
 * from the current schema (each test database is a schema of its own).
 */
import type { Database } from '../../src/db/engine.ts'

export type Snapshot = Map<string, string[]>

async function tableNames(db: Database): Promise<string[]> {
  const rows = db.engine === 'sqlite'
    ? await db.all<{ name: string }>("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY name")
    : await db.all<{ name: string }>("SELECT table_name AS name FROM information_schema.tables WHERE table_schema = current_schema() AND table_type = 'BASE TABLE' ORDER BY table_name")
  return rows.map((r) => r.name)
}

/** Rows as JSON text (bigints and blobs spelled out), sorted: column types need not be orderable in SQL. */
function rowText(row: Record<string, unknown>): string {
  return JSON.stringify(row, (_key, value: unknown) => {
    if (typeof value === 'bigint') return `${value}n`
    if (value instanceof Uint8Array) return `0x${Buffer.from(value).toString('hex')}`
    return value
  })
}

export async function snapshotTables(db: Database): Promise<Snapshot> {
  const snapshot: Snapshot = new Map()
  for (const name of await tableNames(db)) {
    const table = `"${name.replace(/"/g, '""')}"`
    let sql = `SELECT * FROM ${table}`
    if (db.engine === 'sqlite') {
      // quote() spells every value out: node:sqlite refuses integers past 2^53 (byte sums can get there).
      const columns = await db.all<{ name: string }>(`SELECT name FROM pragma_table_info($1)`, [name])
      sql = `SELECT ${columns.map((c) => `quote("${c.name.replace(/"/g, '""')}") AS "${c.name.replace(/"/g, '""')}"`).join(', ')} FROM ${table}`
    }
    const rows = await db.all<Record<string, unknown>>(sql)
    snapshot.set(name, rows.map(rowText).sort())
  }
  return snapshot
}

/** What changed between two snapshots, one line per changed table (with a few of its rows). */
export function snapshotDiff(before: Snapshot, after: Snapshot): string[] {
  const changes: string[] = []
  for (const name of new Set([...before.keys(), ...after.keys()])) {
    const a = before.get(name) ?? []
    const b = after.get(name) ?? []
    if (a.length === b.length && a.every((row, i) => row === b[i])) continue
    const inA = new Set(a)
    const inB = new Set(b)
    const added = b.filter((r) => !inA.has(r))
    const removed = a.filter((r) => !inB.has(r))
    const sample = [...added.slice(0, 2).map((r) => `+ ${r.slice(0, 300)}`), ...removed.slice(0, 2).map((r) => `- ${r.slice(0, 300)}`)]
    changes.push(`table ${name}: ${added.length} rows added, ${removed.length} removed\n      ${sample.join('\n      ')}`)
  }
  return changes
}
