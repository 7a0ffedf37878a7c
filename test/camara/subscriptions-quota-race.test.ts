import { test } from 'node:test'
import assert from 'node:assert/strict'
import { startHarness } from '../helpers.ts'
import type { CamaraAccess } from '../../src/camara/access.ts'
import { MAX_LIVE_SUBSCRIPTIONS_PER_CLIENT } from '../../src/camara/subscriptions/create-subscription.ts'
import { SWAPPED_TYPE } from '../../src/camara/subscriptions/subscription.ts'
import { camaraToken, DAY_MS, recordChange } from './support.ts'

const NUMBER = '+447700900123'
const CLIENT = 'bank-quota'
const access: CamaraAccess = { clientId: CLIENT, scopes: new Set(), phoneNumber: null, tokenId: 'jti-1' }

/** A client one short of its quota creates several subscriptions together: exactly one gets in (the count and the insert are one step on both engines). */
test('the live subscriptions quota holds when a client creates several together', async () => {
  const h = await startHarness({ WEBHOOK_ALLOW_PRIVATE: 'true' }, { events: true })
  try {
    await camaraToken(h.service, { clientId: CLIENT })
    const db = h.service.db
    await recordChange(h.service, NUMBER, 'activation', Date.now() - 30 * DAY_MS)
    const n = MAX_LIVE_SUBSCRIPTIONS_PER_CLIENT - 1
    const series = db.engine === 'postgres' ? `SELECT g AS i FROM generate_series(1, ${n}) g`
      : `WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < ${n}) SELECT i FROM s`
    await db.run(`INSERT INTO webhook_subscriptions (id, api_key_id, url, events, secret_sealed, created_at, format)
      SELECT 'fill-' || i, 'client:${CLIENT}', 'https://127.0.0.1:9/fill', '${SWAPPED_TYPE}', 'x', 1, 'cloudevents' FROM (${series}) t`)
    await db.run(`INSERT INTO camara_subscriptions (id, client_id, phone, identified_by_token, types, sink, status, created_at)
      SELECT 'fill-' || i, '${CLIENT}', '${NUMBER}', 0, '["${SWAPPED_TYPE}"]', 'https://127.0.0.1:9/fill-' || i, 'ACTIVE', 1 FROM (${series}) t`)
    const results = await Promise.allSettled([1, 2, 3, 4].map((i) => h.service.camaraSubscriptions.create(access, {
      protocol: 'HTTP', sink: `https://127.0.0.1:9/race-${i}`, types: [SWAPPED_TYPE], config: { subscriptionDetail: { phoneNumber: NUMBER } },
    })))
    assert.equal(results.filter((r) => r.status === 'fulfilled').length, 1, JSON.stringify(results.map((r) => r.status)))
    const live = await db.get<{ n: number | string }>(`SELECT COUNT(*) AS n FROM camara_subscriptions WHERE client_id = $1 AND status = 'ACTIVE'`, [CLIENT])
    assert.equal(Number(live?.n), MAX_LIVE_SUBSCRIPTIONS_PER_CLIENT)
  } finally {
    await h.close()
  }
})
