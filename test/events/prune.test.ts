/**
 * Retention (issue "Production under pressure", item 7): approval_events, webhook_deliveries
 * and the embedded ledger's feed grew forever. Pruning deletes what is old and no longer
 * needed, and nothing that is: a pending delivery (and its event), feed rows the watcher has
 * not read past, approvals.
 */
import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import { cancelApproval } from '../../src/approvals/cancel-approval.ts'
import { addSubscription } from '../../src/events/webhooks/subscriptions.ts'
import { startHarness, type Harness } from '../helpers.ts'
import { approvalBody, createApproval, ledgerApprove, localLedger, newKeypair, ownedToken } from '../support/kns.ts'
import { killAll, oneJson, runKns } from '../support/process.ts'

let h: Harness
before(async () => { h = await startHarness({ WEBHOOK_ALLOW_PRIVATE: 'true' }) })
after(async () => {
  await killAll()
  await h.close()
})

const count = async (table: string) => Number((await h.service.db.get<{ n: number }>(`SELECT COUNT(*) AS n FROM ${table}`))!.n)

test('old finished deliveries, their events and read feed rows go; pending deliveries, unread feed rows and approvals stay', async () => {
  const key = await h.key({ scopes: ['approvals'], vendor: 'Prune Bank' })
  const keyId = (await h.service.db.get<{ id: string }>('SELECT id FROM api_keys WHERE vendor = $1', ['Prune Bank']))!.id
  await addSubscription(h.service.db, h.service.events.box, { keyId, url: 'https://hooks.example.com/kns' }, { allowPrivate: true })
  const owner = newKeypair()
  const refs: string[] = []
  for (let i = 0; i < 4; i++) {
    const token = await ownedToken(h, owner)
    refs.push(await createApproval(h, key, approvalBody({ phoneNumber: token.phoneNumber }, { method: 'event' })))
  }
  // Two decided long ago with their deliveries finished; one decided long ago still pending; one recent.
  for (const ref of refs) await cancelApproval(h.service.db, ref)
  const old = Date.now() - 100 * 86_400_000
  const events = await h.service.db.all<{ event_id: string; approval_number: string }>('SELECT event_id, approval_number FROM approval_events')
  const byRef = new Map(events.map((e) => [e.approval_number, e.event_id]))
  for (const ref of refs.slice(0, 3)) await h.service.db.run('UPDATE approval_events SET created_at = $1 WHERE event_id = $2', [old, byRef.get(ref)])
  for (const ref of refs.slice(0, 2)) {
    await h.service.db.run(`UPDATE webhook_deliveries SET state = 'delivered', finished_at = $1 WHERE event_id = $2`, [old, byRef.get(ref)])
  }
  // The embedded ledger's feed: two old rows the watcher has read past, one old row it has not.
  const token = await ownedToken(h, owner)
  const feedRefs = []
  for (let i = 0; i < 3; i++) {
    const ref = await createApproval(h, key, approvalBody({ phoneNumber: token.phoneNumber }, { method: 'event' }))
    assert.equal((await ledgerApprove(h, owner, token.objectId, ref)).statusCode, 200)
    feedRefs.push(ref)
  }
  await h.service.db.run('UPDATE ledger_events SET created_at = $1', [old])
  const seqs = (await h.service.db.all<{ seq: number }>('SELECT seq FROM ledger_events ORDER BY seq')).map((r) => Number(r.seq))
  const readUpTo = seqs.at(-2)!
  await h.service.db.run(`INSERT INTO ledger_watch_cursors (source, cursor, updated_at) VALUES ($1, $2, $3)
    ON CONFLICT (source) DO UPDATE SET cursor = excluded.cursor`, [localLedger(h).feedSource, String(readUpTo), Date.now()])
  const approvalsBefore = await count('approvals')
  const feedBefore = await count('ledger_events')

  const result = oneJson(await runKns(['prune', '--json'], h.env))
  assert.deepEqual({ deliveries: result.deliveries, events: result.events }, { deliveries: 2, events: 2 })
  assert.equal(result.ledgerEvents, seqs.filter((s) => s <= readUpTo).length)
  assert.equal(await count('ledger_events'), feedBefore - Number(result.ledgerEvents))
  assert.ok(await h.service.db.get('SELECT 1 FROM ledger_events WHERE seq = $1', [seqs.at(-1)]), 'the unread row stays')
  assert.ok(await h.service.db.get('SELECT 1 FROM approval_events WHERE event_id = $1', [byRef.get(refs[2]!)]), 'a pending delivery keeps its event')
  assert.ok(await h.service.db.get(`SELECT 1 FROM webhook_deliveries WHERE event_id = $1 AND state = 'pending'`, [byRef.get(refs[2]!)]))
  assert.ok(await h.service.db.get('SELECT 1 FROM approval_events WHERE event_id = $1', [byRef.get(refs[3]!)]), 'a recent event stays')
  assert.equal(await count('approvals'), approvalsBefore, 'approvals are never pruned')
  // Nothing old left: a second run deletes nothing.
  const again = oneJson(await runKns(['prune', '--json'], h.env))
  assert.deepEqual([again.deliveries, again.events, again.ledgerEvents], [0, 0, 0])
  assert.equal((await runKns(['prune', '--older-than-days', '0'], h.env)).code, 2)
})
