/** Each SIM Swap Subscriptions operation: its schemas, each with one realistic example (see api-operations.ts). */
import { exemplified, exemplifiedParams } from './examples.ts'
import { Subscription, SubscriptionList, SubscriptionParams, SubscriptionRequest } from './camara-subscriptions-schemas.ts'

const SWAPPED = 'org.camaraproject.sim-swap-subscriptions.v0.swapped'
const ID = '3f1b6a52-8c1e-4d0c-9c55-2a7e0f6a1d93'
const SINK = 'https://fraud.bank.example/camara/sim-swap'
const SUBSCRIPTION = {
  protocol: 'HTTP' as const, sink: SINK, types: [SWAPPED],
  config: { subscriptionDetail: { phoneNumber: '+447700900123' }, subscriptionExpireTime: '2027-05-29T00:00:00.000Z', subscriptionMaxEvents: 10 },
  id: ID, startsAt: '2026-11-29T09:12:40.118Z', expiresAt: '2027-05-29T00:00:00.000Z', status: 'ACTIVE' as const,
}

/** POST /sim-swap-subscriptions/v0.3/subscriptions */
export const CreateSubscription = {
  body: exemplified(SubscriptionRequest, {
    summary: 'A bank watches a customer\'s number for six months (two-legged token)',
    value: {
      protocol: 'HTTP', sink: SINK, types: [SWAPPED],
      sinkCredential: { credentialType: 'ACCESSTOKEN', accessToken: 'eyJhbGciOiJFUzI1NiJ9.c2luaw.sig', accessTokenExpiresUtc: '2027-05-29T00:00:00Z', accessTokenType: 'bearer' },
      config: { subscriptionDetail: { phoneNumber: '+447700900123' }, subscriptionExpireTime: '2027-05-29T00:00:00Z', subscriptionMaxEvents: 10 },
    },
  }),
  answer: exemplified(Subscription, { summary: 'Live; the sink credential is never shown again', value: SUBSCRIPTION }),
}

/** GET /sim-swap-subscriptions/v0.3/subscriptions */
export const ListSubscriptions = {
  answer: exemplified(SubscriptionList, { summary: 'The client\'s subscriptions', value: [SUBSCRIPTION] }),
}

/** GET /sim-swap-subscriptions/v0.3/subscriptions/{subscriptionId} */
export const GetSubscription = {
  params: exemplifiedParams(SubscriptionParams, { subscriptionId: ID }),
  answer: exemplified(Subscription, { summary: 'The subscription', value: SUBSCRIPTION }),
}

/** DELETE /sim-swap-subscriptions/v0.3/subscriptions/{subscriptionId} */
export const DeleteSubscription = {
  params: exemplifiedParams(SubscriptionParams, { subscriptionId: ID }),
}
