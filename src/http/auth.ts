import type { FastifyReply, FastifyRequest } from 'fastify'
import { ForbiddenError, RateLimitedError } from '../errors.ts'
import type { ApiKey, Scope } from '../keys/api-keys.ts'
import { addressGroup } from '../lib/client-address.ts'
import type { Service } from '../service.ts'

declare module 'fastify' {
  interface FastifyRequest {
    /** The authenticated key, on routes guarded by requireScope. */
    apiKey: ApiKey | null
  }
}

/** Bucket depth: a key may burst to twice its per-second rate. */
const BURST_FACTOR = 2

async function limit(service: Service, bucket: string, rate: number, burst = rate * BURST_FACTOR, what = 'rate limit'): Promise<void> {
  // Never rejects: a shared limiter that cannot reach Redis decides in process instead (see
  // RedisRateLimiter), so the limits hold and the API stays up; observability logs the switch.
  const decision = await service.rateLimiter.take(bucket, rate, burst)
  if (!decision.allowed) throw new RateLimitedError(`${what} exceeded; retry in ${decision.retryAfterS} s`, decision.retryAfterS)
}

/** A hook usable as onRequest or preHandler. */
export type Guard = (request: FastifyRequest, reply: FastifyReply) => Promise<void>

/**
 * Valid, unrevoked `x-api-key` with `scope`, within the key's rate. Use it as the route's
 * onRequest hook: a caller without a key learns nothing about the body rules, and the body
 * of an unauthenticated request is never read.
 */
export function requireScope(service: Service, scope: Scope): Guard {
  return async function apiKeyGuard(request: FastifyRequest, _reply: FastifyReply) {
    const header = request.headers['x-api-key']
    const key = await service.apiKeys.authenticate(Array.isArray(header) ? header[0] : header)
    if (!key.scopes.includes(scope)) throw new ForbiddenError(`this API key lacks the "${scope}" scope`)
    request.apiKey = key
    await limit(service, `key:${key.id}`, key.rate)
  }
}

/** For endpoints without a key: a per-client budget (PUBLIC_RATE_LIMIT; an IPv6 client by its /64), as onRequest. */
export function publicRateLimit(service: Service): Guard {
  const rate = service.config.publicRateLimit
  return async function ipGuard(request: FastifyRequest, _reply: FastifyReply) {
    if (rate > 0) await limit(service, `ip:${addressGroup(request.ip)}`, rate)
  }
}

/**
 * A per-client-IP budget of `perMinute` requests of one kind (`name`), for work too costly for
 * the general budget (salts, proofs): part of the public limits, off with PUBLIC_RATE_LIMIT=0.
 * Use it as preHandler, so only well-formed requests spend it.
 */
export function perClientPerMinute(service: Service, name: string, perMinute: number): Guard {
  return async function perMinuteGuard(request: FastifyRequest, _reply: FastifyReply) {
    if (service.config.publicRateLimit > 0) await limit(service, `${name}:${addressGroup(request.ip)}`, perMinute / 60, perMinute, `${name} rate limit`)
  }
}

export const API_KEY_SECURITY = [{ apiKey: [] }]
