/**
 * A CAMARA request that admission control sheds (503 before any route runs) is answered in
 * CAMARA's shape, UNAVAILABLE with Retry-After and the correlator echoed; elsewhere the
 * service's OVERLOADED as before.
 */
import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import { startHarness, type Harness } from '../helpers.ts'
import { bearer, camaraToken } from '../camara/support.ts'

let h: Harness
before(async () => { h = await startHarness({ MAX_IN_FLIGHT: '1', QUEUE_BUDGET_MS: '0' }) })
after(async () => { await h.close() })

test('shed while the one slot is held: CAMARA\'s 503 UNAVAILABLE under its prefixes, OVERLOADED elsewhere', async () => {
  const token = await camaraToken(h.service)
  const db = h.service.db
  const original = db.get.bind(db)
  let release!: () => void
  let entered!: () => void
  const held = new Promise<void>((resolve) => { release = resolve })
  const holdingSlot = new Promise<void>((resolve) => { entered = resolve })
  // The first request holds the only slot: its database read waits until released.
  db.get = (async (...args: Parameters<typeof db.get>) => { entered(); await held; return original(...args) }) as typeof db.get
  try {
    const holding = h.app.inject({ method: 'POST', url: '/sim-swap/v2/check', headers: bearer(token), payload: { phoneNumber: '+447911123456' } })
    await holdingSlot
    const shed = await h.app.inject({ method: 'POST', url: '/device-swap/v1/retrieve-date', headers: { ...bearer(token), 'x-correlator': 'shed-1' }, payload: {} })
    assert.equal(shed.statusCode, 503, shed.body)
    assert.deepEqual(Object.keys(shed.json()).sort(), ['code', 'message', 'status'])
    assert.deepEqual([shed.json().status, shed.json().code], [503, 'UNAVAILABLE'])
    assert.equal(shed.headers['retry-after'], '1')
    assert.equal(shed.headers['x-correlator'], 'shed-1')
    const ours = await h.app.inject({ method: 'GET', url: '/numsys/transaction_details?ref=000000000000000000000000' })
    assert.equal(ours.statusCode, 503)
    assert.equal(ours.json().code, 'OVERLOADED')
    release()
    assert.equal((await holding).statusCode, 404)
  } finally {
    release()
    db.get = original
  }
})
