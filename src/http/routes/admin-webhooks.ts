import type { FastifyInstance } from 'fastify'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import { listDeliveries, replayEvent, type DeliveryRecord } from '../../events/webhooks/deliveries.ts'
import { addSubscription, breakerState, listSubscriptions, removeSubscription, type Subscription } from '../../events/webhooks/subscriptions.ts'
import { sendTestEvent } from '../../events/webhooks/test-event.ts'
import type { Service } from '../../service.ts'
import { API_KEY_SECURITY, requireScope } from '../auth.ts'
import { BODY_LIMITS } from '../json-body.ts'
import { withErrors } from '../../contract/api-schemas.ts'
import { AddWebhook, ListDeliveries, ListWebhooks, RemoveWebhook, ReplayEvent, TestWebhook } from '../../contract/events-operations.ts'

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString())

export function presentWebhook(s: Subscription, breakerFailures: number) {
  return {
    id: s.id, keyId: s.keyId, url: s.url, events: s.events, createdAt: new Date(s.createdAt).toISOString(),
    delivery: { state: breakerState(s, breakerFailures), consecutiveFailures: s.consecutiveFailures, pausedUntil: iso(s.pausedUntil) },
  }
}

export function presentDelivery(d: DeliveryRecord) {
  return {
    id: d.id, eventId: d.eventId, type: d.type, approvalNumber: d.approvalNumber, webhookId: d.subscriptionId, url: d.url, state: d.state,
    attempts: d.attempts, lastStatus: d.lastStatus, lastError: d.lastError, nextAttemptAt: iso(d.nextAttemptAt),
    createdAt: new Date(d.createdAt).toISOString(), finishedAt: iso(d.finishedAt),
  }
}

/** `kns webhook ...` as admin routes: the same operations, under the `webhooks` scope. */
export async function adminWebhookRoutes(fastify: FastifyInstance, { service }: { service: Service }): Promise<void> {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>()
  const breaker = service.config.webhookBreakerFailures
  const guard = requireScope(service, 'webhooks')
  const tags = ['webhooks admin']
  const { db, events } = service

  app.post('/api/v1/admin/webhooks', {
    onRequest: guard,
    bodyLimit: BODY_LIMITS.small,
    schema: {
      tags, security: API_KEY_SECURITY,
      summary: 'Subscribe an endpoint to the events of one API key\'s approvals',
      description: 'The answer holds the signing secret, shown only here. Deliveries follow Standard Webhooks (docs/events.md).',
      body: AddWebhook.body,
      response: withErrors({ 201: AddWebhook.answer }),
    },
  }, async (request, reply) => {
    const created = await addSubscription(db, events.box, request.body, { allowPrivate: service.config.webhookAllowPrivate })
    return reply.status(201).send({ ...presentWebhook(created, breaker), secret: created.secret })
  })

  app.get('/api/v1/admin/webhooks', {
    onRequest: guard,
    schema: { tags, security: API_KEY_SECURITY, summary: 'Live webhook subscriptions (never their secrets)', querystring: ListWebhooks.querystring, response: withErrors({ 200: ListWebhooks.answer }) },
  }, async (request) => ({ webhooks: (await listSubscriptions(db, request.query.keyId === undefined ? {} : { keyId: request.query.keyId })).map((w) => presentWebhook(w, breaker)) }))

  app.delete('/api/v1/admin/webhooks/:id', {
    onRequest: guard,
    schema: {
      tags, security: API_KEY_SECURITY, summary: 'Remove a subscription',
      description: 'Nothing more is sent to it; its deliveries still pending are given up.',
      params: RemoveWebhook.params, response: withErrors({ 200: RemoveWebhook.answer }),
    },
  }, async (request) => presentWebhook(await removeSubscription(db, request.params.id), breaker))

  app.post('/api/v1/admin/webhooks/:id/test', {
    onRequest: guard,
    schema: {
      tags, security: API_KEY_SECURITY, summary: 'Send a `webhook.test` event to this endpoint now',
      description: 'One attempt at once; its outcome is the answer. A failed one is retried on the normal schedule.',
      params: TestWebhook.params, response: withErrors({ 200: TestWebhook.answer }),
    },
  }, async (request) => sendTestEvent(db, events.deliveries, request.params.id))

  app.get('/api/v1/admin/webhook-deliveries', {
    onRequest: guard,
    schema: { tags, security: API_KEY_SECURITY, summary: 'Deliveries, newest first', querystring: ListDeliveries.querystring, response: withErrors({ 200: ListDeliveries.answer }) },
  }, async (request) => {
    const { failed, keyId, limit } = request.query
    const found = await listDeliveries(db, { limit: Number(limit ?? 50), failed: failed === 'true', ...(keyId === undefined ? {} : { keyId }) })
    return { deliveries: found.map(presentDelivery) }
  })

  app.post('/api/v1/admin/webhook-events/:eventId/replay', {
    onRequest: guard,
    schema: {
      tags, security: API_KEY_SECURITY, summary: 'Send an event again (same webhook-id and body) to every live subscription that takes it',
      params: ReplayEvent.params, response: withErrors({ 200: ReplayEvent.answer }),
    },
  }, async (request) => {
    const replayed = await replayEvent(db, request.params.eventId)
    events.decided()
    return replayed
  })
}
