import { EventEmitter } from 'node:events'
import { Redis } from 'ioredis'
import { inSpan, tracingOn } from './tracing.ts'

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

/** How long a request may wait for Redis before it is decided in process (REDIS_COMMAND_TIMEOUT_MS). */
export const DEFAULT_REDIS_COMMAND_TIMEOUT_MS = 250
/** While Redis answers no command, one request per this period tries it again (the others do not wait). */
const RETRY_SHARED_MS = 1000

export interface RedisRateLimiterEvents {
  /** `fallback` true: Redis became unusable and decisions are taken in process; false: shared again. */
  fallback: [fallback: boolean, cause: unknown]
}

/**
 * The token buckets in Redis, shared by every service process. Redis being down or stuck
 * must neither take the API down nor switch the limits off: then each process decides with an
 * in-process limiter of the same rates (so N processes allow up to N times the rate), until
 * Redis answers again. No request waits for a Redis that is not connected (no offline queue),
 * nor longer than the command timeout for one that stopped answering; and once Redis has
 * failed, only one request per second tries it again. The switches are announced with the
 * `fallback` event (logged and exposed as metrics by the HTTP layer).
 */
export class RedisRateLimiter extends EventEmitter<RedisRateLimiterEvents> implements RateLimiter {
  readonly #redis: Redis
  readonly #local = new MemoryRateLimiter()
  #fallback = false
  #lastError: unknown
  /** While in fallback with Redis connected: when a request may try Redis again, and whether one is. */
  #retryAt = 0
  #probing = false
  #closing = false
  readonly #commandTimeoutMs: number
  /** Until the first connection is made or fails: the first requests wait for it (at most the command timeout). */
  #firstConnection: Promise<void> | undefined
  /** Decisions taken in process because Redis could not be used, since start. */
  readonly fallbackDecisions = { allowed: 0, limited: 0 }

  constructor(url: string, options: { commandTimeoutMs?: number } = {}) {
    super()
    this.#commandTimeoutMs = options.commandTimeoutMs ?? DEFAULT_REDIS_COMMAND_TIMEOUT_MS
    this.#redis = new Redis(url, {
      commandTimeout: this.#commandTimeoutMs,
      // Fail at once rather than queue while disconnected; a take lost with its connection is
      // not sent again after the reconnect (it was answered from the fallback meanwhile).
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      autoResendUnfulfilledCommands: false,
      connectTimeout: 2000,
      // Reconnect at most a second apart, so the shared limits resume soon after Redis does.
      retryStrategy: (times) => Math.min(times * 100, 1000),
    })
    this.#redis.on('error', (err) => { this.#lastError = err })
    this.#redis.on('close', () => { if (!this.#closing) this.#setFallback(true, this.#lastError ?? new Error('connection to Redis closed')) })
    this.#redis.on('ready', () => this.#setFallback(false, undefined))
    this.#firstConnection = new Promise<void>((resolve) => {
      const settled = () => {
        this.#firstConnection = undefined
        this.#redis.off('ready', settled).off('close', settled)
        resolve()
      }
      this.#redis.on('ready', settled).on('close', settled)
    })
  }

  /** True while decisions are taken in process because Redis cannot be used. */
  get fallback(): boolean {
    return this.#fallback
  }

  /** Why Redis cannot be used, while `fallback`. */
  get fallbackCause(): unknown {
    return this.#fallback ? this.#lastError : undefined
  }

  async take(bucket: string, rate: number, burst: number): Promise<RateDecision> {
    if (this.#firstConnection !== undefined) await this.#startingUp(this.#firstConnection)
    if (this.#redis.status === 'ready' && (!this.#fallback || (!this.#probing && performance.now() >= this.#retryAt))) {
      const probe = this.#fallback
      if (probe) this.#probing = true
      try {
        const [allowed, waitMs] = (await this.#eval(bucket, rate, burst)) as [number, number]
        this.#setFallback(false, undefined)
        return allowed === 1 ? { allowed: true, retryAfterS: 0 } : { allowed: false, retryAfterS: Math.max(1, Math.ceil(waitMs / 1000)) }
      } catch (err) {
        this.#retryAt = performance.now() + RETRY_SHARED_MS
        this.#lastError = err
        this.#setFallback(true, err)
      } finally {
        if (probe) this.#probing = false
      }
    }
    // Not connected (also while the first connection is being made), failed, or waiting to retry.
    const decision = await this.#local.take(bucket, rate, burst)
    if (decision.allowed) this.fallbackDecisions.allowed++
    else this.fallbackDecisions.limited++
    return decision
  }

  /** The bucket's script; with tracing, a client span (never the bucket's name: a key or an address). */
  #eval(bucket: string, rate: number, burst: number): Promise<unknown> {
    if (!tracingOn()) return this.#redis.eval(TAKE_SCRIPT, 1, `kns:rl:${bucket}`, rate, burst)
    return inSpan('EVAL rate limit', { kind: 'client', childOnly: true, attributes: { 'db.system.name': 'redis', 'db.operation.name': 'EVAL' } },
      () => this.#redis.eval(TAKE_SCRIPT, 1, `kns:rl:${bucket}`, rate, burst))
  }

  async #startingUp(connection: Promise<void>): Promise<void> {
    let timer: NodeJS.Timeout | undefined
    await Promise.race([connection, new Promise<void>((resolve) => { timer = setTimeout(resolve, this.#commandTimeoutMs) })])
    clearTimeout(timer)
  }

  #setFallback(fallback: boolean, cause: unknown): void {
    if (fallback === this.#fallback) return
    this.#fallback = fallback
    if (!fallback) this.#lastError = undefined
    this.emit('fallback', fallback, cause)
  }

  async close(): Promise<void> {
    this.#closing = true
    // quit() lets a connected Redis finish what it was sent; a stuck or absent one gets disconnect().
    if (this.#redis.status === 'ready') await this.#redis.quit().catch(() => {})
    this.#redis.disconnect()
  }
}

export function createRateLimiter(redisUrl: string | undefined, commandTimeoutMs = DEFAULT_REDIS_COMMAND_TIMEOUT_MS): RateLimiter {
  return redisUrl === undefined ? new MemoryRateLimiter() : new RedisRateLimiter(redisUrl, { commandTimeoutMs })
}
