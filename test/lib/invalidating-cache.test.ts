import assert from 'node:assert/strict'
import { test } from 'node:test'
import { InvalidatingCache } from '../../src/lib/invalidating-cache.ts'

test('a read that raced an invalidation is not stored; one that did not is', () => {
  const cache = new InvalidatingCache<string, number>(10)
  const before = cache.begin()
  cache.delete('a') // a change signalled while the read was in flight (even for another key)
  assert.equal(cache.set('a', 1, before), false)
  assert.equal(cache.get('a'), undefined)
  assert.equal(cache.set('a', 2, cache.begin()), true)
  assert.equal(cache.get('a'), 2)
})

test('by tag: every entry derived from it goes, the others stay; null drops all', () => {
  const cache = new InvalidatingCache<string, string>(10)
  cache.set('+1', 'one', cache.begin(), ['token:x', 'keystore:k'])
  cache.set('+2', 'two', cache.begin(), ['token:y', 'keystore:k'])
  cache.set('+3', 'three', cache.begin(), ['token:z'])
  cache.invalidate('keystore:k')
  assert.deepEqual([cache.get('+1'), cache.get('+2'), cache.get('+3')], [undefined, undefined, 'three'])
  cache.invalidate('token:y') // nothing left under it: a no-op
  cache.invalidate(null)
  assert.equal(cache.size, 0)
})

test('re-stored entries drop their old tags; past the bound it starts over', () => {
  const cache = new InvalidatingCache<string, number>(2)
  cache.set('a', 1, cache.begin(), ['t1'])
  cache.set('a', 2, cache.begin(), ['t2'])
  cache.invalidate('t1')
  assert.equal(cache.get('a'), 2, 'the old tag no longer names it')
  cache.set('b', 3, cache.begin())
  cache.set('c', 4, cache.begin())
  assert.deepEqual([cache.get('a'), cache.get('b'), cache.get('c'), cache.size], [undefined, undefined, 4, 1])
})
