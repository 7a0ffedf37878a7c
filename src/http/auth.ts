import type { FastifyReply, FastifyRequest, preHandlerAsyncHookHandler } from 'fastify'
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

async function limit(service: Service, request: FastifyRequest, bucket: string, rate: number): Promise<void> {
  let decision
  try {
    decision = await service.rateLimiter.take(bucket, rate, rate * BURST_FACTOR)
  } catch (err) {
    // A shared limiter that is down must not take the API down with it: fail open, loudly.
    request.log.warn({ err }, 'rate limiter unavailable; request allowed')
    return
  }
  if (!decision.allowed) throw new RateLimitedError(`rate limit exceeded; retry in ${decision.retryAfterS} s`, decision.retryAfterS)
}

/** preHandler: valid, unrevoked `x-api-key` with `scope`, within the key's rate. */
export function requireScope(service: Service, scope: Scope): preHandlerAsyncHookHandler {
  return async function apiKeyGuard(request: FastifyRequest, _reply: FastifyReply) {
    const header = request.headers['x-api-key']
    const key = await service.apiKeys.authenticate(Array.isArray(header) ? header[0] : header)
    if (!key.scopes.includes(scope)) throw new ForbiddenError(`this API key lacks the "${scope}" scope`)
    request.apiKey = key
    await limit(service, request, `key:${key.id}`, key.rate)
  }
}

/** preHandler for endpoints without a key: a per-client-IP budget (PUBLIC_RATE_LIMIT). */
export function publicRateLimit(service: Service): preHandlerAsyncHookHandler {
  const rate = service.config.publicRateLimit
  return async function ipGuard(request: FastifyRequest, _reply: FastifyReply) {
    if (rate > 0) await limit(service, request, `ip:${request.ip}`, rate)
  }
}

export const API_KEY_SECURITY = [{ apiKey: [] }]
