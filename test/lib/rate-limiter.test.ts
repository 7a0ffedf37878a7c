/**
 * Token-bucket rate limiters: the in-process one with an injected clock, and the Redis one
 * (shared between service processes) against the local Redis, skipped when it is not running.
 */
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { connect } from 'node:net'
import { after, before, describe, test } from 'node:test'
import { Redis } from 'ioredis'
import { createRateLimiter, MemoryRateLimiter, RedisRateLimiter, type RateDecision } from '../../src/lib/rate-limiter.ts'

const ALLOWED: RateDecision = { allowed: true, retryAfterS: 0 }

function clock() {
  let now = 1_000
  return { now: () => now, advance: (ms: number) => { now += ms } }
}

async function takeMany(limiter: { take(b: string, r: number, burst: number): Promise<RateDecision> }, bucket: string, rate: number, burst: number, n: number) {
  const out: RateDecision[] = []
  for (let i = 0; i < n; i++) out.push(await limiter.take(bucket, rate, burst))
  return out
}

describe('MemoryRateLimiter', () => {
  test('a new bucket allows a burst of `burst` requests, then refuses with Retry-After', async () => {
    const c = clock()
    const limiter = new MemoryRateLimiter(c.now)
    const decisions = await takeMany(limiter, 'k', 2, 4, 4)
    assert.deepEqual(decisions, Array(4).fill(ALLOWED))
    assert.deepEqual(await limiter.take('k', 2, 4), { allowed: false, retryAfterS: 1 })
    // Time has not moved: still refused.
    assert.equal((await limiter.take('k', 2, 4)).allowed, false)
  })

  test('tokens refill at `rate` per second, fractions accumulate, refused requests cost nothing', async () => {
    const c = clock()
    const limiter = new MemoryRateLimiter(c.now)
    await takeMany(limiter, 'k', 2, 2, 2)
    c.advance(250) // half a token
    assert.equal((await limiter.take('k', 2, 2)).allowed, false)
    c.advance(250) // the second half: one whole token, the refusal took nothing
    assert.deepEqual(await limiter.take('k', 2, 2), ALLOWED)
    assert.equal((await limiter.take('k', 2, 2)).allowed, false)
    c.advance(1000) // two tokens
    assert.deepEqual(await takeMany(limiter, 'k', 2, 2, 2), [ALLOWED, ALLOWED])
    assert.equal((await limiter.take('k', 2, 2)).allowed, false)
  })

  test('the bucket never holds more than `burst` tokens, however long it was idle', async () => {
    const c = clock()
    const limiter = new MemoryRateLimiter(c.now)
    await limiter.take('k', 10, 3)
    c.advance(3_600_000)
    const decisions = await takeMany(limiter, 'k', 10, 3, 4)
    assert.deepEqual(decisions.map((d) => d.allowed), [true, true, true, false])
  })

  test('retryAfterS is the whole seconds until the next token, at least 1', async () => {
    const c = clock()
    const limiter = new MemoryRateLimiter(c.now)
    // 0.25 tokens/s: an empty bucket needs 4 s.
    assert.deepEqual(await limiter.take('slow', 0.25, 1), ALLOWED)
    assert.deepEqual(await limiter.take('slow', 0.25, 1), { allowed: false, retryAfterS: 4 })
    c.advance(2500) // 0.625 tokens: 1.5 s to go -> 2
    assert.deepEqual(await limiter.take('slow', 0.25, 1), { allowed: false, retryAfterS: 2 })
    c.advance(1400) // 0.975 tokens: 0.1 s to go -> rounded up to 1
    assert.deepEqual(await limiter.take('slow', 0.25, 1), { allowed: false, retryAfterS: 1 })
    c.advance(100)
    assert.deepEqual(await limiter.take('slow', 0.25, 1), ALLOWED)
    // A fast bucket: less than a second to wait still says 1.
    await takeMany(limiter, 'fast', 100, 1, 1)
    assert.deepEqual(await limiter.take('fast', 100, 1), { allowed: false, retryAfterS: 1 })
  })

  test('buckets are independent', async () => {
    const c = clock()
    const limiter = new MemoryRateLimiter(c.now)
    await takeMany(limiter, 'key:a', 1, 1, 1)
    assert.equal((await limiter.take('key:a', 1, 1)).allowed, false)
    assert.deepEqual(await limiter.take('key:b', 1, 1), ALLOWED)
    assert.deepEqual(await limiter.take('ip:127.0.0.1', 1, 1), ALLOWED)
  })

  test('createRateLimiter picks the in-process limiter without REDIS_URL', async () => {
    const limiter = createRateLimiter(undefined)
    assert.ok(limiter instanceof MemoryRateLimiter)
    await limiter.close()
  })
})

