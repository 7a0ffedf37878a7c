import { test } from 'node:test'
import assert from 'node:assert/strict'
import { AnswerFloor, type AnswerFloorOptions } from '../../src/lib/answer-floor.ts'

/** A floor on a hand-moved clock, recording how long each hold waited. */
function floorAt(options: Partial<AnswerFloorOptions> = {}) {
  let now = 1000
  const waits: number[] = []
  const floor = new AnswerFloor({
    minMs: 20, maxMs: 1000, window: 20, quantile: 0.95, ...options,
    now: () => now,
    wait: async (ms) => { waits.push(ms); now += ms },
  })
  /** One call that works `workMs`, of the slow kind or not; returns when it answered, ms after its start. */
  const call = async (workMs: number, slow: boolean) => {
    const started = floor.start()
    now += workMs
    if (slow) floor.slow(started)
    await floor.hold(started)
    return now - started
  }
  return { floor, waits, call }
}

test('before any slow answer, every answer is held until the minimum', async () => {
  const { call } = floorAt()
  assert.equal(await call(2, false), 20)
  assert.equal(await call(7, true), 20)
})

test('the floor follows the slow answers: their 95th percentile, and a fast answer comes when a slow one would', async () => {
  const { floor, call } = floorAt()
  for (let i = 1; i <= 20; i++) await call(30 + i, true) // 31 ... 50 ms
  assert.equal(floor.floorMs, 49, 'the 19th of 20: all but the slowest 5 %')
  assert.equal(await call(3, false), 49)
  assert.equal(await call(80, true), 80, 'a slow answer past the floor is not held')
  assert.equal(floor.floorMs, 50, 'the window moved on: 32 ... 50 and 80')
})

test('only the latest `window` slow answers count, and the floor stays within min and max', async () => {
  const { floor, call } = floorAt({ window: 4, maxMs: 200 })
  for (const ms of [500, 500, 500, 500]) await call(ms, true)
  assert.equal(floor.floorMs, 200, 'capped: a stalled database does not hold every answer for long')
  for (const ms of [1, 2, 3, 4]) await call(ms, true)
  assert.equal(floor.floorMs, 20, 'the stall forgotten, and never below the minimum')
})

test('an answer already past the floor is not held', async () => {
  const { waits, call } = floorAt()
  assert.equal(await call(35, false), 35)
  assert.deepEqual(waits, [])
})

test('refuses options that make no floor', () => {
  assert.throws(() => new AnswerFloor({ minMs: 30, maxMs: 20, window: 8, quantile: 0.9 }), RangeError)
  assert.throws(() => new AnswerFloor({ minMs: 0, maxMs: 20, window: 0, quantile: 0.9 }), RangeError)
  assert.throws(() => new AnswerFloor({ minMs: 0, maxMs: 20, window: 8, quantile: 0 }), RangeError)
})
