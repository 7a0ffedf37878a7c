import assert from 'node:assert/strict'
import { test } from 'node:test'
import { withLength } from '../../src/lib/typed-arrays.ts'

test('withLength: the array itself while long enough, else a copy at least twice as long', () => {
  const small = Int32Array.of(1, 2, 3)
  assert.equal(withLength(small, 3), small)
  const grown = withLength(small, 4)
  assert.ok(grown instanceof Int32Array)
  assert.deepEqual(Array.from(grown), [1, 2, 3, 0, 0, 0])
  assert.equal(withLength(small, 10).length, 10)
})

test('withLength: new elements take the fill value, old ones stay', () => {
  const hours = withLength(Float64Array.of(7), 3, NaN)
  assert.ok(hours instanceof Float64Array)
  assert.equal(hours[0], 7)
  assert.ok(Number.isNaN(hours[1]!) && Number.isNaN(hours[2]!))
  assert.equal(withLength(new Float64Array(0), 1, NaN).length, 1)
})
