/** Request and response shapes of the webhook administration routes (docs/events.md). */
import { Type, type Static } from 'typebox'
import { StringEnum } from './string-enum.ts'
import { SINGLE_LINE } from './text.ts'

/** What a vendor can subscribe to: the decisions on its approvals. */
export const DECISION_EVENT_TYPES = ['approval.approved', 'approval.cancelled', 'approval.expired'] as const
export type DecisionEventType = (typeof DECISION_EVENT_TYPES)[number]
const EventTypeName = StringEnum(DECISION_EVENT_TYPES, { description: 'an event type' })
const WebhookId = Type.String({ pattern: '^whk_[0-9a-f]{24}$', description: 'webhook subscription ID' })
const EventId = Type.String({ pattern: '^evt_[0-9a-f]{32}$', description: 'event ID (the `webhook-id` of its deliveries)' })
const KeyId = Type.String({ minLength: 1, maxLength: 64, pattern: SINGLE_LINE, description: 'the API key whose approvals\' events are sent' })
const Instant = Type.String({ format: 'date-time' })

export const NewWebhook = Type.Object({
  keyId: KeyId,
  url: Type.String({ minLength: 1, maxLength: 2048, pattern: SINGLE_LINE, description: 'https URL on a public address (WEBHOOK_ALLOW_PRIVATE lifts both rules for development)' }),
  events: Type.Optional(Type.Array(EventTypeName, { minItems: 1, maxItems: DECISION_EVENT_TYPES.length, description: 'default: every type (a type given twice counts once)' })),
}, { additionalProperties: false })
export type NewWebhook = Static<typeof NewWebhook>

export const Webhook = Type.Object({
  id: WebhookId,
  keyId: Type.String(),
  url: Type.String(),
  events: Type.Array(EventTypeName),
  createdAt: Instant,
  delivery: Type.Object({
    state: StringEnum(['active', 'paused', 'probing'], {
      description: '`paused`: after WEBHOOK_BREAKER_FAILURES failed attempts in a row, nothing is sent until `pausedUntil`; ' +
        '`probing`: the pause is over, one attempt at a time until one succeeds. Nothing pending is given up meanwhile.',
    }),
    consecutiveFailures: Type.Integer(),
    pausedUntil: Type.Union([Instant, Type.Null()]),
  }),
})
export const CreatedWebhook = Type.Object({
  ...Webhook.properties,
  secret: Type.String({ description: 'the Standard Webhooks signing secret (`whsec_...`): shown only in this answer; stored encrypted' }),
})
export const WebhookList = Type.Object({ webhooks: Type.Array(Webhook) })
export const WebhookParams = Type.Object({ id: WebhookId })
export const WebhookListQuery = Type.Object({ keyId: Type.Optional(KeyId) }, { additionalProperties: false })

export const TestDelivery = Type.Object({
  eventId: EventId,
  delivered: Type.Boolean(),
  status: Type.Union([Type.Integer(), Type.Null()], { description: 'the endpoint\'s HTTP status, null when it was not reached' }),
  error: Type.Union([Type.String(), Type.Null()]),
})

export const Delivery = Type.Object({
  id: Type.Integer(),
  eventId: Type.String(),
  type: Type.String(),
  approvalNumber: Type.Union([Type.String(), Type.Null()]),
  webhookId: Type.String(),
  url: Type.String(),
  state: StringEnum(['pending', 'delivered', 'failed']),
  attempts: Type.Integer(),
  lastStatus: Type.Union([Type.Integer(), Type.Null()]),
  lastError: Type.Union([Type.String(), Type.Null()]),
  nextAttemptAt: Type.Union([Instant, Type.Null()]),
  createdAt: Instant,
  finishedAt: Type.Union([Instant, Type.Null()]),
})
export const DeliveryList = Type.Object({ deliveries: Type.Array(Delivery) })
export const DeliveriesQuery = Type.Object({
  failed: Type.Optional(StringEnum(['true', 'false'], { description: 'true: given-up deliveries only' })),
  keyId: Type.Optional(KeyId),
  limit: Type.Optional(Type.String({ pattern: '^(1000|[1-9][0-9]{0,2})$', description: 'at most this many (1-1000, default 50)' })),
}, { additionalProperties: false })
export const EventParams = Type.Object({ eventId: EventId })
export const Replayed = Type.Object({ eventId: EventId, deliveries: Type.Integer({ description: 'deliveries queued (one per live subscription that takes the event\'s type)' }) })
