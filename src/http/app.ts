import { addressMatcher } from '../lib/address-ranges.ts'
import { addressGroup } from '../lib/client-address.ts'
import { Admission, useAdmission } from './admission.ts'
import type { Ajv } from 'ajv'
import Fastify, { type FastifyInstance, type FastifyServerOptions } from 'fastify'
import type { Registry } from 'prom-client'
import type { Service } from '../service.ts'
import { requestIdFrom } from './error-body.ts'
import { registerErrorHandling } from './errors.ts'
import { useJsonParser } from './json-body.ts'
import { requireHost, trackRouteGuards, transportOptions, type GuardOf } from './transport.ts'
import { registerObservability } from './observability.ts'
import { registerOpenApi } from './openapi.ts'
import { traceRequests } from './request-spans.ts'
import { traceLogOptions } from '../lib/tracing.ts'
import { accountsRoutes } from './routes/accounts.ts'
import { approvalRoutes } from './routes/approvals.ts'
import { callerRoutes } from './routes/caller.ts'
import { identityRoutes } from './routes/identity.ts'
import { ledgerRoutes } from './routes/ledger.ts'
import { pageRoutes } from './routes/pages.ts'
import { adminStatsRoutes } from './routes/admin-stats.ts'
import { adminWebhookRoutes } from './routes/admin-webhooks.ts'
import { adminOidcRoutes } from './routes/admin-oidc.ts'
import { adminSimChangeRoutes } from './routes/admin-sim-changes.ts'
import { camaraFrameworkErrors, camaraRoutes, camaraShedShape } from './camara/plugin.ts'
import { statsRoutes } from './routes/stats.ts'
import { stirRoutes, stirSigningRoutes } from './routes/stir.ts'
import { ErrorBody } from '../contract/api-schemas.ts'
import { CamaraErrorInfo } from '../contract/camara-schemas.ts'
import { EXAMPLES_KEYWORD } from '../contract/examples.ts'

export const BODY_LIMIT = 64 * 1024

/**
 * Fastify's Ajv, as every route's request is validated (test/http/openapi-examples.test.ts
 * validates the documented examples with it too). The examples' keyword is an annotation.
 */
export const VALIDATION = {
  customOptions: { coerceTypes: false, removeAdditional: true, allErrors: false },
  plugins: [(ajv: Ajv) => ajv.addKeyword(EXAMPLES_KEYWORD)],
}

export interface AppOptions {
  /** pino options, or false for no logs (tests). */
  logger?: FastifyServerOptions['logger']
  /** Other interfaces of this process whose metrics /metrics shows (the SIP server). */
  metrics?: Array<{ register(registry: Registry): void }>
}

/** The log line of a request: path and query keys only (query values can be capabilities). */
function serializeRequest(request: { method: string; url: string; id: unknown; ip?: string }) {
  const [path, query] = request.url.split('?', 2)
  const keys = query === undefined ? '' : `?${[...new URLSearchParams(query).keys()].map((k) => `${k}=…`).join('&')}`
  return { id: request.id, method: request.method, url: `${path}${keys}`, ip: request.ip }
}

/**
 * TRUST_PROXY as Fastify (proxy-addr) takes it. A hop count trusts that many addresses from the
 * right of X-Forwarded-For, the socket's peer first (Express's rule); Fastify's own number
 * option now trusts none, so it is given as that function. With hops, the service must be
 * reachable only through the proxies (docs/operations.md).
 */
function proxyTrust(setting: false | number | string[]): false | string[] | ((address: string, hop: number) => boolean) {
  if (typeof setting === 'number') return (_address, hop) => hop < setting
  return setting
}

