/**
 * The ledger watcher: ApprovalEvents seen on the ledger approve the `event` approvals they
 * name through verify_transaction's checks, with no verify_transaction call. One code path
 * for both ledgers: the embedded ledger's feed, and Sui's GraphQL events query (through the
 * strict stub: queries validated against the SDK's schema, real paging, real errors).
 */
import { after, before, describe, test } from 'node:test'
import assert from 'node:assert/strict'
import { LedgerWatcher } from '../../src/events/ledger-watcher.ts'
import { LeaderLock } from '../../src/db/leader-lock.ts'
import { LedgerUnavailableError } from '../../src/errors.ts'
import { SuiLedger } from '../../src/ledger/sui-ledger.ts'
import { openService, type Service } from '../../src/service.ts'
import { until } from '../support/until.ts'
import { ENGINE, startHarness, type Harness } from '../helpers.ts'
import { startSuiGraphqlStub, type SuiGraphqlStub } from '../ledger/sui-graphql-stub.ts'
import {
  approvalBody, createApproval, details, localLedger, newKeypair, ownedToken, randomDigest, randomObjectId, sleep, suiEventApproval,
} from '../support/kns.ts'


/** The stored state (not transaction_details: that one asks the ledger for the owner). */
async function storedStatus(h: Harness, ref: string): Promise<string> {
  const row = await h.service.db.get<{ status: string }>('SELECT status FROM approvals WHERE approval_number = $1', [ref])
  return row!.status
}

async function rejections(h: Harness, ref: string): Promise<Array<{ code: string; reason: string }>> {
  return h.service.db.all('SELECT code, reason FROM ledger_watch_rejections WHERE approval_number = $1', [ref])
}

describe('LEDGER=local: the embedded ledger feeds the watcher', () => {
  let h: Harness
  let key: string
  before(async () => {
    h = await startHarness({ LEDGER_WATCH_INTERVAL_MS: '100' }, { events: true })
    key = await h.key({ scopes: ['approvals'] })
  })
  after(async () => { await h?.close() })

  test('`kns ledger approve` alone (the owner\'s kns::approve) approves the request', async () => {
    const owner = newKeypair()
    const token = await ownedToken(h, owner)
    const ref = await createApproval(h, key, approvalBody({ phoneNumber: token.phoneNumber }, { method: 'event' }))
    const { digest } = await localLedger(h).approve(token.objectId, ref, owner.toSuiAddress())
    await until(async () => (await details(h, ref)).status === 'approved')
    const approved = await details(h, ref)
    assert.equal(approved.wallet, owner.toSuiAddress())
    const row = await h.service.db.get<{ proof: string }>('SELECT proof FROM approvals WHERE approval_number = $1', [ref])
    assert.equal(row!.proof, digest, 'the transaction is the proof, as with verify_transaction')
  })

  test('an event that fails a check is recorded with its reason and approves nothing; a replay changes nothing', async () => {
    await h.service.events.stop()
    const watcher = new LedgerWatcher(h.service.db, h.service.ledger, new LeaderLock(h.service.db, 'test-watcher'), { intervalMs: 100 })
    const owner = newKeypair()
    const token = await ownedToken(h, owner)
    const ref = await createApproval(h, key, approvalBody({ phoneNumber: token.phoneNumber }, { method: 'event' }))
    await localLedger(h).approve(token.objectId, ref, owner.toSuiAddress())
    // The token changes hands before the watcher reads the event: its sender no longer owns it.
    await localLedger(h).transferToken(token.objectId, newKeypair().toSuiAddress())
    // And events naming no stored approval, or a sign-method one: skipped.
    const signToken = await ownedToken(h, owner)
    const signRef = await createApproval(h, key, approvalBody({ phoneNumber: signToken.phoneNumber }))
    await localLedger(h).approve(signToken.objectId, signRef, owner.toSuiAddress())
    await localLedger(h).approve(signToken.objectId, 'f'.repeat(24), owner.toSuiAddress())
    while (await watcher.poll()) { /* to the end of the feed */ }
    assert.equal((await details(h, ref)).status, 'pending')
    const [rejected, ...more] = await rejections(h, ref)
    assert.equal(more.length, 0)
    assert.equal(rejected!.code, 'WRONG_SIGNER')
    assert.match(rejected!.reason, /does not own/)
    assert.equal((await details(h, signRef)).status, 'pending', 'a sign-method approval is not approved by an event')
    assert.ok(watcher.counts.skipped >= 2)

    // Read the whole feed again from the start: nothing changes, nothing is recorded twice.
    await h.service.db.run('DELETE FROM ledger_watch_cursors')
    const before = { ...watcher.counts }
    while (await watcher.poll()) { /* again */ }
    assert.equal(watcher.counts.approved, before.approved)
    assert.equal((await rejections(h, ref)).length, 1)
    assert.equal((await details(h, ref)).status, 'pending')
    await watcher.stop()
  })
})

