import type { FastifyReply, FastifyRequest } from 'fastify'
import { ForbiddenError, RateLimitedError } from '../errors.ts'
import type { ApiKey, Scope } from '../keys/api-keys.ts'
import type { Service } from '../service.ts'

declare module 'fastify' {
  interface FastifyRequest {
    /** The authenticated key, on routes guarded by requireScope. */
    apiKey: ApiKey | null
  }
}

/** Bucket depth: a key may burst to twice its per-second rate. */
const BURST_FACTOR = 2

async function limit(service: Service, _request: FastifyRequest, bucket: string, rate: number): Promise<void> {
  // Never rejects: a shared limiter that cannot reach Redis decides in process instead (see
  // RedisRateLimiter), so the limits hold and the API stays up; observability logs the switch.
  const decision = await service.rateLimiter.take(bucket, rate, rate * BURST_FACTOR)
  if (!decision.allowed) throw new RateLimitedError(`rate limit exceeded; retry in ${decision.retryAfterS} s`, decision.retryAfterS)
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
    await limit(service, request, `key:${key.id}`, key.rate)
  }
}

/** For endpoints without a key: a per-client-IP budget (PUBLIC_RATE_LIMIT), as onRequest. */
export function publicRateLimit(service: Service): Guard {
  const rate = service.config.publicRateLimit
  return async function ipGuard(request: FastifyRequest, _reply: FastifyReply) {
    if (rate > 0) await limit(service, request, `ip:${request.ip}`, rate)
  }
}

export const API_KEY_SECURITY = [{ apiKey: [] }]
