import type { FastifyInstance } from 'fastify'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { OidcClient as Client } from '../../accounts/clients.ts'
import type { Service } from '../../service.ts'
import { API_KEY_SECURITY, requireScope } from '../auth.ts'
import { BODY_LIMITS } from '../json-body.ts'
import { withErrors } from '../../contract/api-schemas.ts'
import { AddOidcClient, ListOidcClients, RemoveOidcClient } from '../../contract/accounts-operations.ts'

function present(c: Client) {
  return {
    clientId: c.clientId, name: c.name, redirectUris: c.redirectUris, confidential: c.confidential, builtIn: c.builtIn,
    createdAt: c.createdAt === null ? null : new Date(c.createdAt).toISOString(), grantTypes: c.grantTypes, scope: c.scope, keyIds: c.keyIds,
  }
}

/** `kns oidc client ...` as admin routes: the login provider's relying parties, under the `admin` scope. */
export async function adminOidcRoutes(fastify: FastifyInstance, { service }: { service: Service }): Promise<void> {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>()
  const guard = requireScope(service, 'oidc')
  const tags = ['login admin']
  const { clients } = service.accounts

  app.post('/api/v1/admin/oidc/clients', {
    onRequest: guard,
    // A CAMARA client's JWKS (a few public keys, up to 16 KiB) is the largest part.
    bodyLimit: BODY_LIMITS.text,
    schema: {
      tags, security: API_KEY_SECURITY, summary: 'Register a relying party of the login provider',
      description: 'Exact redirect URIs (https; http only on localhost), refused when browsers and RFC 3986 parsers could read them differently. A confidential client\'s secret is in this answer only. ' +
        'With `grantType` a CAMARA client: `jwks` (its public keys) and `scope` required; client_credentials takes no redirect URI; authorization_code takes redirect URIs on one host.',
      body: AddOidcClient.body, response: withErrors({ 201: AddOidcClient.answer }),
    },
  }, async (request, reply) => {
    const { client, secret } = await clients.add(request.body)
    return reply.status(201).send({ ...present(client), clientSecret: secret })
  })

  app.get('/api/v1/admin/oidc/clients', {
    onRequest: guard,
    schema: { tags, security: API_KEY_SECURITY, summary: 'The login provider\'s clients (never their secrets)', response: withErrors({ 200: ListOidcClients.answer }) },
  }, async () => ({ clients: (await clients.list()).map(present) }))

  app.delete('/api/v1/admin/oidc/clients/:clientId', {
    onRequest: guard,
    schema: { tags, security: API_KEY_SECURITY, summary: 'Remove a client (for the built-in one: the redirect URIs added to it)', params: RemoveOidcClient.params, response: withErrors({ 200: RemoveOidcClient.answer }) },
  }, async (request) => {
    const found = await clients.get(request.params.clientId)
    await clients.remove(request.params.clientId)
    return present(found!)
  })
}