export async function buildApp(service: Service, options: AppOptions = {}): Promise<FastifyInstance> {
  const logger = options.logger === false ? false : {
    level: service.config.logLevel,
    redact: { paths: ['req.headers["x-api-key"]', 'req.headers.authorization', 'req.headers.cookie'], censor: '[redacted]' },
    serializers: { req: serializeRequest },
    // trace_id and span_id on each line written inside a span (nothing when tracing is off).
    ...traceLogOptions(),
    ...(typeof options.logger === 'object' ? options.logger : {}),
  }
  const app = Fastify({
    logger,
    bodyLimit: BODY_LIMIT,
    trustProxy: proxyTrust(service.config.trustProxy),
    requestIdHeader: false,
    genReqId: (req) => requestIdFrom(req.headers['x-request-id']),
    ajv: VALIDATION,
    // Admission's gate answers requests that arrive while the server closes (503 in the error
    // shape, with Retry-After); Fastify's own answer had neither.
    return503OnClosing: false,
    ...transportOptions(service.config, (path, method) => guardOf(path, method), camaraFrameworkErrors),
  })
  const guardOf: GuardOf = trackRouteGuards(app)
  // Before every hook: a request refused by admission is traced too.
  traceRequests(app)
  const { config } = service
  const trust = proxyTrust(config.trustProxy)
  const admission = new Admission({
    maxConnections: config.maxConnections, maxConnectionsPerIp: config.maxConnectionsPerIp, maxInFlight: config.maxInFlight,
    maxInFlightPerClient: config.maxInFlightPerClient > 0 ? config.maxInFlightPerClient : Math.max(1, Math.floor(config.maxInFlight / 2)),
    queueBudgetMs: config.queueBudgetMs, busyKeepAliveMs: config.keepAliveBusyMs, keepAliveMs: config.keepAliveTimeoutMs,
    lagLimitMs: config.shedLagMs,
  }, {
    loginPath: service.accounts.provider.mountPath,
    // A trusted proxy carries many clients on its connections: only clients' own are capped per address.
    trustedPeer: typeof trust === 'function' ? () => true : trust === false ? () => false : addressMatcher(trust),
    // Fairness between clients: a key that authenticated before, else the client address as the
    // rest of the app derives it. An unverified x-api-key is no identity: rotating made-up keys
    // must not buy a share each; nor may the addresses of one IPv6 /64 (addressGroup).
    clientOf: (request) => {
      const header = request.headers['x-api-key']
      const keyId = typeof header === 'string' ? service.apiKeys.verifiedId(header) : null
      return keyId === null ? `ip:${addressGroup(request.ip)}` : `key:${keyId}`
    },
    // The CAMARA routes' 503s in CAMARA's shape.
    otherShape: camaraShedShape,
  })
  // First of all hooks: a request refused here costs no parsing, no key check, nothing.
  useAdmission(app, admission)
  app.addHook('onRequest', requireHost)
  // JSON only: without this, Fastify would accept text/plain bodies as strings.
  app.removeContentTypeParser('text/plain')
  useJsonParser(app)
  app.decorateRequest('apiKey', null)
  // Callback style: hooks run on every request, and an async one costs a promise each time.
  const hsts = service.config.hstsMaxAgeS > 0 && service.config.publicBaseUrl.startsWith('https:') ? `max-age=${service.config.hstsMaxAgeS}` : null
  app.addHook('onSend', (request, reply, payload, done) => {
    reply.header('x-request-id', request.id)
    // Answers carry phone numbers, addresses and capabilities: no cache keeps them unless a
    // route says otherwise (the public statistics, the pages' assets).
    if (!reply.hasHeader('cache-control')) reply.header('cache-control', 'no-store')
    if (hsts !== null) reply.header('strict-transport-security', hsts)
    done(null, payload)
  })

  app.addSchema(ErrorBody)
  app.addSchema(CamaraErrorInfo)
  registerErrorHandling(app, camaraFrameworkErrors)
  // `transaction_details?wait=` can hold a request for a minute: on shutdown every wait answers
  // at once (with the approval's current state), so closing does not wait them out.
  app.addHook('preClose', (done) => {
    service.decisionWaiters.close()
    done()
  })
  await registerOpenApi(app, service)
  registerObservability(app, service, [admission, ...(options.metrics ?? [])])
  service.accounts.useLogger(app.log)
  await app.register(identityRoutes, { service })
  await app.register(approvalRoutes, { service })
  await app.register(callerRoutes, { service })
  await app.register(stirRoutes, { service })
  await app.register(stirSigningRoutes, { service })
  await app.register(ledgerRoutes, { service })
  await app.register(pageRoutes, { service })
  await app.register(statsRoutes, { service })
  await app.register(adminStatsRoutes, { service })
  await app.register(adminWebhookRoutes, { service })
  await app.register(accountsRoutes, { service })
  await app.register(adminOidcRoutes, { service })
  await app.register(adminSimChangeRoutes, { service })
  // Encapsulated: CAMARA's error shape and x-correlator on its routes only.
  await app.register(camaraRoutes, { service })
  return app
}