describe('LEDGER=sui: the GraphQL events query feeds the same watcher', () => {
  let stub: SuiGraphqlStub
  let h: Harness
  let key: string
  const eventType = () => `${stub.knsPackageId}::kns::ApprovalEvent`

  before(async () => {
    stub = await startSuiGraphqlStub()
    h = await startHarness({}, { ledger: new SuiLedger(stub.ledgerOptions()) })
    key = await h.key({ scopes: ['approvals'] })
  })
  after(async () => {
    await h?.close()
    await stub?.close()
  })

  const eventApproval = (owner: string) => suiEventApproval(h, key, stub, owner)

  function emit(sender: string, json: Record<string, unknown>, type = eventType()): string {
    const digest = randomDigest()
    stub.world.addTransaction({ digest, sender, success: true, timestampMs: Date.now(), events: [{ type, json }] })
    return digest
  }

  function watcher(service: Service = h.service): LedgerWatcher {
    return new LedgerWatcher(service.db, service.ledger, new LeaderLock(service.db, 'sui-watcher'), { intervalMs: 50, maxBackoffMs: 200 })
  }

  test('a feed spanning several pages: read in order, the one real approval applied, the rest skipped; queries valid', async () => {
    stub.world.clearRequests()
    const owner = newKeypair().toSuiAddress()
    const { tokenId, ref } = await eventApproval(owner)
    for (let i = 0; i < 30; i++) emit(owner, { object_id: tokenId, ref: randomObjectId().slice(2, 26) })
    // Other events of the package, and an approval event of another package: not in the feed.
    emit(owner, { object_id: tokenId }, `${stub.knsPackageId}::kns::MintedEvent`)
    emit(owner, { object_id: tokenId, ref }, `${randomObjectId()}::kns::ApprovalEvent`)
    const digest = emit(owner, { object_id: tokenId, ref })
    for (let i = 0; i < 15; i++) emit(owner, { object_id: tokenId, ref: 'not an approval number' })
    const w = watcher()
    let reads = 1
    while (await w.poll()) reads++
    assert.equal(reads, 3, '46 events, 20 a page')
    assert.deepEqual(w.counts, { approved: 1, rejected: 0, skipped: 45, errors: 0 })
    assert.equal((await details(h, ref)).status, 'approved')
    const row = await h.service.db.get<{ proof: string }>('SELECT proof FROM approvals WHERE approval_number = $1', [ref])
    assert.equal(row!.proof, digest)
    const feedReads = stub.world.requests.filter((r) => r.operationName === 'knsApprovalEvents')
    assert.equal(feedReads.length, 3)
    assert.equal(feedReads[0]!.variables.after, null)
    assert.ok(feedReads.slice(1).every((r) => typeof r.variables.after === 'string'), 'each next page from the stored cursor')
    assert.deepEqual(stub.world.errors, [], 'the stub accepted every query')
    await w.stop()
  })

  test('an event whose sender does not own the token, or whose token does not match: recorded, not approved', async () => {
    const owner = newKeypair().toSuiAddress()
    const { tokenId, ref } = await eventApproval(owner)
    emit(newKeypair().toSuiAddress(), { object_id: tokenId, ref })
    emit(owner, { object_id: randomObjectId(), ref })
    const w = watcher()
    while (await w.poll()) { /* to the end */ }
    assert.deepEqual((await rejections(h, ref)).map((r) => r.code).sort(), ['EVENT_MISSING', 'WRONG_SIGNER'])
    assert.equal((await details(h, ref)).status, 'pending')
    await w.stop()
  })

  test('an unreachable endpoint: the watcher backs off and skips nothing; once back, the event is applied', async () => {
    const owner = newKeypair().toSuiAddress()
    const { tokenId, ref } = await eventApproval(owner)
    const w = watcher()
    try {
      while (await w.poll()) { /* caught up */ }
      const cursor = await h.service.db.get<{ cursor: string }>('SELECT cursor FROM ledger_watch_cursors')
      stub.world.fail('http500')
      emit(owner, { object_id: tokenId, ref })
      await assert.rejects(w.poll(), LedgerUnavailableError)
      w.start()
      await until(() => w.state === 'unreachable')
      await sleep(300)
      assert.ok(w.counts.errors >= 2, 'retried')
      assert.deepEqual(await h.service.db.get('SELECT cursor FROM ledger_watch_cursors'), cursor, 'the cursor did not move')
      assert.equal(await storedStatus(h, ref), 'pending')
      stub.world.fail(null)
      await until(async () => (await storedStatus(h, ref)) === 'approved')
      // The approval is stored inside the poll that succeeds; the state turns once it returns.
      await until(() => w.state === 'watching')
    } finally {
      stub.world.fail(null)
      await w.stop()
    }
  })

  test('a restart resumes from the stored cursor: nothing missed, nothing applied twice', async () => {
    const owner = newKeypair().toSuiAddress()
    const first = await eventApproval(owner)
    const second = await eventApproval(owner)
    emit(owner, { object_id: first.tokenId, ref: first.ref })
    const w1 = watcher()
    while (await w1.poll()) { /* caught up */ }
    await w1.stop()
    assert.equal((await details(h, first.ref)).status, 'approved')
    // While no watcher runs: the second approval, and an event for the first again.
    emit(owner, { object_id: second.tokenId, ref: second.ref })
    const restarted = await openService(h.service.config, { ledger: new SuiLedger(stub.ledgerOptions()) })
    try {
      stub.world.clearRequests()
      const w2 = watcher(restarted)
      while (await w2.poll()) { /* caught up */ }
      assert.deepEqual(w2.counts, { approved: 1, rejected: 0, skipped: 0, errors: 0 }, 'only the event after the cursor')
      assert.equal((await details(h, second.ref)).status, 'approved')
      assert.equal(typeof stub.world.requests.find((r) => r.operationName === 'knsApprovalEvents')?.variables.after, 'string')
      await w2.stop()
    } finally {
      await restarted.close()
    }
  })
})

