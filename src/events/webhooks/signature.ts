import { createHmac, randomBytes } from 'node:crypto'

/**
 * Standard Webhooks (https://www.standardwebhooks.com, spec v1): a secret is `whsec_` and the
 * base64 of 24 to 64 random bytes; a delivery carries `webhook-id`, `webhook-timestamp`
 * (seconds) and `webhook-signature: v1,<base64 HMAC-SHA256 of "id.timestamp.body">` keyed
 * with the secret's bytes. Any Standard Webhooks library verifies what this produces.
 */
export const SECRET_PREFIX = 'whsec_'

export function newWebhookSecret(): string {
  return SECRET_PREFIX + randomBytes(32).toString('base64')
}

function secretBytes(secret: string): Buffer {
  if (!secret.startsWith(SECRET_PREFIX)) throw new Error('not a whsec_ secret')
  return Buffer.from(secret.slice(SECRET_PREFIX.length), 'base64')
}

export function signWebhook(secret: string, id: string, timestampS: number, body: string): string {
  const mac = createHmac('sha256', secretBytes(secret)).update(`${id}.${timestampS}.${body}`).digest('base64')
  return `v1,${mac}`
}

/** The headers of one delivery attempt (timestamp: the attempt's, as the spec wants). */
export function webhookHeaders(secret: string, id: string, body: string, nowMs: number): Record<string, string> {
  const timestamp = Math.floor(nowMs / 1000)
  return {
    'content-type': 'application/json',
    'user-agent': 'kns-webhooks/1',
    'webhook-id': id,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': signWebhook(secret, id, timestamp, body),
  }
}
