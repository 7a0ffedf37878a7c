/**
 * A SIM change the operator reports a few minutes late, that happened just before a bank
 * subscribed, is sent to it: the bank checked the number (false: the change was not recorded
 * yet) and subscribed to hear of exactly that. A back-fill of history older than
 * LATE_REPORT_GRACE_MS before the subscription is not (src/camara/subscriptions/notify-swapped.ts).
 */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { startHarness } from '../helpers.ts'
import type { CamaraAccess } from '../../src/camara/access.ts'
import { SWAPPED_TYPE } from '../../src/camara/subscriptions/subscription.ts'
import { DAY_MS, recordChange } from './support.ts'

const NUMBER = '+447700900123'
const access: CamaraAccess = { clientId: 'cl_bank', scopes: new Set(), phoneNumber: null, tokenId: 'jti-1' }

test('a swap reported after the subscription started is sent, though it happened minutes before; history older than a day before it is not', async () => {
  const h = await startHarness({ WEBHOOK_ALLOW_PRIVATE: 'true' }, { events: true })
  try {
    const subscriptions = h.service.camaraSubscriptions
    await recordChange(h.service, NUMBER, 'activation', Date.now() - 30 * DAY_MS)
    const swappedAt = Date.now() - 120_000
    await subscriptions.create(access, { protocol: 'HTTP', sink: 'https://127.0.0.1:9/sink', types: [SWAPPED_TYPE], config: { subscriptionDetail: { phoneNumber: NUMBER } } })
    const queued = await h.service.db.transaction((tx) => subscriptions.changesRecorded(tx, [{ phone: NUMBER, kind: 'sim-change', changedAt: swappedAt }]))
    assert.equal(queued, 1)
    const backFill = await h.service.db.transaction((tx) => subscriptions.changesRecorded(tx, [{ phone: NUMBER, kind: 'sim-change', changedAt: Date.now() - 2 * DAY_MS }]))
    assert.equal(backFill, 0, 'a change two days before the subscription started is history, not news')
  } finally {
    await h.close()
  }
})
