/**
 * The CAMARA APIs (SIM Swap, Device Swap), in their own encapsulated context: their error
 * handler answers in CAMARA's shape, their onSend hook echoes `x-correlator`, and neither
 * reaches the rest of the API, which keeps the service's shape.
 */
import type { FastifyInstance } from 'fastify'
import { camaraAudience } from '../../camara/access.ts'
import { CamaraTokens } from '../../camara/access-token.ts'
import type { Service } from '../../service.ts'
import { echoCorrelator } from './correlator.ts'
import { useCamaraErrors } from './errors.ts'
import { SWAP_APIS, swapRoutes } from './swap-routes.ts'

/** The verifier of CAMARA access tokens: the login provider's keys and issuer, this service's API root as the audience. */
export function camaraTokens(service: Service): CamaraTokens {
  return new CamaraTokens({
    db: service.db, keys: service.accounts.keys, issuer: service.accounts.provider.issuer, audience: camaraAudience(service.config.publicBaseUrl),
  })
}

export async function camaraRoutes(app: FastifyInstance, { service }: { service: Service }): Promise<void> {
  app.decorateRequest('camaraAccess', null)
  useCamaraErrors(app)
  app.addHook('onSend', echoCorrelator)
  const tokens = camaraTokens(service)
  for (const api of SWAP_APIS) await app.register(swapRoutes, { prefix: api.prefix, service, tokens, api })
}
