import { test } from 'node:test'
import assert from 'node:assert/strict'
import { KeyCounts } from '../../src/lib/key-counts.ts'

test('KeyCounts: counts per key, a key forgotten at 0, never below 0', () => {
  const counts = new KeyCounts()
  counts.add('a')
  counts.add('a')
  counts.add('b')
  assert.deepEqual([counts.get('a'), counts.get('b'), counts.get('c'), counts.size], [2, 1, 0, 2])
  counts.remove('b')
  assert.deepEqual([counts.get('b'), counts.size], [0, 1])
  counts.remove('b')
  assert.deepEqual([counts.get('b'), counts.size], [0, 1], 'a key at 0 stays forgotten')
  counts.remove('a')
  counts.remove('a')
  assert.equal(counts.size, 0)
})
