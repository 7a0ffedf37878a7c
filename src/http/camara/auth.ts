/**
 * Who may call the CAMARA routes, checked in an onRequest hook (nothing of the body is read for
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
import { checkCorrelator } from './correlator.ts'

declare module 'fastify' {
  interface FastifyRequest {
    /** What the access token grants, on the CAMARA routes (set by camaraGuard). */
    camaraAccess: CamaraAccess | null
  }
}

/**
 * A client's budget on the CAMARA APIs, per second (twice that as a burst), shared by its
 * tokens. The login provider's clients have no rate of their own (API keys do): a client gets
 * what a key made without `--rate` gets (DEFAULT_KEY_RATE). The one place that reads it.
 */
export function camaraClientRate(config: Config): { perSecond: number; burst: number } {
  return { perSecond: config.defaultKeyRate, burst: config.defaultKeyRate * 2 }
}

/** The rate-limiter bucket of a client's CAMARA calls. */
export const camaraClientBucket = (clientId: string): string => `camara:${clientId}`

/** The client's budget (429 TOO_MANY_REQUESTS with Retry-After past it). */
async function withinClientRate(service: Service, clientId: string): Promise<void> {
  const { perSecond, burst } = camaraClientRate(service.config)
  const decision = await service.rateLimiter.take(camaraClientBucket(clientId), perSecond, burst)
  if (!decision.allowed) throw new CamaraError(429, 'TOO_MANY_REQUESTS', `Rejected due to request rate limit overpassed: retry in ${decision.retryAfterS} s.`, decision.retryAfterS)
}

/**
 * The purpose every CAMARA token of this service must carry, and one of the operation's
 * scopes (`anyOf`: the definitions list alternatives, e.g. `sim-swap:check` or `sim-swap`).
 */
function requirePurposeAndScope(access: CamaraAccess, anyOf: readonly string[]): void {
  if (!access.scopes.has(FRAUD_PREVENTION_PURPOSE)) throw new CamaraError(403, 'PERMISSION_DENIED', `The access token lacks the purpose ${FRAUD_PREVENTION_PURPOSE}.`)
  if (!allows(access, anyOf)) throw new CamaraError(403, 'PERMISSION_DENIED', `The access token lacks a scope for this operation (one of: ${anyOf.join(', ')}).`)
}

/**
 * A CAMARA operation's onRequest guard, its checks in order: the client address's budget
 * (before any signature is verified), the access token (401), the client's budget (429), the
 * purpose and scopes (403), then x-correlator (400). One hook: each costs a promise a request.
 */
export function camaraGuard(service: Service, tokens: CamaraTokens, anyOf: readonly string[]): Guard {
  const perAddress = publicRateLimit(service)
  return async function camaraOperationGuard(request: FastifyRequest, reply: FastifyReply) {
    if (service.config.publicRateLimit > 0) await perAddress(request, reply)
    const access = await tokens.verify(request.headers.authorization)
    request.camaraAccess = access
    await withinClientRate(service, access.clientId)
    requirePurposeAndScope(access, anyOf)
    checkCorrelator(request)
  }
}
