/**
 * docs/configuration.md's tables are generated from the configuration's definitions
 * (src/config.ts SETTINGS): a variable added, removed or reworded there without the doc fails
 * here. The text around the generated part is written by hand and kept. Regenerate with
 * `UPDATE_DOCS=1 node --test test/docs/configuration.test.ts`.
 */
import assert from 'node:assert/strict'
import { readFileSync, writeFileSync } from 'node:fs'
import { test } from 'node:test'
import { loadConfig, SETTINGS } from '../../src/config.ts'

const DOC = new URL('../../docs/configuration.md', import.meta.url)
const README = new URL('../../README.md', import.meta.url)
const START = '<!-- generated:start (from src/config.ts SETTINGS by test/docs/configuration.test.ts: edit the definitions, then run UPDATE_DOCS=1 node --test test/docs/configuration.test.ts) -->'
const END = '<!-- generated:end -->'

const cell = (text: string): string => text.replaceAll('|', '\\|')

function render(): string {
  const sections = [...new Set(SETTINGS.map((s) => s.section))]
  return sections.flatMap((section) => [
    `## ${section}`,
    '',
    '| Variable | Values | Default | What it does |',
    '|---|---|---|---|',
    ...SETTINGS.filter((s) => s.section === section).map((s) => `| \`${s.name}\` | ${cell(s.values)} | ${cell(s.default)} | ${cell(s.description)} |`),
    '',
  ]).join('\n')
}

/** The doc with its generated part replaced by what the definitions say now. */
function regenerated(doc: string): string {
  const start = doc.indexOf(START)
  const end = doc.indexOf(END)
  assert.ok(start >= 0 && end > start, `docs/configuration.md must keep the markers ${START} and ${END}`)
  return `${doc.slice(0, start + START.length)}\n\n${render()}${doc.slice(end)}`
}

test('docs/configuration.md is generated from the configuration definitions', () => {
  const doc = readFileSync(DOC, 'utf8')
  const rendered = regenerated(doc)
  if (process.env.UPDATE_DOCS === '1') writeFileSync(DOC, rendered)
  assert.equal(readFileSync(DOC, 'utf8'), rendered, 'the definitions changed: run UPDATE_DOCS=1 node --test test/docs/configuration.test.ts and commit docs/configuration.md')
})

test('every variable is defined once, and is read by its own parser or names where it is read', () => {
  const names = SETTINGS.map((s) => s.name)
  assert.deepEqual(names.filter((n, i) => names.indexOf(n) !== i), [], 'no variable twice')
  for (const s of SETTINGS) {
    assert.ok(s.read !== undefined || s.readBy !== undefined, `${s.name}: read here or readBy`)
    assert.ok(s.description.length > 10 && s.values !== '' && s.default !== '', `${s.name}: described`)
  }
  // Every field of the Config interface is filled by some definition (none forgotten).
  const source = readFileSync(new URL('../../src/lib/config-type.ts', import.meta.url), 'utf8')
  const body = source.slice(source.indexOf('export interface Config {'), source.indexOf('\n}\n', source.indexOf('export interface Config {')))
  const fields = [...body.matchAll(/^ {2}(\w+)\??:/gm)].map((m) => m[1])
  assert.ok(fields.length > 50, 'the Config interface was read')
  assert.deepEqual(fields.filter((f) => !Object.hasOwn(loadConfig({}), f!)), [])
})

test('the README stays the front door: under 250 lines, the configuration linked rather than copied', () => {
  const readme = readFileSync(README, 'utf8')
  assert.ok(readme.split('\n').length < 250, `README.md has ${readme.split('\n').length} lines`)
  assert.match(readme, /docs\/configuration\.md/)
  assert.ok(!readme.includes('| `REDIS_COMMAND_TIMEOUT_MS` |'), 'the configuration table lives in docs/configuration.md')
})
