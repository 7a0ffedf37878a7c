/**
 * Review finding (not fixed, a design question): a SIM change the operator reports a few
 * minutes late, that happened just before a bank subscribed, is never sent to it. The bank
 * checked the number (false: the change was not recorded yet), subscribed, and is then not told
 * of the swap it subscribed to hear of: the fraud window stays open. notify-swapped.ts skips
 * every live subscription created after the change's changedAt. Marked todo; remove once decided.
 */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { startHarness } from '../helpers.ts'
import type { CamaraAccess } from '../../src/camara/access.ts'
import { SWAPPED_TYPE } from '../../src/camara/subscriptions/subscription.ts'
import { DAY_MS, recordChange } from './support.ts'

const NUMBER = '+447700900123'
const access: CamaraAccess = { clientId: 'cl_bank', scopes: new Set(), phoneNumber: null, tokenId: 'jti-1' }

test('a swap reported after the subscription started is sent, though it happened minutes before', { todo: 'review finding: late-reported swaps are not sent' }, async () => {
  const h = await startHarness({ WEBHOOK_ALLOW_PRIVATE: 'true' }, { events: true })
  try {
    const subscriptions = h.service.camaraSubscriptions
    await recordChange(h.service, NUMBER, 'activation', Date.now() - 30 * DAY_MS)
    const swappedAt = Date.now() - 120_000
    await subscriptions.create(access, { protocol: 'HTTP', sink: 'https://127.0.0.1:9/sink', types: [SWAPPED_TYPE], config: { subscriptionDetail: { phoneNumber: NUMBER } } })
    const queued = await h.service.db.transaction((tx) => subscriptions.changesRecorded(tx, [{ phone: NUMBER, kind: 'sim-change', changedAt: swappedAt }]))
    assert.equal(queued, 1)
  } finally {
    await h.close()
  }
})
