import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { test } from 'node:test'
import { ClientNumbers } from '../../../src/stats/rollups/client-numbers.ts'

test('client numbers: given in order of first appearance, the same hash keeps its number', () => {
  const numbers = new ClientNumbers()
  assert.deepEqual(['b', 'a', 'b', 'c', 'a'].map((h) => numbers.numberOf(h)), [0, 1, 0, 2, 1])
  assert.deepEqual(numbers.hashes, ['b', 'a', 'c'])
  assert.equal(numbers.size, 3)
})

test('client numbers sort exactly as their hashes do (code-unit order), beyond the first characters too', () => {
  const numbers = new ClientNumbers()
  const hashes = [
    ...Array.from({ length: 3000 }, () => randomBytes(12).toString('base64url')),
    // Same first 8 characters, prefixes of each other, every alphabet edge, and characters outside base64url.
    'AAAAAAAAx', 'AAAAAAAAa', 'AAAAAAAA', 'AAAAAAA', 'A', '-', '_', '0', '9', 'Z', 'a', 'z', '--------', 'zzzzzzzzzz',
    'h:dev-1', 'h:dev-10', 'h:dev-2', 'é', 'a b', '', 'AAAAAAAA_', 'AAAAAAAA-',
  ]
  const ns = hashes.map((h) => numbers.numberOf(h))
  const sorted = Int32Array.from(ns).sort(numbers.compare)
  assert.deepEqual(Array.from(sorted, (n) => numbers.hashes[n]), [...new Set(hashes)].sort())
})
