/**
 * The CAMARA APIs (SIM Swap, Device Swap), in their own encapsulated context: their error
 * handler answers in CAMARA's shape, their onSend hook echoes `x-correlator`, and neither
 * reaches the rest of the API, which keeps the service's shape.
 */
import type { FastifyInstance } from 'fastify'
import { CamaraTokens } from '../../camara/access-token.ts'
import type { Service } from '../../service.ts'
import type { OtherShedShape } from '../admission.ts'
import type { OtherErrorShape } from '../transport.ts'
import { correlatorEcho, echoCorrelator } from './correlator.ts'
import { asCamaraError, camaraErrorBody, camaraErrorHeaders, useCamaraErrors } from './errors.ts'
import { SWAP_APIS, swapRoutes } from './swap-routes.ts'
import { SUBSCRIPTIONS_PREFIX, subscriptionRoutes } from './subscription-routes.ts'

/** The verifier of CAMARA access tokens: the login provider's keys, issuer and clients, this service's API root as the audience. */
export function camaraTokens(service: Service): CamaraTokens {
  return new CamaraTokens(service)
}

export async function camaraRoutes(app: FastifyInstance, { service }: { service: Service }): Promise<void> {
  app.decorateRequest('camaraAccess', null)
  useCamaraErrors(app)
  app.addHook('onSend', echoCorrelator)
  const tokens = camaraTokens(service)
  for (const api of SWAP_APIS) await app.register(swapRoutes, { prefix: api.prefix, service, tokens, api })
  await app.register(subscriptionRoutes, { prefix: SUBSCRIPTIONS_PREFIX, service, tokens })
}

/** The versions served, `{apiRoot}/<api>/<version>`. */
const SERVED = [...SWAP_APIS.map((api) => api.prefix), SUBSCRIPTIONS_PREFIX]

/**
 * Under a CAMARA API's path, any version (`/sim-swap`, `/sim-swap/v2/...`, `/sim-swap/v1/...`):
 * a bank calling a version not served gets CAMARA's 404, not the service's shape.
 */
export function isCamaraPath(path: string): boolean {
  return SERVED.map((prefix) => prefix.slice(0, prefix.lastIndexOf('/'))).some((api) => path === api || path.startsWith(`${api}/`))
}

/**
 * A request shed by admission control (503, before Fastify) under a CAMARA prefix: CAMARA's
 * UNAVAILABLE, the correlator echoed. As cheap as the service's own answer: a prefix test.
 */
export const camaraShedShape: OtherShedShape = (req, status, message) => {
  if (!isCamaraPath((req.url ?? '/').split('?', 1)[0]!)) return undefined
  return { body: JSON.stringify({ status, code: 'UNAVAILABLE', message }), headers: correlatorEcho(req) }
}

/**
 * A framework error (a URL that does not decode), or no route at all (an unknown path, another
 * version), under a CAMARA API's path, in CAMARA's shape with the correlator echoed: no CAMARA
 * route matched, so neither its error handler nor its hooks run.
 */
export const camaraFrameworkErrors: OtherErrorShape = (request, path, failure) => {
  if (!isCamaraPath(path)) return undefined
  const { error, allow } = asCamaraError(failure, request)
  return { status: error.status, body: camaraErrorBody(error), headers: { ...camaraErrorHeaders(error, allow), ...correlatorEcho(request) } }
}
