/**
 * CAMARA SIM Swap (`/sim-swap/v2`, 2.1.0) and Device Swap (`/device-swap/v1`, 1.0.0): the same
 * two operations on two families of change records, so one set of routes made twice.
 */
import type { FastifyInstance } from 'fastify'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import { CAMARA_SCOPES, FRAUD_PREVENTION_PURPOSE } from '../../camara/access.ts'
import type { CamaraTokens } from '../../camara/access-token.ts'
import { CamaraError } from '../../camara/camara-error.ts'
import { monitoredDays } from '../../camara/monitored-period.ts'
import { swapCheck } from '../../camara/swap-check.ts'
import { swapRetrieveDate } from '../../camara/swap-retrieve-date.ts'
import { CamaraRequestHeaders, CheckDeviceSwap, CheckSimSwap, RetrieveDeviceSwapDate, RetrieveSimSwapDate } from '../../contract/camara-operations.ts'
import { withCamaraErrors } from '../../contract/camara-schemas.ts'
import type { ChangeFamily } from '../../swaps/latest-change.ts'
import type { Service } from '../../service.ts'
import { BODY_LIMITS } from '../json-body.ts'
import { camaraGuard } from './auth.ts'

export interface SwapApi {
  prefix: string
  tag: string
  family: ChangeFamily
  /** The answer's date field: `latestSimChange` or `latestDeviceChange`. */
  dateField: 'latestSimChange' | 'latestDeviceChange'
  /** What changes, in the operations' summaries. */
  what: string
  check: { scopes: readonly string[]; schemas: typeof CheckSimSwap }
  retrieveDate: { scopes: readonly string[]; schemas: typeof RetrieveSimSwapDate | typeof RetrieveDeviceSwapDate }
}

const [SIM_SWAP, SIM_SWAP_CHECK, SIM_SWAP_DATE] = CAMARA_SCOPES.simSwap
const [DEVICE_SWAP, DEVICE_SWAP_CHECK, DEVICE_SWAP_DATE] = CAMARA_SCOPES.deviceSwap

export const SWAP_APIS: readonly SwapApi[] = [
  {
    prefix: '/sim-swap/v2', tag: 'sim-swap', family: 'sim', dateField: 'latestSimChange', what: 'SIM',
    check: { scopes: [SIM_SWAP_CHECK, SIM_SWAP], schemas: CheckSimSwap },
    retrieveDate: { scopes: [SIM_SWAP_DATE, SIM_SWAP], schemas: RetrieveSimSwapDate },
  },
  {
    prefix: '/device-swap/v1', tag: 'device-swap', family: 'device', dateField: 'latestDeviceChange', what: 'device',
    check: { scopes: [DEVICE_SWAP_CHECK, DEVICE_SWAP], schemas: CheckDeviceSwap },
    retrieveDate: { scopes: [DEVICE_SWAP_DATE, DEVICE_SWAP], schemas: RetrieveDeviceSwapDate },
  },
]

/** The OpenAPI security requirement: the openId scheme with one of the operation's scopes, and the purpose. */
const security = (scopes: readonly string[]) => scopes.map((scope) => ({ openId: [scope, FRAUD_PREVENTION_PURPOSE] }))

const IDENTIFIER_NOTE = 'With a two-legged token (client credentials) `phoneNumber` is required (422 MISSING_IDENTIFIER); ' +
  'with a three-legged token the number is the token\'s, and a `phoneNumber` is 422 UNNECESSARY_IDENTIFIER. ' +
  'A number KNS does not know: 404 IDENTIFIER_NOT_FOUND; a fixed line or service number: 422 SERVICE_NOT_APPLICABLE. ' +
  'The token must carry one of the scopes named and the purpose `dpv:FraudPreventionAndDetection` (403 PERMISSION_DENIED).'

export async function swapRoutes(fastify: FastifyInstance, { service, tokens, api }: { service: Service; tokens: CamaraTokens; api: SwapApi }): Promise<void> {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>()
  const deps = () => ({ db: service.db, monitoredDays: monitoredDays(service.config) })

  // Under the prefix, an unknown path is CAMARA's 404 (the app's hook answers it first; this makes it ours).
  app.setNotFoundHandler(async (request) => {
    throw new CamaraError(404, 'NOT_FOUND', `The specified resource is not found: ${request.method} ${request.url.split('?', 1)[0]}`)
  })

  app.post('/check', {
    onRequest: camaraGuard(service, tokens, api.check.scopes),
    bodyLimit: BODY_LIMITS.small,
    schema: {
      tags: [api.tag],
      summary: `Check ${api.what} swap: has the ${api.what} of the number changed within the last maxAge hours`,
      description: `\`swapped\` is true when KNS holds an activation or ${api.what === 'SIM' ? 'SIM' : 'device'} change of the number at or after now - maxAge ` +
        '(default 240 hours). A maxAge past the monitored period (SIM_SWAP_MONITORED_DAYS) is 400 OUT_OF_RANGE. ' + IDENTIFIER_NOTE,
      security: security(api.check.scopes),
      headers: CamaraRequestHeaders,
      body: api.check.schemas.body,
      response: withCamaraErrors({ 200: api.check.schemas.answer }),
    },
  }, async (request) => swapCheck(deps(), api.family, request.camaraAccess!, request.body))

  app.post('/retrieve-date', {
    onRequest: camaraGuard(service, tokens, api.retrieveDate.scopes),
    bodyLimit: BODY_LIMITS.small,
    schema: {
      tags: [api.tag],
      summary: `Retrieve ${api.what} swap date: when the ${api.what} of the number last changed`,
      description: `The latest ${api.what} change within the monitored period, or the activation when there was none since; ` +
        '`null` with `monitoredPeriod` (days) when KNS keeps none within it. ' + IDENTIFIER_NOTE,
      security: security(api.retrieveDate.scopes),
      headers: CamaraRequestHeaders,
      body: api.retrieveDate.schemas.body,
      response: withCamaraErrors({ 200: api.retrieveDate.schemas.answer }),
    },
  }, async (request) => {
    const { latest, monitoredPeriod } = await swapRetrieveDate(deps(), api.family, request.camaraAccess!, request.body)
    return { [api.dateField]: latest, ...(monitoredPeriod === undefined ? {} : { monitoredPeriod }) }
  })
}
