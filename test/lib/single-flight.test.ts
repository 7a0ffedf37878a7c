import { test } from 'node:test'
import assert from 'node:assert/strict'
import { SingleFlight } from '../../src/lib/single-flight.ts'

test('concurrent runs for one key share one load; other keys and later runs load again', async () => {
  const flights = new SingleFlight<string, number>()
  let loads = 0
  const load = async () => { const n = ++loads; await new Promise((r) => setImmediate(r)); return n }
  const [a, b, c] = await Promise.all([flights.run('x', load), flights.run('x', load), flights.run('y', load)])
  assert.equal(a, b)
  assert.notEqual(a, c)
  assert.equal(loads, 2)
  await flights.run('x', load)
  assert.equal(loads, 3)
})

test('a failed load rejects every caller that shared it, and the next run tries again', async () => {
  const flights = new SingleFlight<string, string>()
  let attempts = 0
  const flaky = async () => { attempts++; if (attempts === 1) throw new Error('down'); return 'up' }
  const shared = await Promise.allSettled([flights.run('k', flaky), flights.run('k', flaky)])
  assert.deepEqual(shared.map((r) => r.status), ['rejected', 'rejected'])
  assert.equal(await flights.run('k', flaky), 'up')
  assert.equal(attempts, 2)
})
