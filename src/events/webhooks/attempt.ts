import { describeOutboundFailure, outboundRequest, OutboundRefusedError, type OutboundOptions } from '../../lib/outbound-http.ts'
import type { SealedBox } from '../../lib/sealed-box.ts'
import { inSpan, markFailed, tracingOn } from '../../lib/tracing.ts'
import type { ClaimedDelivery } from './deliveries.ts'
import { deliveryHeaders } from './delivery-format.ts'

/**
 * Why an attempt failed, as a class (a metric's label, a log line's field; `error` says the
 * rest): the endpoint's answer by status class, no answer in time, no connection, a URL or
 * address the guarded client refused, a subscription removed, a secret that cannot be opened.
 */
export type AttemptFailure = 'http_3xx' | 'http_4xx' | 'http_5xx' | 'http_other' | 'timeout' | 'network' | 'refused' | 'removed' | 'secret'
export const ATTEMPT_FAILURES: readonly AttemptFailure[] = ['http_3xx', 'http_4xx', 'http_5xx', 'http_other', 'timeout', 'network', 'refused', 'removed', 'secret']

/** What one attempt came to. */
export type AttemptOutcome =
  | { delivered: true; status: number }
  | { delivered: false; status: number | null; error: string; reason: AttemptFailure; retry: boolean }

/** Response bytes kept from an endpoint: enough for an error message in `deliveries`. */
export const MAX_RESPONSE_BYTES = 4096

/**
 * One delivery attempt, as Standard Webhooks defines it, step by step:
 * 1. open the subscription's secret (sealed with the server secret);
 * 2. sign `id.timestamp.body` with it (a fresh timestamp per attempt, the same id and body);
 * 3. POST through the guarded outbound client (https, public addresses, deadline, no redirects);
 * 4. judge the answer: any 2xx is delivered; anything else (3xx included: a redirect is not
 *    followed) is a failed attempt to retry. A refused URL or address is retried too: the
 *    name may resolve elsewhere later, and the schedule gives up in a day anyway.
 */
export async function attemptDelivery(delivery: ClaimedDelivery, box: SealedBox, outbound: OutboundOptions, now: () => number): Promise<AttemptOutcome> {
  if (!tracingOn()) return attempt(delivery, box, outbound, now)
  // Continues the trace of what queued the delivery (the decision's request), stored with it.
  return inSpan('webhook delivery', {
    traceparent: delivery.traceparent,
    attributes: { 'kns.webhook.event_id': delivery.eventId, 'kns.webhook.subscription_id': delivery.subscriptionId, 'kns.webhook.attempt': delivery.attempts },
  }, async (span) => {
    const outcome = await attempt(delivery, box, outbound, now)
    span.setAttribute('kns.webhook.delivered', outcome.delivered)
    if (outcome.status !== null) span.setAttribute('http.response.status_code', outcome.status)
    if (!outcome.delivered) markFailed(span, outcome.retry ? 'retry' : 'given_up')
    return outcome
  })
}

async function attempt(delivery: ClaimedDelivery, box: SealedBox, outbound: OutboundOptions, now: () => number): Promise<AttemptOutcome> {
  // Queued by a decision that committed as its subscription was being removed: not sent.
  if (delivery.removed) return { delivered: false, status: null, error: 'subscription removed', reason: 'removed', retry: false }
  let secret: string
  try {
    secret = box.open(delivery.secretSealed)
  } catch {
    // Another server secret than the one it was sealed with: no attempt can ever succeed.
    return { delivered: false, status: null, error: 'the subscription\'s secret cannot be opened (KNS_SECRET changed?)', reason: 'secret', retry: false }
  }
  const headers = deliveryHeaders(delivery.format, secret, delivery.eventId, delivery.body, now())
  let response
  try {
    response = await outboundRequest(delivery.url, { method: 'POST', headers, body: delivery.body, purpose: 'webhook' }, outbound)
  } catch (err) {
    const reason = err instanceof OutboundRefusedError ? 'refused' : err instanceof Error && err.name === 'TimeoutError' ? 'timeout' : 'network'
    return { delivered: false, status: null, error: err instanceof OutboundRefusedError ? `refused: ${err.message}` : describeOutboundFailure(err), reason, retry: true }
  }
  if (response.status >= 200 && response.status < 300) return { delivered: true, status: response.status }
  const said = response.body.toString('utf8').replace(/\s+/g, ' ').trim().slice(0, 200)
  const redirect = response.status >= 300 && response.status < 400 ? ' (redirects are not followed)' : ''
  return { delivered: false, status: response.status, error: `answered HTTP ${response.status}${redirect}${said === '' ? '' : `: ${said}`}`, reason: statusClass(response.status), retry: true }
}

function statusClass(status: number): AttemptFailure {
  if (status >= 300 && status < 400) return 'http_3xx'
  if (status >= 400 && status < 500) return 'http_4xx'
  if (status >= 500 && status < 600) return 'http_5xx'
  return 'http_other'
}

/**
 * When to try again after `attempts` failed attempts: exponential from `baseMs` (5 s by
 * default: 5 s, 10 s, 20 s, ... capped at 4 h), with ±20 % jitter so endpoints coming back
 * are not hit by every sender at once; null (give up) once the next try would fall more than
 * `giveUpAfterMs` (a day) after the delivery was created.
 */
export function nextAttemptAt(attempts: number, createdAt: number, now: number, schedule: { baseMs: number; giveUpAfterMs: number }, random = Math.random): number | null {
  const exponent = Math.min(Math.max(attempts - 1, 0), 30)
  const delay = Math.min(schedule.baseMs * 2 ** exponent, MAX_DELAY_MS)
  const at = now + Math.round(delay * (0.8 + 0.4 * random()))
  return at - createdAt > schedule.giveUpAfterMs ? null : at
}

const MAX_DELAY_MS = 4 * 3600_000
