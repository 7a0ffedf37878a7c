import type { Executor } from '../../db/engine.ts'

/** SIM Swap Subscriptions 0.3: the one event type a subscription may ask for, and the one it ends with. */
export const SWAPPED_TYPE = 'org.camaraproject.sim-swap-subscriptions.v0.swapped'
export const SUBSCRIPTION_ENDED_TYPE = 'org.camaraproject.sim-swap-subscriptions.v0.subscription-ended'
export const SUBSCRIPTION_TYPES = [SWAPPED_TYPE] as const

export type SubscriptionStatus = 'ACTIVE' | 'EXPIRED' | 'DELETED'
export type TerminationReason = 'MAX_EVENTS_REACHED' | 'NETWORK_TERMINATED' | 'SUBSCRIPTION_EXPIRED' | 'ACCESS_TOKEN_EXPIRED' | 'SUBSCRIPTION_DELETED'

/** A subscription as stored (src/camara/migrations.ts). */
export interface StoredSubscription {
  id: string
  clientId: string
  phone: string
  /** The number came from a three-legged token: it is never written back (CAMARA's data minimisation). */
  identifiedByToken: boolean
  types: string[]
  sink: string
  expiresAt: number | null
  maxEvents: number | null
  eventsSent: number
  accessTokenExpiresAt: number | null
  status: SubscriptionStatus
  endedReason: TerminationReason | null
  createdAt: number
}

export interface SubscriptionRow {
  id: string; client_id: string; phone: string; identified_by_token: number; types: string; sink: string
  expires_at: number | string | null; max_events: number | null; events_sent: number; access_token_expires_at: number | string | null
  status: SubscriptionStatus; ended_reason: TerminationReason | null; created_at: number | string
}

const ms = (value: number | string | null): number | null => (value === null ? null : Number(value))

export function fromRow(row: SubscriptionRow): StoredSubscription {
  return {
    id: row.id, clientId: row.client_id, phone: row.phone, identifiedByToken: Number(row.identified_by_token) === 1,
    types: JSON.parse(row.types) as string[], sink: row.sink, expiresAt: ms(row.expires_at),
    maxEvents: row.max_events === null ? null : Number(row.max_events), eventsSent: Number(row.events_sent),
    accessTokenExpiresAt: ms(row.access_token_expires_at), status: row.status, endedReason: row.ended_reason, createdAt: Number(row.created_at),
  }
}

/** The client's subscription with that ID (and, for a three-legged caller, that number's), or null: another's is not found either. */
export async function findOwnSubscription(db: Executor, id: string, owner: { clientId: string; phone: string | null }): Promise<StoredSubscription | null> {
  if (id.length > 64) return null
  const row = owner.phone === null
    ? await db.get<SubscriptionRow>(`SELECT * FROM camara_subscriptions WHERE id = $1 AND client_id = $2 AND status <> 'DELETED'`, [id, owner.clientId])
    : await db.get<SubscriptionRow>(`SELECT * FROM camara_subscriptions WHERE id = $1 AND client_id = $2 AND phone = $3 AND status <> 'DELETED'`, [id, owner.clientId, owner.phone])
  return row === undefined ? null : fromRow(row)
}
