import { createWriteStream, existsSync, mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { once } from 'node:events'
import { ValidationError } from '../errors.ts'
import { phoneCountry } from '../identity/phone.ts'
import type { Service } from '../service.ts'
import { insertRows } from '../stats/sql-rows.ts'
import { createClientHasher } from '../stats/ingest/client-hash.ts'
import { demoNodes, demoSessions, demoSignups, type DemoOptions } from '../stats/demo/demo.ts'
import { formatOf, IMPORT_FORMATS } from '../stats/import/file-records.ts'
import { describeImportColumns } from '../stats/import/import-files.ts'
import { importNodes, importUsage } from '../stats/import/run-import.ts'
import { ingestSessions, upsertGateways, upsertWifiNodes } from '../stats/ingest/ingest.ts'
import { parseInstant } from '../stats/time.ts'
import { optional, type Parsed } from './args.ts'
import { UsageError, type Output } from './output.ts'

/** Options of `kns stats` and `kns seed` (merged into the CLI's option table). */
export const STATS_OPTIONS = {
  gateways: { type: 'string' }, 'wifi-nodes': { type: 'string' }, usage: { type: 'string' },
  demo: { type: 'boolean' }, sessions: { type: 'string' }, days: { type: 'string' }, numbers: { type: 'string' },
  seed: { type: 'string' }, until: { type: 'string' }, out: { type: 'string' },
} as const

const EXTENSIONS = Object.keys(IMPORT_FORMATS).join('|')

export const STATS_USAGE = `  stats import [--gateways <file>] [--wifi-nodes <file>] [--usage <file>]
                                          stream files into the statistics (re-runnable: nothing counts twice);
                                          each <file> ${EXTENSIONS}: CSV with a header row of column names,
                                          NDJSON, or a JSON array (kns stats import --help: the columns)
  seed --demo [--sessions N] [--days D] [--numbers K] [--seed S] [--until <ISO date>] [--out <dir>]
                                          a synthetic network; the same options give the same data;
                                          --out writes CSV files for 'stats import' instead`

/** What `kns stats --help` adds to the usage lines: the columns of each file, from the importer's schemas. */
export function statsHelpDetails(): string {
  return `Columns of each file (a CSV header row names them, in any order; a JSON record has them as fields):\n${describeImportColumns()}`
}

/** `kns stats import`. */
export async function statsCommand(service: Service, sub: string | undefined, { values }: Parsed, out: Output): Promise<void> {
  if (sub !== 'import') throw new UsageError(`unknown command 'kns stats ${sub ?? ''}'`)
  const files = { gateways: optional(values, 'gateways'), wifiNodes: optional(values, 'wifi-nodes'), usage: optional(values, 'usage') }
  if (files.gateways === undefined && files.wifiNodes === undefined && files.usage === undefined) {
    throw new UsageError('kns stats import needs --gateways, --wifi-nodes and/or --usage')
  }
  // Fail before storing anything when a file is missing or of an unknown type.
  for (const path of Object.values(files)) {
    if (path === undefined) continue
    formatOf(path)
    if (!existsSync(path)) throw new ValidationError(`${path}: no such file`)
  }
  const result: Record<string, unknown> = {}
  const lines: string[] = []
  if (files.gateways !== undefined) {
    const r = result.gateways = await importNodes(service.db, 'gateways', files.gateways)
    lines.push(`gateways: ${r.read} read, ${r.upserted} upserted`)
  }
  if (files.wifiNodes !== undefined) {
    const r = result.wifiNodes = await importNodes(service.db, 'wifi-nodes', files.wifiNodes)
    lines.push(`wifi nodes: ${r.read} read, ${r.upserted} upserted`)
  }
  if (files.usage !== undefined) {
    const r = await importUsage(service.db, service.secret, files.usage)
    const perSecond = Math.round(r.read / Math.max(r.seconds, 1e-3))
    result.usage = { ...r, seconds: +r.seconds.toFixed(3), perSecond }
    lines.push(`usage: ${r.read} sessions read, ${r.inserted} stored, ${r.duplicates} already there (${r.seconds.toFixed(1)} s, ${perSecond}/s)`)
  }
  out.result(result, lines.join('\n'))
}

function count(values: Parsed['values'], name: string, fallback: number, max: number): number {
  const raw = optional(values, name)
  if (raw === undefined) return fallback
  if (!/^\d+$/.test(raw) || Number(raw) > max) throw new UsageError(`--${name} must be a whole number up to ${max}`)
  return Number(raw)
}

function demoOptions(values: Parsed['values']): DemoOptions {
  const untilRaw = optional(values, 'until')
  // Default: now, so the data reaches the present and the explorer's current day is not an empty
  // one drawn as a drop to zero. A date alone is that day's 00:00 UTC.
  const until = untilRaw === undefined ? Date.now() : parseInstant(untilRaw.includes('T') ? untilRaw : `${untilRaw}T00:00:00Z`, 'until')
  const days = count(values, 'days', 90, 5 * 366)
  if (days < 1) throw new UsageError('--days must be at least 1')
  return { sessions: count(values, 'sessions', 100_000, 1e9), days, numbers: count(values, 'numbers', 1000, 1e7), seed: count(values, 'seed', 1, 2 ** 31), until }
}

async function write(stream: NodeJS.WritableStream, text: string): Promise<void> {
  if (!stream.write(text)) await once(stream, 'drain')
}

const csvCell = (v: unknown) => (typeof v === 'string' && /[",\n]/.test(v) ? `"${v.replace(/"/g, '""')}"` : String(v))

async function writeCsv<T extends object>(path: string, columns: (keyof T & string)[], rows: Iterable<T[]>): Promise<number> {
  const stream = createWriteStream(path)
  let n = 0
  await write(stream, `${columns.join(',')}\n`)
  for (const batch of rows) {
    await write(stream, batch.map((row) => columns.map((c) => csvCell(row[c])).join(',')).join('\n') + (batch.length > 0 ? '\n' : ''))
    n += batch.length
  }
  stream.end()
  await once(stream, 'finish')
  return n
}

/** `kns seed --demo`: into the database, or as CSV files with --out. */
export async function seedCommand(service: Service | null, { values }: Parsed, out: Output): Promise<void> {
  if (values.demo !== true) throw new UsageError('kns seed needs --demo (the only kind of seed there is)')
  const options = demoOptions(values)
  const nodes = demoNodes(options)
  const dir = optional(values, 'out')
  const summary = { ...options, until: new Date(options.until).toISOString(), gateways: nodes.gateways.length, wifiNodes: nodes.wifiNodes.length }
  if (dir !== undefined) {
    mkdirSync(dir, { recursive: true })
    await writeCsv(join(dir, 'gateways.csv'), ['uid', 'location', 'lat', 'lon', 'status', 'spectrum'], [nodes.gateways])
    await writeCsv(join(dir, 'wifi-nodes.csv'), ['uid', 'name', 'status', 'model', 'wifi_level', 'lat', 'lon'], [nodes.wifiNodes])
    const written = await writeCsv(join(dir, 'usage.csv'), ['sessionId', 'network', 'nodeUid', 'clientId', 'start', 'end', 'bytesUp', 'bytesDown'], demoSessions(options, nodes))
    return out.result({ ...summary, out: dir, files: ['gateways.csv', 'wifi-nodes.csv', 'usage.csv'], sessions: written },
      `wrote ${nodes.gateways.length} gateways, ${nodes.wifiNodes.length} WiFi nodes and ${written} sessions to ${dir}`)
  }
  if (service === null) throw new UsageError('kns seed --demo without --out needs the database')
  const { db } = service
  await upsertGateways(db, nodes.gateways)
  await upsertWifiNodes(db, nodes.wifiNodes)
  const hash = createClientHasher(service.secret)
  let inserted = 0
  for (const day of demoSessions(options, nodes)) {
    for (let i = 0; i < day.length; i += 10_000) inserted += (await ingestSessions(db, hash, day.slice(i, i + 10_000))).inserted
  }
  // Sign-ups as the number -> token map records them (statistics only: no ledger tokens).
  const signups = [...demoSignups(options)].map((s) => [s.phone, s.objectId, 'linked', phoneCountry(s.phone), s.createdAt])
  const { changed: numbers } = await db.transaction((tx) => insertRows(tx, 'numbers', ['phone', 'object_id', 'source', 'country', 'created_at'], signups, 'ON CONFLICT DO NOTHING'))
  out.result({ ...summary, inserted, numbersInserted: numbers },
    `seeded ${nodes.gateways.length} gateways, ${nodes.wifiNodes.length} WiFi nodes, ${inserted} new sessions and ${numbers} new sign-ups ` +
    `(${options.days} days until ${summary.until}, seed ${options.seed})`)
}
