/** The CSV fast path of `kns stats import` accepts and rejects exactly what checkSession does, with the same reasons. */
import assert from 'node:assert/strict'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { test } from 'node:test'
import { csvObject } from '../../../src/stats/import/file-records.ts'
import { sessionBatches } from '../../../src/stats/import/session-batches.ts'
import { checkSession } from '../../../src/stats/ingest/validate-session.ts'

const NOW = Date.UTC(2025, 0, 1)
const HEADER = ['sessionId', 'network', 'nodeUid', 'clientId', 'start', 'end', 'bytesUp', 'bytesDown']
const good = ['s1', 'gateway', 'g1', 'c1', String(NOW - 10_000), String(NOW - 5_000), '10', '20']
const variants: [number, string][] = [
  [0, ''], [0, 'x'.repeat(129)], [0, 'a\u0001b'], [1, 'lte'], [2, ''], [3, ''], [3, 'y'.repeat(257)],
  [4, '1000'], [4, String(NOW + 3_600_000)], [4, '2024-06-01T00:00:00Z'], [4, 'yesterday'], [5, String(NOW - 20_000)],
  [6, '-1'], [6, '1.5'], [6, String(1e15 + 1)], [7, '1e3'], [7, '007'], [5, '2024-12-31T23:59:59.5Z'],
]

test('CSV sessions: the fast path agrees with checkSession on every record', async () => {
  const lines = [good, ...variants.map(([i, v]) => good.map((c, j) => (j === i ? v : j === 0 ? `s-${i}-${v.length}` : c)))]
  const dir = mkdtempSync(join(tmpdir(), 'kns-batches-'))
  const file = join(dir, 'u.csv')
  writeFileSync(file, `${[HEADER, ...lines].map((l) => l.join(',')).join('\r\n')}\r\n`)
  const batches = []
  for await (const b of sessionBatches(file, (id) => `h:${id}`, NOW)) batches.push(b)
  const rows = batches.flatMap((b) => b.rows)
  const bad = batches.flatMap((b) => b.bad)
  const expectedRows: unknown[][] = []
  const expectedBad: { line: number; reason: string }[] = []
  lines.forEach((cells, i) => {
    const checked = checkSession(csvObject(HEADER, cells), NOW)
    const s = checked.session
    if (s === undefined) expectedBad.push({ line: i + 2, reason: checked.reason })
    else expectedRows.push([s.start, s.sessionId, s.network, s.nodeUid, `h:${s.clientId}`, s.end, s.bytesUp, s.bytesDown])
  })
  assert.deepEqual(rows, expectedRows)
  assert.deepEqual(bad, expectedBad)
  assert.ok(expectedBad.length > 10 && expectedRows.length >= 3)
})

/** COPY text format -> rows of strings (the inverse of its escapes; \N as null). */
function parseCopy(text: string): (string | null)[][] {
  return text.split('\n').filter((l) => l !== '').map((line) => line.split('\t').map((cell) =>
    cell === '\\N' ? null : cell.replace(/\\(.)/g, (_, c: string) => ({ t: '\t', n: '\n', r: '\r' } as Record<string, string>)[c] ?? c)))
}

test('CSV sessions: the COPY text of a batch holds exactly its rows, on the fast path and off it', async () => {
  const lines = [
    good,
    ['back\\slash', 'wifi', 'node\\1', 'c2', `00${NOW - 9_000}`, String(NOW - 4_000), '0', '007'],
    ['"quoted, id"', 'gateway', 'g2', 'c3', String(NOW - 8_000), String(NOW - 3_000), '1', '2'],
  ]
  const dir = mkdtempSync(join(tmpdir(), 'kns-batches-'))
  const file = join(dir, 'u.csv')
  writeFileSync(file, `${[HEADER, ...lines].map((l) => l.join(',')).join('\n')}\n`)
  const batches = []
  for await (const b of sessionBatches(file, (id) => `h:${id}`, NOW, 10, { copy: true })) batches.push(b)
  assert.equal(batches.length, 1)
  const [batch] = batches
  assert.deepEqual(batch!.bad, [])
  assert.equal(batch!.rows.length, 3)
  const decoded = parseCopy(batch!.copy!).map((cells) => cells.map((c, i) => ([0, 5, 6, 7].includes(i) ? Number(c) : c)))
  assert.deepEqual(decoded, batch!.rows)
  assert.equal(batch!.rows[1]![1], 'back\\slash')
  assert.equal(batch!.rows[2]![1], 'quoted, id')
})

test('CSV sessions: no COPY text unless asked for, nor for a batch with a bad record', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'kns-batches-'))
  const file = join(dir, 'u.csv')
  writeFileSync(file, `${[HEADER, good, good.map((c, i) => (i === 1 ? 'lte' : c))].map((l) => l.join(',')).join('\n')}\n`)
  for await (const b of sessionBatches(file, (id) => `h:${id}`, NOW)) assert.equal(b.copy, undefined)
  for await (const b of sessionBatches(file, (id) => `h:${id}`, NOW, 10, { copy: true })) {
    assert.equal(b.bad.length, 1)
    assert.equal(b.copy, undefined)
  }
})
