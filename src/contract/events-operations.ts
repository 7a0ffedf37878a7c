/** Each webhook administration operation: its schemas, each with one realistic example (see api-operations.ts). */
import { exemplified, exemplifiedParams } from './examples.ts'
import {
  CreatedWebhook, DeliveriesQuery, DeliveryList, EventParams, NewWebhook, Replayed, TestDelivery, Webhook, WebhookList, WebhookListQuery, WebhookParams,
} from './events-schemas.ts'

const WEBHOOK_ID = 'whk_53fa53f0400f79687f517297'
const EVENT_ID = 'evt_0d113246f1002fb8037e56b21dc5a977'
const WEBHOOK = {
  id: WEBHOOK_ID, keyId: 'acme-bank', url: 'https://bank.example.com/hooks/kns', events: ['approval.approved' as const, 'approval.cancelled' as const, 'approval.expired' as const],
  createdAt: '2026-11-02T10:31:45.012Z', delivery: { state: 'active' as const, consecutiveFailures: 0, pausedUntil: null },
}
const AS_ANSWERED = { summary: 'The subscription', value: WEBHOOK }

/** POST /api/v1/admin/webhooks */
export const AddWebhook = {
  body: exemplified(NewWebhook, { summary: 'Every decision on Acme Bank\'s approvals', value: { keyId: 'acme-bank', url: 'https://bank.example.com/hooks/kns' } }),
  answer: exemplified(CreatedWebhook, { summary: 'The subscription and its secret, shown once', value: { ...WEBHOOK, secret: 'whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD' } }),
}

/** GET /api/v1/admin/webhooks */
export const ListWebhooks = {
  querystring: exemplifiedParams(WebhookListQuery, { keyId: 'acme-bank' }),
  answer: exemplified(WebhookList, { summary: 'One live subscription', value: { webhooks: [WEBHOOK] } }),
}

/** DELETE /api/v1/admin/webhooks/{id} */
export const RemoveWebhook = {
  params: exemplifiedParams(WebhookParams, { id: WEBHOOK_ID }),
  answer: exemplified(Webhook, AS_ANSWERED),
}

/** POST /api/v1/admin/webhooks/{id}/test */
export const TestWebhook = {
  params: exemplifiedParams(WebhookParams, { id: WEBHOOK_ID }),
  answer: exemplified(TestDelivery, { summary: 'The endpoint took it', value: { eventId: EVENT_ID, delivered: true, status: 204, error: null } }),
}

/** GET /api/v1/admin/webhook-deliveries */
export const ListDeliveries = {
  querystring: exemplifiedParams(DeliveriesQuery, { failed: 'true', keyId: 'acme-bank', limit: '20' }),
  answer: exemplified(DeliveryList, {
    summary: 'A delivery given up after its last attempt',
    value: {
      deliveries: [{
        id: 1842, eventId: EVENT_ID, type: 'approval.approved', approvalNumber: '22c855f9b4801ff9e0d8c2ec', webhookId: WEBHOOK_ID,
        url: 'https://bank.example.com/hooks/kns', state: 'failed', attempts: 8, lastStatus: 503, lastError: 'answered HTTP 503: Service Unavailable',
        nextAttemptAt: null, createdAt: '2026-11-27T08:02:11.400Z', finishedAt: '2026-11-28T08:02:13.950Z',
      }],
    },
  }),
}

/** POST /api/v1/admin/webhook-events/{eventId}/replay */
export const ReplayEvent = {
  params: exemplifiedParams(EventParams, { eventId: EVENT_ID }),
  answer: exemplified(Replayed, { summary: 'Queued for one subscription', value: { eventId: EVENT_ID, deliveries: 1 } }),
}
