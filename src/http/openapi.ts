import swagger from '@fastify/swagger'
import type { FastifyInstance } from 'fastify'
import type { Service } from '../service.ts'

const DESCRIPTION = `Phone-number identity on the Sui ledger.

* **Area A**: registration with zkLogin addresses, ledger-backed approvals.
* **Area B**: caller verification (PASSporT / STIR-SHAKEN) and number -> token -> registries lookup.
* **Errors**: every error response has the \`ErrorBody\` shape; \`code\` is stable.
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
        securitySchemes: { apiKey: { type: 'apiKey', in: 'header', name: 'x-api-key' } },
      },
      tags: [
        { name: 'identity', description: 'Registration (area A)' },
        { name: 'approvals', description: 'Approval requests and their verification (area A)' },
        { name: 'caller', description: 'Caller verification (area B)' },
        { name: 'ledger', description: 'Embedded ledger operations (LEDGER=local only)' },
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
