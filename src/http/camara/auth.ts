/**
 * Who may call the CAMARA routes, checked in onRequest hooks (nothing of the body is read for
 * a caller refused here): the client address's budget (before any signature is verified), the
 * access token (401 UNAUTHENTICATED), the client's own budget (429 TOO_MANY_REQUESTS), and the
 * operation's scopes with the fraud-prevention purpose (403 PERMISSION_DENIED).
 */
import type { FastifyReply, FastifyRequest } from 'fastify'
import { allows, FRAUD_PREVENTION_PURPOSE, type CamaraAccess } from '../../camara/access.ts'
import type { CamaraTokens } from '../../camara/access-token.ts'
import { CamaraError } from '../../camara/camara-error.ts'
import type { Config } from '../../config.ts'
import type { Service } from '../../service.ts'
import { publicRateLimit, type Guard } from '../auth.ts'

declare module 'fastify' {
  interface FastifyRequest {
    /** What the access token grants, on the CAMARA routes (set by camaraAuthentication). */
    camaraAccess: CamaraAccess | null
  }
}

/**
 * A client's budget on the CAMARA APIs, per second (twice that as a burst), shared by its
 * tokens: `config.camaraRateLimit` when the configuration has it (0: no limit), else 100. The
 * clients of the login provider have no rate of their own (API keys do): this is the one place
 * that reads it.
 */
export const DEFAULT_CAMARA_CLIENT_RATE = 100
export function camaraClientRate(config: Config): { perSecond: number; burst: number } {
  const configured = (config as Config & { camaraRateLimit?: number }).camaraRateLimit
  const perSecond = typeof configured === 'number' && configured >= 0 ? configured : DEFAULT_CAMARA_CLIENT_RATE
  return { perSecond, burst: perSecond * 2 }
}

/** The rate-limiter bucket of a client's CAMARA calls. */
export const camaraClientBucket = (clientId: string): string => `camara:${clientId}`

/** The access token, verified, within the client's budget. */
export function camaraAuthentication(service: Service, tokens: CamaraTokens): Guard {
  const perAddress = publicRateLimit(service)
  return async function camaraTokenGuard(request: FastifyRequest, reply: FastifyReply) {
    await perAddress(request, reply)
    const access = await tokens.verify(request.headers.authorization)
    request.camaraAccess = access
    const { perSecond, burst } = camaraClientRate(service.config)
    if (perSecond === 0) return
    const decision = await service.rateLimiter.take(camaraClientBucket(access.clientId), perSecond, burst)
    if (!decision.allowed) throw new CamaraError(429, 'TOO_MANY_REQUESTS', `Rejected due to request rate limit overpassed: retry in ${decision.retryAfterS} s.`, decision.retryAfterS)
  }
}

/**
 * The operation's scopes (any one of `anyOf`, as the definitions list alternatives) and the
 * purpose every CAMARA token of this service must carry.
 */
export function requireCamaraScopes(anyOf: readonly string[]): Guard {
  return async function camaraScopeGuard(request: FastifyRequest, _reply: FastifyReply) {
    const access = request.camaraAccess
    if (access === null) throw new CamaraError(401, 'UNAUTHENTICATED', 'Request not authenticated due to missing, invalid, or expired credentials.')
    if (!access.scopes.has(FRAUD_PREVENTION_PURPOSE)) throw new CamaraError(403, 'PERMISSION_DENIED', `The access token lacks the purpose ${FRAUD_PREVENTION_PURPOSE}.`)
    if (!allows(access, anyOf)) throw new CamaraError(403, 'PERMISSION_DENIED', `The access token lacks a scope for this operation (one of: ${anyOf.join(', ')}).`)
  }
}
