import { test } from 'node:test'
import assert from 'node:assert/strict'
import { startHarness } from '../helpers.ts'
import type { CamaraAccess } from '../../src/camara/access.ts'
import { SWAPPED_TYPE } from '../../src/camara/subscriptions/subscription.ts'
import { camaraToken, DAY_MS, recordChange } from './support.ts'

const NUMBER = '+447700900123'
const CLIENT = 'bank-gone'
const twoLegged: CamaraAccess = { clientId: CLIENT, scopes: new Set(), phoneNumber: null, tokenId: 'jti-1' }

/**
 * Removing a CAMARA client (`kns oidc client remove`) ends its tokens at once; its
 * subscriptions must end with it: no more of a number's swaps to the removed client's sink,
 * and nothing of them for a client registered later under the same ID.
 */
test('a removed client\'s subscriptions end: no event is queued for them, none is listed to a client registered again with its ID', async () => {
  const h = await startHarness({ WEBHOOK_ALLOW_PRIVATE: 'true' }, { events: true })
  try {
    const subscriptions = h.service.camaraSubscriptions
    await camaraToken(h.service, { clientId: CLIENT })
    await recordChange(h.service, NUMBER, 'activation', Date.now() - 30 * DAY_MS)
    const created = await subscriptions.create(twoLegged, {
      protocol: 'HTTP', sink: 'https://127.0.0.1:9/sink', types: [SWAPPED_TYPE], config: { subscriptionDetail: { phoneNumber: NUMBER } },
    })

    await h.service.accounts.clients.remove(CLIENT)
    const queued = await h.service.db.transaction((tx) => subscriptions.changesRecorded(tx, [{ phone: NUMBER, kind: 'sim-change', changedAt: Date.now() }]))
    assert.equal(queued, 0, 'a removed client hears nothing more of the number')
    const pending = await h.service.db.get<{ n: number | string }>(`SELECT COUNT(*) AS n FROM webhook_deliveries WHERE subscription_id = $1 AND state = 'pending'`, [created.id])
    assert.equal(Number(pending?.n), 0)

    await camaraToken(h.service, { clientId: CLIENT })
    assert.deepEqual(await subscriptions.list(twoLegged), [], 'a client registered again with the ID does not inherit its predecessor\'s subscriptions')
  } finally {
    await h.close()
  }
})
