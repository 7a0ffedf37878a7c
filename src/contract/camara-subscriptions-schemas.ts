/**
 * Request and response shapes of CAMARA SIM Swap Subscriptions 0.3 (SimSwap r3.3), as this
 * service takes them. The shapes only: the rules CAMARA gives their own codes to (a protocol
 * other than HTTP: INVALID_PROTOCOL, a credential other than an access token:
 * INVALID_CREDENTIAL, ...) are checked by the operation (src/camara/subscriptions/), so the
 * schema lets those values through rather than answering INVALID_ARGUMENT for them.
 */
import { Type, type Static } from 'typebox'
import { CamaraPhoneNumber } from './camara-schemas.ts'
import { StringEnum } from './string-enum.ts'

const SWAPPED = 'org.camaraproject.sim-swap-subscriptions.v0.swapped'
const DateTime = Type.String({ format: 'date-time', maxLength: 64, description: 'RFC 3339 with a time zone' })
const Word = Type.String({ minLength: 1, maxLength: 64 })

export const SubscriptionId = Type.String({ minLength: 1, maxLength: 64, pattern: '^[A-Za-z0-9-]+$', description: 'the subscription\'s ID' })
export const SubscriptionParams = Type.Object({ subscriptionId: SubscriptionId })

const SinkCredential = Type.Object({
  credentialType: Type.String({ minLength: 1, maxLength: 32, description: '`ACCESSTOKEN`, the only kind taken (another: 400 INVALID_CREDENTIAL)' }),
  accessToken: Type.Optional(Type.String({ minLength: 1, maxLength: 4096, description: 'sent to the sink as `Authorization: Bearer`; never shown again' })),
  accessTokenExpiresUtc: Type.Optional(Type.String({ minLength: 1, maxLength: 64, description: 'RFC 3339 (or seconds since the epoch, as CAMARA\'s own example): the subscription ends (ACCESS_TOKEN_EXPIRED) a minute before' })),
  accessTokenType: Type.Optional(Type.String({ minLength: 1, maxLength: 32, description: '`bearer` (another: 400 INVALID_TOKEN)' })),
}, { additionalProperties: false })

const RequestConfig = Type.Object({
  subscriptionDetail: Type.Object({ phoneNumber: Type.Optional(CamaraPhoneNumber) }, { additionalProperties: false }),
  subscriptionExpireTime: Type.Optional(DateTime),
  subscriptionMaxEvents: Type.Optional(Type.Integer({ minimum: 1, maximum: 1_000_000 })),
}, { additionalProperties: false })

export const SubscriptionRequest = Type.Object({
  protocol: Type.String({ minLength: 1, maxLength: 16, description: '`HTTP`, the only protocol offered (another: 400 INVALID_PROTOCOL)' }),
  sink: Type.String({ maxLength: 2048, pattern: '^https:\\/\\/.+$', description: 'the https URL events are POSTed to (CloudEvents, `application/cloudevents+json`); on a public address' }),
  sinkCredential: Type.Optional(SinkCredential),
  types: Type.Array(Word, { minItems: 1, maxItems: 1, description: `[\`${SWAPPED}\`]` }),
  config: RequestConfig,
}, { additionalProperties: false })
export type SubscriptionRequest = Static<typeof SubscriptionRequest>

export const Subscription = Type.Object({
  protocol: StringEnum(['HTTP']),
  sink: Type.String(),
  types: Type.Array(Type.String()),
  config: Type.Object({
    subscriptionDetail: Type.Object({ phoneNumber: Type.Optional(Type.String()) }),
    subscriptionExpireTime: Type.Optional(Type.String()),
    subscriptionMaxEvents: Type.Optional(Type.Integer()),
  }),
  id: SubscriptionId,
  startsAt: Type.String(),
  expiresAt: Type.Optional(Type.String()),
  status: StringEnum(['ACTIVE', 'EXPIRED'], { description: '`EXPIRED`: ended (its expiry, its maximum of events, its sink token\'s expiry); a deleted one is not found' }),
})
export const SubscriptionList = Type.Array(Subscription, { description: 'newest first, at most 1000' })
