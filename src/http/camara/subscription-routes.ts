/**
 * CAMARA SIM Swap Subscriptions (`/sim-swap-subscriptions/v0.3`, 0.3.0): a client subscribes
 * an https sink to a number's SIM swaps; the events go out as CloudEvents through the webhook
 * machinery (src/camara/subscriptions/). Each client sees only its own subscriptions, and a
 * three-legged caller only its number's.
 */
import type { FastifyInstance } from 'fastify'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import { CAMARA_SCOPES, FRAUD_PREVENTION_PURPOSE } from '../../camara/access.ts'
import type { CamaraTokens } from '../../camara/access-token.ts'
import { CamaraError } from '../../camara/camara-error.ts'
import { subscriptionView } from '../../camara/subscriptions/subscription-view.ts'
import { CamaraRequestHeaders } from '../../contract/camara-operations.ts'
import { withCamaraErrors } from '../../contract/camara-schemas.ts'
import { CreateSubscription, DeleteSubscription, GetSubscription, ListSubscriptions } from '../../contract/camara-subscriptions-operations.ts'
import type { Service } from '../../service.ts'
import { BODY_LIMITS } from '../json-body.ts'
import { camaraGuard } from './auth.ts'

export const SUBSCRIPTIONS_PREFIX = '/sim-swap-subscriptions/v0.3'
const [CREATE, READ, DELETE] = CAMARA_SCOPES.simSwapSubscriptions
const security = (scope: string) => [{ openId: [scope, FRAUD_PREVENTION_PURPOSE] }]
const tags = ['sim-swap-subscriptions']

export async function subscriptionRoutes(fastify: FastifyInstance, { service, tokens }: { service: Service; tokens: CamaraTokens }): Promise<void> {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>()
  const subscriptions = service.camaraSubscriptions

  app.setNotFoundHandler(async (request) => {
    throw new CamaraError(404, 'NOT_FOUND', `The specified resource is not found: ${request.method} ${request.url.split('?', 1)[0]}`)
  })

  app.post('/subscriptions', {
    onRequest: camaraGuard(service, tokens, [CREATE]),
    bodyLimit: BODY_LIMITS.text,
    schema: {
      tags, summary: 'Create a SIM swap subscription for a phone number',
      description: 'The sink hears `org.camaraproject.sim-swap-subscriptions.v0.swapped` (a CloudEvent, `application/cloudevents+json`, with ' +
        '`Authorization: Bearer` the sink credential\'s token) for each SIM change (or activation) of the number recorded after the subscription ' +
        'starts, and `...subscription-ended` with its reason when it ends (expiry, subscriptionMaxEvents, a minute before the sink token expires, ' +
        'deletion). Delivered at least once, retried for a day. Two-legged: `config.subscriptionDetail.phoneNumber` is required (422 ' +
        'MISSING_IDENTIFIER); three-legged: the token\'s number (a phoneNumber is 422 UNNECESSARY_IDENTIFIER). One live subscription per ' +
        'client, number and sink (409 ALREADY_EXISTS).',
      security: security(CREATE), headers: CamaraRequestHeaders, body: CreateSubscription.body,
      response: withCamaraErrors({ 201: CreateSubscription.answer }),
    },
  }, async (request, reply) => {
    const created = await subscriptions.create(request.camaraAccess!, request.body)
    return reply.status(201).send(subscriptionView(created))
  })

  app.get('/subscriptions', {
    onRequest: camaraGuard(service, tokens, [READ]),
    schema: {
      tags, summary: 'The client\'s SIM swap subscriptions',
      description: 'Live and ended ones (not deleted), newest first, at most 1000; a three-legged caller sees its own number\'s only.',
      security: security(READ), headers: CamaraRequestHeaders, response: withCamaraErrors({ 200: ListSubscriptions.answer }),
    },
  }, async (request) => (await subscriptions.list(request.camaraAccess!)).map(subscriptionView))

  app.get('/subscriptions/:subscriptionId', {
    onRequest: camaraGuard(service, tokens, [READ]),
    schema: {
      tags, summary: 'A SIM swap subscription', description: 'Another client\'s subscription, or a deleted one, is 404 NOT_FOUND.',
      security: security(READ), headers: CamaraRequestHeaders, params: GetSubscription.params, response: withCamaraErrors({ 200: GetSubscription.answer }),
    },
  }, async (request) => subscriptionView(await subscriptions.get(request.camaraAccess!, request.params.subscriptionId)))

  app.delete('/subscriptions/:subscriptionId', {
    onRequest: camaraGuard(service, tokens, [DELETE]),
    schema: {
      tags, summary: 'Delete a SIM swap subscription',
      description: 'It ends now: the sink hears `subscription-ended` (SUBSCRIPTION_DELETED) after anything queued before it.',
      security: security(DELETE), headers: CamaraRequestHeaders, params: DeleteSubscription.params,
      response: withCamaraErrors({ 204: { type: 'null', description: 'Deleted' } }),
    },
  }, async (request, reply) => {
    await subscriptions.delete(request.camaraAccess!, request.params.subscriptionId)
    return reply.status(204).send()
  })
}
