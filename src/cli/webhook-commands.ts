import { listDeliveries, replayEvent } from '../events/webhooks/deliveries.ts'
import { addSubscription, listSubscriptions, removeSubscription } from '../events/webhooks/subscriptions.ts'
import { sendTestEvent } from '../events/webhooks/test-event.ts'
import { presentDelivery, presentWebhook } from '../http/routes/admin-webhooks.ts'
import type { Service } from '../service.ts'
import { optional, required, type Parsed } from './args.ts'
import { UsageError, type Output } from './output.ts'

export const WEBHOOK_OPTIONS = {
  url: { type: 'string' }, events: { type: 'string' }, failed: { type: 'boolean' }, limit: { type: 'string' },
} as const

export const WEBHOOK_USAGE = `  webhook add --key <keyId> --url <https URL> [--events approval.approved,approval.cancelled,approval.expired]
                                          prints { id, secret } (the secret only this once)
  webhook list [--key <keyId>]
  webhook remove <id>
  webhook test <id>                       a webhook.test event to that endpoint now; prints the outcome
  webhook deliveries [--failed] [--key <keyId>] [--limit N]
  webhook replay <eventId>                the event again (same webhook-id) to every live subscription`

/**
 * kns webhook add | list | remove | test | deliveries | replay; resolves to the exit code (a
 * failed test delivery: 1), which main() returns: setting process.exitCode here would be
 * overwritten by main's own.
 */
export async function webhookCommand(service: Service, sub: string | undefined, args: Parsed, out: Output): Promise<number> {
  if (sub === 'test') {
    const outcome = await sendTestEvent(service.db, service.events.deliveries, requiredPositional(args, sub, 'id'))
    out.result({ ...outcome }, outcome.delivered
      ? `delivered ${outcome.eventId}: the endpoint answered ${outcome.status}`
      : `not delivered ${outcome.eventId}: ${outcome.error} (retried on the normal schedule)`)
    return outcome.delivered ? 0 : 1
  }
  await manageWebhooks(service, sub, args, out)
  return 0
}

function requiredPositional({ positionals }: Parsed, sub: string, what: string): string {
  const value = positionals[2]
  if (value === undefined) throw new UsageError(`usage: kns webhook ${sub} <${what}>`)
  return value
}

async function manageWebhooks(service: Service, sub: string | undefined, args: Parsed, out: Output): Promise<void> {
  const { db, events, config } = service
  const { values } = args
  const positional = (what: string) => requiredPositional(args, sub ?? '', what)
  if (sub === 'add') {
    const eventsArg = optional(values, 'events')
    const created = await addSubscription(db, events.box, { keyId: required(values, 'key'), url: required(values, 'url'), ...(eventsArg === undefined ? {} : { events: eventsArg }) },
      { allowPrivate: config.webhookAllowPrivate })
    return out.result({ ...presentWebhook(created, config.webhookBreakerFailures), secret: created.secret },
      `added webhook ${created.id}: events of key ${created.keyId} (${created.events.join(', ')}) to ${created.url}\n\n  ${created.secret}\n\n` +
      'The signing secret is shown only this once (stored encrypted). Verify deliveries with any Standard Webhooks library.')
  }
  if (sub === 'list') {
    const key = optional(values, 'key')
    const found = (await listSubscriptions(db, key === undefined ? {} : { keyId: key })).map((w) => presentWebhook(w, config.webhookBreakerFailures))
    return out.result({ webhooks: found }, found.length === 0 ? 'no webhooks' : found.map((w) => `${w.id}  key ${w.keyId}  ${w.delivery.state}${w.delivery.state === 'active' ? '' : ` (${w.delivery.consecutiveFailures} failed in a row${w.delivery.pausedUntil === null ? '' : `, paused until ${w.delivery.pausedUntil}`})`}  ${w.events.join(',')}  ${w.url}`).join('\n'))
  }
  if (sub === 'remove') {
    const removed = presentWebhook(await removeSubscription(db, positional('id')), config.webhookBreakerFailures)
    return out.result(removed, `removed webhook ${removed.id} (${removed.url})`)
  }
  if (sub === 'deliveries') {
    const limitRaw = optional(values, 'limit') ?? '50'
    if (!/^\d{1,4}$/.test(limitRaw) || Number(limitRaw) < 1 || Number(limitRaw) > 1000) throw new UsageError('--limit must be a whole number from 1 to 1000')
    const key = optional(values, 'key')
    const found = (await listDeliveries(db, { limit: Number(limitRaw), failed: values.failed === true, ...(key === undefined ? {} : { keyId: key }) })).map(presentDelivery)
    const line = (d: ReturnType<typeof presentDelivery>) =>
      `${d.eventId}  ${d.type.padEnd(18)} ${d.state.padEnd(9)} ${String(d.attempts).padStart(2)} attempt(s)  ${d.lastStatus ?? '-'}  ${d.url}${d.lastError === null ? '' : `  (${d.lastError})`}`
    return out.result({ deliveries: found }, found.length === 0 ? 'no deliveries' : found.map(line).join('\n'))
  }
  if (sub === 'replay') {
    const replayed = await replayEvent(db, positional('eventId'))
    return out.result(replayed, `queued ${replayed.deliveries} delivery(ies) of ${replayed.eventId}; a running server sends them`)
  }
  throw new UsageError(`unknown command 'kns webhook ${sub ?? ''}'`)
}
