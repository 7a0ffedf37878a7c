import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { test } from 'node:test'
import { missingServerFlags, SERVER_NODE_FLAGS } from '../../src/cli/node-flags.ts'

test('a server started without its V8 flags is missing all of them', () => {
  assert.deepEqual(missingServerFlags([], undefined), [...SERVER_NODE_FLAGS])
  assert.deepEqual(missingServerFlags(['--cpu-prof'], '--enable-source-maps'), [...SERVER_NODE_FLAGS])
})

test('flags already given, on the command line or in NODE_OPTIONS, are not added again (so no relaunch loop)', () => {
  assert.deepEqual(missingServerFlags([...SERVER_NODE_FLAGS], undefined), [])
  assert.deepEqual(missingServerFlags([], `  ${SERVER_NODE_FLAGS.join(' ')}  `), [])
})

test("an operator's own value for the same setting wins", () => {
  assert.deepEqual(missingServerFlags(['--max-semi-space-size=32'], undefined), [])
  assert.deepEqual(missingServerFlags([], '--max-semi-space-size=2'), [])
  assert.deepEqual(missingServerFlags([], '--max_semi_space_size=16'), [], 'V8 spells it with underscores too')
})

test('npm start passes the same flags itself (the common start needs no re-exec), so the two cannot drift apart', () => {
  const { scripts } = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { scripts: Record<string, string> }
  const start = scripts.start!.split(/\s+/)
  assert.equal(start[0], 'node')
  assert.deepEqual(missingServerFlags(start.slice(1, start.indexOf('src/cli/main.ts')), undefined), [])
  for (const flag of SERVER_NODE_FLAGS) assert.ok(start.includes(flag), `${flag} in "${scripts.start}"`)
})
