/**
 * Cached numbers expire spread over the last quarter of the TTL, never after it: numbers
 * resolved together must not all be resolved again in the same instant (the soak benchmark's
 * five-minute storm), and a ledger change is still seen within the TTL.
 */
import assert from 'node:assert/strict'
import { after, before, mock, test } from 'node:test'
import { KeyDirectory } from '../../src/caller/key-directory.ts'
import type { Database } from '../../src/db/engine.ts'
import { startHarness, type Harness } from '../helpers.ts'

let h: Harness
before(async () => { h = await startHarness() })
after(async () => {
  mock.timers.reset()
  await h.close()
})

test('entries expire between 0.75 and 1 x the TTL, spread', async () => {
  let reads = 0
  const db = h.service.db
  // Every resolution of a number starts with one read of its link: count them.
  const counting = new Proxy(db, {
    get(target, name, receiver) {
      const value = Reflect.get(target, name, receiver)
      if (name !== 'get' && name !== 'all') return typeof value === 'function' ? value.bind(target) : value
      return (...args: unknown[]) => { reads++; return (value as (...a: unknown[]) => unknown).apply(target, args) }
    },
  }) as Database
  const ttlMs = 60_000
  const directory = new KeyDirectory(counting, h.service.ledger, { ttlMs })
  const phones = Array.from({ length: 400 }, (_, i) => `+4420${String(70_000_000 + i)}`)
  mock.timers.enable({ apis: ['Date'], now: 1_000_000 })
  const resolveAll = async () => {
    const before = reads
    for (const phone of phones) await directory.resolve(phone)
    return reads - before
  }
  const first = await resolveAll()
  assert.equal(first, phones.length, 'one read per unknown number')
  mock.timers.tick(0.74 * ttlMs)
  assert.equal(await resolveAll(), 0, 'nothing expires before 0.75 x the TTL')
  mock.timers.tick(0.14 * ttlMs)
  const some = await resolveAll()
  assert.ok(some > 0 && some < first, `at 0.88 x the TTL some entries, not all, were resolved again: ${some} of ${first}`)
  mock.timers.tick(0.13 * ttlMs)
  // At 1.01 x the TTL from the first resolution everything first cached has expired; those
  // re-resolved at 0.88 x are still fresh.
  const rest = await resolveAll()
  assert.equal(rest, first - some, 'every entry not resolved again at 0.88 x had expired by the TTL')
  mock.timers.reset()
})