const REDIS_URL = 'redis://127.0.0.1:6379'

function reachable(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1')
    const done = (ok: boolean) => { socket.destroy(); resolve(ok) }
    socket.setTimeout(500, () => done(false))
    socket.once('connect', () => done(true))
    socket.once('error', () => done(false))
  })
}

const redisUp = await reachable(6379)

describe('RedisRateLimiter', { skip: redisUp ? false : `no Redis at ${REDIS_URL}` }, () => {
  const run = randomUUID()
  const limiters: RedisRateLimiter[] = []
  let a: RedisRateLimiter
  let b: RedisRateLimiter
  const bucket = (name: string) => `test:${run}:${name}`

  before(() => {
    a = new RedisRateLimiter(REDIS_URL)
    b = new RedisRateLimiter(REDIS_URL)
    limiters.push(a, b)
  })

  after(async () => {
    const admin = new Redis(REDIS_URL, { lazyConnect: true })
    try {
      await admin.connect()
      const keys = await admin.keys(`kns:rl:test:${run}:*`)
      if (keys.length > 0) await admin.del(...keys)
    } finally {
      admin.disconnect()
      for (const limiter of limiters) await limiter.close()
    }
  })

  test('two limiter instances (two service processes) share one bucket', async () => {
    const k = bucket('shared')
    assert.deepEqual(await a.take(k, 1, 3), ALLOWED)
    assert.deepEqual(await b.take(k, 1, 3), ALLOWED)
    assert.deepEqual(await a.take(k, 1, 3), ALLOWED)
    assert.deepEqual(await b.take(k, 1, 3), { allowed: false, retryAfterS: 1 })
    assert.deepEqual(await a.take(k, 1, 3), { allowed: false, retryAfterS: 1 })
    // Another bucket is untouched.
    assert.deepEqual(await b.take(bucket('other'), 1, 3), ALLOWED)
  })

  test('concurrent takes from both instances never exceed the burst', async () => {
    const k = bucket('concurrent')
    const decisions = await Promise.all(Array.from({ length: 20 }, (_, i) => (i % 2 === 0 ? a : b).take(k, 0.5, 7)))
    assert.equal(decisions.filter((d) => d.allowed).length, 7)
    for (const d of decisions.filter((d) => !d.allowed)) assert.equal(d.retryAfterS, 2)
  })

  test('tokens refill at `rate` per second (Redis clock)', async () => {
    const k = bucket('refill')
    assert.deepEqual(await takeMany(a, k, 4, 2, 2), [ALLOWED, ALLOWED])
    assert.equal((await b.take(k, 4, 2)).allowed, false)
    await new Promise((resolve) => setTimeout(resolve, 600)) // 2.4 tokens at 4/s, capped at 2
    assert.deepEqual(await takeMany(b, k, 4, 2, 3).then((ds) => ds.map((d) => d.allowed)), [true, true, false])
  })

  test('retryAfterS is the whole seconds until the next token', async () => {
    const k = bucket('slow')
    assert.deepEqual(await a.take(k, 0.25, 1), ALLOWED)
    assert.deepEqual(await b.take(k, 0.25, 1), { allowed: false, retryAfterS: 4 })
  })

  test('createRateLimiter picks Redis when REDIS_URL is set', async () => {
    const limiter = createRateLimiter(REDIS_URL)
    limiters.push(limiter as RedisRateLimiter)
    assert.ok(limiter instanceof RedisRateLimiter)
    assert.deepEqual(await limiter.take(bucket('factory'), 1, 1), ALLOWED)
  })
})

test('an unreachable Redis: take() is decided in process at once (limits still hold), never rejected', async () => {
  const limiter = new RedisRateLimiter('redis://127.0.0.1:1')
  try {
    const started = performance.now()
    const k = `test:${randomUUID()}`
    assert.deepEqual(await limiter.take(k, 1, 1), ALLOWED)
    assert.deepEqual(await limiter.take(k, 1, 1), { allowed: false, retryAfterS: 1 })
    assert.ok(performance.now() - started < 1000)
    assert.equal(limiter.fallback, true)
    assert.deepEqual(limiter.fallbackDecisions, { allowed: 1, limited: 1 })
  } finally {
    await limiter.close()
  }
})
