import type { StoredSubscription } from './subscription.ts'

/**
 * A subscription as the API shows it (SIM Swap Subscriptions 0.3, `Subscription`): never the
 * sink credential; the number only when the subscriber named it (two-legged), `{}` as the
 * detail when it came from a three-legged token.
 */
export function subscriptionView(s: StoredSubscription) {
  const iso = (ms: number) => new Date(ms).toISOString()
  return {
    protocol: 'HTTP' as const,
    sink: s.sink,
    types: s.types,
    config: {
      subscriptionDetail: s.identifiedByToken ? {} : { phoneNumber: s.phone },
      ...(s.expiresAt === null ? {} : { subscriptionExpireTime: iso(s.expiresAt) }),
      ...(s.maxEvents === null ? {} : { subscriptionMaxEvents: s.maxEvents }),
    },
    id: s.id,
    startsAt: iso(s.createdAt),
    ...(s.expiresAt === null ? {} : { expiresAt: iso(s.expiresAt) }),
    // A deleted subscription is never shown (not found), so what is shown is live or ended.
    status: s.status === 'ACTIVE' ? 'ACTIVE' as const : 'EXPIRED' as const,
  }
}
