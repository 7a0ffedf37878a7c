/**
 * What the CLI says about itself: its version, the columns `kns stats import` reads (from the
 * importer's own schemas), and file formats that agree with the README's command table.
 */
import assert from 'node:assert/strict'
import { mkdtempSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { test } from 'node:test'
import { commandHelp } from '../../src/cli/main.ts'
import { IMPORT_FORMATS } from '../../src/stats/import/file-records.ts'
import { IMPORT_FILES } from '../../src/stats/import/import-files.ts'
import { ROOT, runKns } from '../support/process.ts'

/** A loaded machine starts a CLI slowly: the deadline only catches a hang. */
const slow = { timeoutMs: 120_000 }
const version = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version

test('kns --version and -v print the package\'s version, also as JSON, without a database', async () => {
  const env = { DATA_DIR: mkdtempSync(join(tmpdir(), 'kns-version-')) }
  const [long, short, json] = await Promise.all([runKns(['--version'], env, slow), runKns(['-v'], env, slow), runKns(['--version', '--json'], env, slow)])
  for (const r of [long, short]) {
    assert.equal(r.code, 0, r.stderr)
    assert.equal(r.stdout, `kns ${version}\n`)
  }
  assert.deepEqual(JSON.parse(json.stdout), { version })
})

test('kns stats import --help lists every column of each file, as the importer checks them, and every format it reads', async () => {
  const result = await runKns(['stats', 'import', '--help'], { DATA_DIR: mkdtempSync(join(tmpdir(), 'kns-help-')) }, slow)
  assert.equal(result.code, 0, result.stderr)
  for (const [option, schema] of Object.entries(IMPORT_FILES)) {
    const section = new RegExp(`^  --${option}:\\n((?:    .*\\n)+)`, 'm').exec(result.stdout)
    assert.ok(section, `no --${option} section in\n${result.stdout}`)
    const listed = section[1]!.split('\n').filter(Boolean).map((line) => line.trim().split(/\s+/)[0])
    assert.deepEqual(listed, Object.keys(schema.properties))
  }
  for (const extension of Object.keys(IMPORT_FORMATS)) assert.ok(result.stdout.includes(extension), `${extension} in the help`)
})

/** The file formats a text names: extensions and format names, lower case. */
function formatsIn(text: string): string[] {
  const found = new Set<string>()
  for (const m of text.matchAll(/(?:\.|\b)(csv|ndjson|jsonl|json|pem|der)\b/gi)) found.add(m[1]!.toLowerCase())
  return [...found].sort()
}

test('the README\'s command table and the CLI\'s help name the same file formats for each command', () => {
  const sources = ['README.md', 'docs/cli.md'].map((file) => { try { return readFileSync(join(ROOT, file), 'utf8') } catch { return '' } }).join('\n')
  const rows = [...sources.matchAll(/^\| `kns ([^`]+)`(.*?) \| (.*) \|$/gm)]
  assert.ok(rows.length > 20, 'the README has its command table')
  const disagreements: string[] = []
  for (const [, usage, more, description] of rows) {
    // The command words, up to the first option or placeholder: "stats import", "shaken trust add".
    const words = usage!.split(' ').filter((w, i, all) => all.slice(0, i + 1).every((x) => /^[a-z][a-z-]*$/.test(x)))
    const lines = commandHelp(words[0]!).split('\n')
    const prefix = `  ${words.join(' ')}`
    const start = lines.findIndex((line) => line.startsWith(prefix))
    if (start === -1) continue
    const entry = [lines[start]!, ...lines.slice(start + 1).filter((_, i, rest) => rest.slice(0, i + 1).every((l) => /^ {3,}\S/.test(l)))]
    const readme = formatsIn(`${usage}${more} ${description}`)
    const help = formatsIn(entry.join('\n'))
    if (readme.join() !== help.join()) disagreements.push(`kns ${words.join(' ')}: README ${readme.join(',') || 'none'}, help ${help.join(',') || 'none'}`)
  }
  assert.deepEqual(disagreements, [])
})
