/**
 * The expiry sweeper runs in one server process at a time (issue 32: "the ledger watcher and
 * the expiry sweeper run on one node at a time and move within seconds when it dies"): the
 * holder of its leader lock sweeps, the others stand by, and each expiry is stored once.
 */
import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { LeaderLock } from '../../src/db/leader-lock.ts'
import { ExpirySweeper } from '../../src/events/expiry-sweeper.ts'
import { openService } from '../../src/service.ts'
import { until } from '../support/until.ts'
import { ENGINE, startHarness, type Harness } from '../helpers.ts'
import { approvalBody, createApproval, details, register } from '../support/kns.ts'


/** A pending approval whose time ran out a moment ago (stored as pending: nobody swept it yet). */
async function overdueApproval(h: Harness, key: string): Promise<string> {
  const user = await register(h)
  const ref = await createApproval(h, key, approvalBody({ phoneNumber: user.phoneNumber }))
  await h.service.db.run('UPDATE approvals SET expires_at = $1 WHERE approval_number = $2', [Date.now() - 1, ref])
  return ref
}

const storedStatus = async (h: Harness, ref: string) =>
  (await h.service.db.get<{ status: string }>('SELECT status FROM approvals WHERE approval_number = $1', [ref]))?.status

describe('several processes on one PostgreSQL database', { skip: ENGINE !== 'postgres' && 'PostgreSQL only (SQLite: the server process sweeps)' }, () => {
  test('exactly one sweeps; each expiry is stored once; when it stops another takes over within seconds', async () => {
    const h = await startHarness()
    const second = await openService(h.service.config)
    const a = new ExpirySweeper(h.service.db, { intervalMs: 50, lock: new LeaderLock(h.service.db, 'expiry-sweeper') })
    const b = new ExpirySweeper(second.db, { intervalMs: 50, lock: new LeaderLock(second.db, 'expiry-sweeper') })
    try {
      const key = await h.key({ scopes: ['approvals'] })
      a.start()
      await until(() => a.sweeping)
      b.start()
      await sleep(300)
      assert.equal(a.sweeping, true)
      assert.equal(b.sweeping, false, 'the second stands by')

      const first = await overdueApproval(h, key)
      await until(async () => (await storedStatus(h, first)) === 'expired')
      await sleep(200)
      assert.deepEqual([a.expired, b.expired], [1, 0], 'swept once, by the holder')

      await a.stop()
      const tookMs = await until(() => b.sweeping)
      assert.ok(tookMs < 5000, `took over after ${tookMs} ms`)
      const next = await overdueApproval(h, key)
      await until(async () => (await storedStatus(h, next)) === 'expired')
      assert.equal(b.expired, 1)
      assert.equal((await details(h, next)).status, 'expired')
    } finally {
      await a.stop()
      await b.stop()
      await second.close()
      await h.close()
    }
  })
})
