import { webhookHeaders } from './signature.ts'

/**
 * How a subscription's deliveries are written on the wire:
 * - `standard-webhooks`: a vendor's endpoint (`kns webhook add`): Standard Webhooks headers, the
 *   body signed with the subscription's secret (signature.ts);
 * - `cloudevents`: a CAMARA subscription's sink: the CloudEvents HTTP binding in structured mode
 *   (`application/cloudevents+json`, the event is the body), with the sink credential the
 *   subscriber gave (`Authorization: Bearer`, CAMARA's ACCESSTOKEN) when it gave one, and the
 *   event's ID as `x-correlator` (Commonalities: the callback takes one).
 * Both share the outbox, the claims, retries, the breaker and the guarded client.
 */
export const DELIVERY_FORMATS = ['standard-webhooks', 'cloudevents'] as const
export type DeliveryFormat = (typeof DELIVERY_FORMATS)[number]

/** What a `cloudevents` subscription keeps sealed in place of a signing secret. */
export interface SinkCredential {
  /** The bearer token sent to the sink; absent: no Authorization header. */
  accessToken?: string
}

export function sealableSinkCredential(credential: SinkCredential): string {
  return JSON.stringify(credential.accessToken === undefined ? {} : { accessToken: credential.accessToken })
}

/** The headers of one attempt, from the subscription's opened secret (a signing secret, or a sink credential). */
export function deliveryHeaders(format: DeliveryFormat, opened: string, eventId: string, body: string, nowMs: number): Record<string, string> {
  if (format === 'standard-webhooks') return webhookHeaders(opened, eventId, body, nowMs)
  const credential = JSON.parse(opened) as SinkCredential
  return {
    'content-type': 'application/cloudevents+json',
    'user-agent': 'kns-webhooks/1',
    'x-correlator': eventId,
    ...(typeof credential.accessToken === 'string' ? { authorization: `Bearer ${credential.accessToken}` } : {}),
  }
}
