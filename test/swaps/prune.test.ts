/**
 * The monitored period (SIM_SWAP_MONITORED_DAYS): change records older than it are deleted in
 * batches, by `kns prune`, `kns sim-changes prune` and the server's hourly prune; newer ones stay.
 */
import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import { loadConfig } from '../../src/config.ts'
import { pruneChanges } from '../../src/swaps/prune-changes.ts'
import { insertRows } from '../../src/stats/sql-rows.ts'
import { startHarness, type Harness } from '../helpers.ts'
import { randomPhone } from '../support/kns.ts'
import { killAll, oneJson, runKns } from '../support/process.ts'

const DAY = 86_400_000
let h: Harness
before(async () => { h = await startHarness({ SIM_SWAP_MONITORED_DAYS: '30' }) })
after(async () => {
  await killAll()
  await h.close()
})

const slow = { timeoutMs: 120_000 }
const count = async () => Number((await h.service.db.get<{ n: number | string }>('SELECT COUNT(*) AS n FROM sim_changes'))!.n)
/** Rows as if recorded long ago (recording itself refuses what is older than the period). */
async function seed(prefix: string, n: number, changedAt: number): Promise<void> {
  const phone = randomPhone()
  const rows = Array.from({ length: n }, (_, i) => [`${prefix}:${i}`, phone, 'sim-change', changedAt - i, null, 'test', changedAt])
  await h.service.db.transaction((tx) => insertRows(tx, 'sim_changes', ['event_id', 'phone', 'kind', 'changed_at', 'approval_number', 'recorded_by', 'recorded_at'], rows))
}

test('SIM_SWAP_MONITORED_DAYS: 100 days by default, 1 to 3650', () => {
  assert.equal(loadConfig({}).simSwapMonitoredDays, 100)
  assert.equal(loadConfig({ SIM_SWAP_MONITORED_DAYS: '3650' }).simSwapMonitoredDays, 3650)
  for (const bad of ['0', '3651', '7.5', 'ninety']) assert.throws(() => loadConfig({ SIM_SWAP_MONITORED_DAYS: bad }), /SIM_SWAP_MONITORED_DAYS/)
  assert.equal(h.service.swaps.monitoredDays, 30)
})

test('records older than the period go, in batches; those inside it stay', async () => {
  const now = Date.now()
  await seed('old', 5003, now - 31 * DAY)
  await seed('edge', 2, now - 29 * DAY)
  assert.equal((await h.service.swaps.record([{ eventId: 'fresh', phoneNumber: randomPhone(), kind: 'activation', changedAt: new Date(now - DAY).toISOString() }], 'test')).recorded, 1)
  assert.equal(await pruneChanges(h.service.db, 30, now), 5003)
  assert.equal(await count(), 3)
  assert.equal(await pruneChanges(h.service.db, 30, now), 0, 'nothing old left')
})

test('kns prune and kns sim-changes prune apply the period and say how many went', async () => {
  await seed('cli-a', 3, Date.now() - 40 * DAY)
  const before = await count()
  const pruned = oneJson(await runKns(['prune', '--json'], h.env, slow))
  assert.equal(pruned.simChanges, 3)
  assert.equal(await count(), before - 3)
  await seed('cli-b', 2, Date.now() - 31 * DAY)
  const text = await runKns(['prune', '--older-than-days', '365'], h.env, slow)
  assert.equal(text.code, 0, text.stderr)
  assert.match(text.stdout, /2 SIM and device change records older than 30 days \(SIM_SWAP_MONITORED_DAYS\)/, 'the period is not moved by --older-than-days')
  await seed('cli-c', 4, Date.now() - 300 * DAY)
  assert.deepEqual(oneJson(await runKns(['sim-changes', 'prune', '--json'], h.env, slow)), { monitoredDays: 30, simChanges: 4 })
  assert.equal(await count(), before - 3)
})
