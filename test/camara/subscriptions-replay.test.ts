import { test } from 'node:test'
import assert from 'node:assert/strict'
import { startHarness } from '../helpers.ts'
import type { CamaraAccess } from '../../src/camara/access.ts'
import { SUBSCRIPTION_ENDED_TYPE, SWAPPED_TYPE } from '../../src/camara/subscriptions/subscription.ts'
import { replayEvent } from '../../src/events/webhooks/deliveries.ts'
import { DAY_MS, recordChange } from './support.ts'

const NUMBER = '+447700900123'
const access: CamaraAccess = { clientId: 'cl_bank', scopes: new Set(), phoneNumber: null, tokenId: 'jti-1' }

/**
 * `kns webhook replay` of a CAMARA event: a subscription its client deleted is gone (404 to the
 * client, nothing more to its sink), so a swapped event is not sent to it again; its own
 * `subscription-ended` may be (the sink may have missed how it ended).
 */
test('a swapped event is not replayed to a deleted subscription; its subscription-ended is', async () => {
  const h = await startHarness({ WEBHOOK_ALLOW_PRIVATE: 'true' }, { events: true })
  try {
    const subscriptions = h.service.camaraSubscriptions
    await recordChange(h.service, NUMBER, 'activation', Date.now() - 30 * DAY_MS)
    const created = await subscriptions.create(access, {
      protocol: 'HTTP', sink: 'https://127.0.0.1:9/sink', types: [SWAPPED_TYPE], config: { subscriptionDetail: { phoneNumber: NUMBER } },
    })
    await h.service.db.transaction((tx) => subscriptions.changesRecorded(tx, [{ phone: NUMBER, kind: 'sim-change', changedAt: Date.now() }]))
    await subscriptions.delete(access, created.id)
    const eventOf = async (type: string) => (await h.service.db.get<{ event_id: string }>('SELECT event_id FROM approval_events WHERE type = $1', [type]))!.event_id

    assert.equal((await replayEvent(h.service.db, await eventOf(SWAPPED_TYPE))).deliveries, 0, 'nothing more of the number to a deleted subscription')
    assert.equal((await replayEvent(h.service.db, await eventOf(SUBSCRIPTION_ENDED_TYPE))).deliveries, 1)
  } finally {
    await h.close()
  }
})
