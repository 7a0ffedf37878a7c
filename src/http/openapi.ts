import swagger from '@fastify/swagger'
import type { FastifyInstance } from 'fastify'
import type { Service } from '../service.ts'

const DESCRIPTION = `Phone-number identity on the Sui ledger.

* **Area A**: registration with zkLogin addresses, ledger-backed approvals.
* **Area B**: caller verification (PASSporT / STIR-SHAKEN) and number -> token -> registries lookup.
* **Errors**: every error response has the \`ErrorBody\` shape; \`code\` is stable. The CAMARA APIs (SIM Swap,
  Device Swap, SIM Swap Subscriptions) answer theirs in CAMARA's \`CamaraErrorInfo\` shape instead, and take a bearer access token (\`openId\`).
* **Auth**: endpoints marked "needs an x-api-key" (with a security requirement) need \`x-api-key\` with the named scope;
  401 for a missing, unknown or revoked key, 403 for a missing scope, 429 past the key's rate
  (with \`Retry-After\`). Endpoints without a key are rate limited per client IP.
* **Approval states**: \`pending\` -> \`approved\` | \`cancelled\`; a pending request becomes
  \`expired\` at \`expiresAt\`. Only the token's owner can approve.`

/** OpenAPI 3.1 at /openapi.json, generated from the route schemas (the reference page at /docs draws it). */
export async function registerOpenApi(app: FastifyInstance, service: Service): Promise<void> {
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: { title: 'KNS: number identity, caller verification and public statistics', version: '1.0.0', description: DESCRIPTION },
      servers: [{ url: service.config.publicBaseUrl }],
      components: {
        securitySchemes: {
          apiKey: { type: 'apiKey', in: 'header', name: 'x-api-key' },
          // The CAMARA APIs: a JWT access token of this service's login provider (docs/camara.md).
          openId: { type: 'openIdConnect', openIdConnectUrl: `${service.accounts.provider.issuer}/.well-known/openid-configuration` },
        },
      },
      tags: [
        { name: 'identity', description: 'Registration (area A)' },
        { name: 'approvals', description: 'Approval requests and their verification (area A)' },
        { name: 'caller', description: 'Caller verification (area B)' },
        { name: 'ledger', description: 'Embedded ledger operations (LEDGER=local only)' },
        { name: 'sim-swap', description: 'CAMARA SIM Swap 2.1.0 (/sim-swap/v2): errors in CAMARA\'s shape `{status, code, message}`, `x-correlator` echoed' },
        { name: 'device-swap', description: 'CAMARA Device Swap 1.0.0 (/device-swap/v1): errors in CAMARA\'s shape `{status, code, message}`, `x-correlator` echoed' },
        { name: 'sim-swap-subscriptions', description: 'CAMARA SIM Swap Subscriptions 0.3.0 (/sim-swap-subscriptions/v0.3): a number\'s SIM swaps as CloudEvents at an https sink; errors in CAMARA\'s shape `{status, code, message}`, `x-correlator` echoed' },
      ],
    },
    refResolver: { buildLocalReference: (json, _baseUri, _fragment, i) => String(json.$id ?? `def-${i}`) },
  })
  // One address for the document; the reference page that draws it is /docs (web/docs/, src/http/routes/pages.ts).
  app.get('/openapi.json', { schema: { hide: true } }, async (_request, reply) => {
    reply.header('cache-control', 'no-cache')
    return app.swagger()
  })
}
