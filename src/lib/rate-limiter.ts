import { Redis } from 'ioredis'

export interface RateDecision {
  allowed: boolean
  /** Whole seconds until one request would be allowed again (0 when allowed). */
  retryAfterS: number
}

/**
 * Token bucket: `rate` tokens per second, holding at most `burst`. One request takes one
 * token. Implementations: one per process (default) or shared through Redis.
 */
export interface RateLimiter {
  take(bucket: string, rate: number, burst: number): Promise<RateDecision>
  close(): Promise<void>
}

export class MemoryRateLimiter implements RateLimiter {
  readonly #buckets = new Map<string, { tokens: number; at: number }>()
  readonly #now: () => number

  constructor(now: () => number = () => performance.now()) {
    this.#now = now
  }

  async take(bucket: string, rate: number, burst: number): Promise<RateDecision> {
    const now = this.#now()
    const state = this.#buckets.get(bucket)
    let tokens = burst
    if (state !== undefined) tokens = Math.min(burst, state.tokens + ((now - state.at) / 1000) * rate)
    if (tokens >= 1) {
      this.#remember(bucket, tokens - 1, now)
      return { allowed: true, retryAfterS: 0 }
    }
    this.#remember(bucket, tokens, now)
    return { allowed: false, retryAfterS: Math.max(1, Math.ceil((1 - tokens) / rate)) }
  }

  #remember(bucket: string, tokens: number, at: number): void {
    // Bound memory under a flood of distinct clients: full buckets are the default state.
    if (this.#buckets.size > 100_000) this.#buckets.clear()
    this.#buckets.set(bucket, { tokens, at })
  }

  async close(): Promise<void> {}
}

// Atomic refill-and-take in Redis, keyed per bucket, with the server's clock so that all
// service processes agree. Returns {allowed (0/1), milliseconds until a token}.
const TAKE_SCRIPT = `
local rate = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local state = redis.call('HMGET', KEYS[1], 'tokens', 'at')
local tokens = burst
if state[1] then
  tokens = math.min(burst, tonumber(state[1]) + (now - tonumber(state[2])) * rate / 1000)
end
local allowed = 0
local wait = 0
if tokens >= 1 then
  tokens = tokens - 1
  allowed = 1
else
  wait = math.ceil((1 - tokens) * 1000 / rate)
end
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'at', tostring(now))
redis.call('PEXPIRE', KEYS[1], math.ceil(burst * 1000 / rate) + 1000)
return {allowed, wait}
`

export class RedisRateLimiter implements RateLimiter {
  readonly #redis: Redis

  constructor(url: string) {
    this.#redis = new Redis(url, { lazyConnect: false, maxRetriesPerRequest: 2, enableOfflineQueue: true })
    this.#redis.on('error', () => {})
  }

  async take(bucket: string, rate: number, burst: number): Promise<RateDecision> {
    const [allowed, waitMs] = (await this.#redis.eval(TAKE_SCRIPT, 1, `kns:rl:${bucket}`, rate, burst)) as [number, number]
    return allowed === 1 ? { allowed: true, retryAfterS: 0 } : { allowed: false, retryAfterS: Math.max(1, Math.ceil(waitMs / 1000)) }
  }

  async close(): Promise<void> {
    await this.#redis.quit().catch(() => {})
  }
}

export function createRateLimiter(redisUrl: string | undefined): RateLimiter {
  return redisUrl === undefined ? new MemoryRateLimiter() : new RedisRateLimiter(redisUrl)
}