describe('several processes on one PostgreSQL database', { skip: ENGINE !== 'postgres' && 'PostgreSQL only (SQLite: the server process watches)' }, () => {
  test('exactly one watches; when it dies another takes over within seconds', async () => {
    const h = await startHarness({ LEDGER_WATCH_INTERVAL_MS: '100' })
    const second = await openService(h.service.config)
    try {
      const a = new LedgerWatcher(h.service.db, h.service.ledger, new LeaderLock(h.service.db, 'ledger-watcher'), { intervalMs: 100, standbyRetryMs: 200 })
      const b = new LedgerWatcher(second.db, second.ledger, new LeaderLock(second.db, 'ledger-watcher'), { intervalMs: 100, standbyRetryMs: 200 })
      a.start()
      await until(() => a.state === 'watching')
      b.start()
      await until(() => b.state === 'standby')
      await sleep(400)
      assert.equal(a.state, 'watching')
      assert.equal(b.state, 'standby')
      await a.stop()
      const tookMs = await until(() => b.state === 'watching')
      assert.ok(tookMs < 3000, `took over after ${tookMs} ms`)
      // And it works: an approval made on the ledger now is applied by the new watcher.
      const key = await h.key({ scopes: ['approvals'] })
      const owner = newKeypair()
      const token = await ownedToken(h, owner)
      const ref = await createApproval(h, key, approvalBody({ phoneNumber: token.phoneNumber }, { method: 'event' }))
      await localLedger(h).approve(token.objectId, ref, owner.toSuiAddress())
      await until(async () => (await details(h, ref)).status === 'approved')
      await b.stop()
    } finally {
      await second.close()
      await h.close()
    }
  })
})

describe('the lock lost between two polls (its session ended: a failover, a switchover)', { skip: ENGINE !== 'postgres' && 'PostgreSQL only (SQLite: the server process always leads)' }, () => {
  test('/readyz stops saying `watching` at once, not at the next poll (which another process may beat)', async () => {
    // A minute between polls: the watcher's state stays the last poll's for that long.
    const h = await startHarness({ LEDGER_WATCH_INTERVAL_MS: '60000' }, { events: true })
    const readiness = async () => ((await h.app.inject({ method: 'GET', url: '/readyz' })).json() as { watcher?: string }).watcher ?? ''
    try {
      await until(async () => (await readiness()).startsWith('watching'))
      // This schema's lock only (the server serves other tests): its key is hashtext('<schema>:ledger-watcher').
      const ended = await h.service.db.all<{ ended: boolean }>(`SELECT pg_terminate_backend(l.pid) AS ended FROM pg_locks l
        WHERE l.locktype = 'advisory' AND l.granted AND ((l.classid::bigint << 32) | l.objid::bigint) = hashtext(current_schema() || ':ledger-watcher')::bigint`)
      assert.deepEqual(ended, [{ ended: true }])
      const tookMs = await until(async () => !(await readiness()).startsWith('watching'), 5000)
      assert.ok(tookMs < 2000, `still "watching" ${tookMs} ms after its lock's session ended`)
      assert.equal(h.service.events.watcher.state, 'watching', 'the state is still the last poll\'s (the next poll is a minute away)')
      assert.match(await readiness(), /^standby \(the lock was lost/)
    } finally {
      await h.close()
    }
  })
})

describe('the database unavailable while the watcher asks for its lock (a PostgreSQL failover)', () => {
  test('asked again at the standby pace, not backed off as for the ledger: watching soon after the database is back', async () => {
    const h = await startHarness()
    try {
      let refusals = 5
      const lock = {
        held: true,
        async acquire() {
          if (refusals-- > 0) throw Object.assign(new Error('connect ECONNREFUSED 10.0.0.5:5432'), { code: 'ECONNREFUSED' })
          return true
        },
        async close() {},
      } as unknown as LeaderLock
      const watcher = new LedgerWatcher(h.service.db, h.service.ledger, lock, { intervalMs: 200, standbyRetryMs: 100 })
      watcher.start()
      try {
        const tookMs = await until(() => watcher.state === 'watching', 30_000)
        assert.equal(watcher.counts.errors, 5)
        // Backed off from 200 ms, the five refusals would have cost 0.4 + 0.8 + 1.6 + 3.2 + 6.4 = 12.4 s; at the standby pace 0.5 s.
        assert.ok(tookMs < 5000, `watching ${tookMs} ms after the first refusal`)
      } finally {
        await watcher.stop()
      }
    } finally {
      await h.close()
    }
  })
})
