/**
 * `kill -9` of the server under approval load: every approval answered 200 before the kill is
 * found by the server started again on the same database. On SQLite the commit is in the WAL
 * before the answer; on PostgreSQL (APPROVAL_COMMIT=async by default) it was acknowledged by
 * PostgreSQL before the answer, and the server process dying cannot take it back: only a crash
 * of the database server could (docs/design/storage.md). Runs on the suite's engine.
 */
import assert from 'node:assert/strict'
import { randomInt } from 'node:crypto'
import { after, test } from 'node:test'
import { openDatabase } from '../../src/db/open.ts'
import { createApiKey } from '../../src/keys/api-keys.ts'
import { ENGINE, freshDatabaseEnv, type TestEnv } from '../helpers.ts'
import { killAll, postJson, startServer } from '../support/process.ts'
import { ApprovalLoad, LOAD_SERVER_ENV, missingApprovals, summarize } from './approval-load.ts'

let fresh: TestEnv | undefined

after(async () => {
  await killAll()
  await fresh?.cleanup()
})

test(`SIGKILL under concurrent approval creation loses no acknowledged approval (${ENGINE})`, async (t) => {
  // A fixed public URL: the database remembers the URL it is served as, and the second
  // server listens on another port.
  fresh = await freshDatabaseEnv({ PUBLIC_BASE_URL: 'https://kns.example.com' })
  const first = await startServer({ ...fresh.env, ...LOAD_SERVER_ENV })
  const db = openDatabase(fresh.config)
  let key: string
  try {
    key = (await createApiKey(db, { vendor: 'Kill Test', scopes: ['approvals'], rate: 100_000 })).key
  } finally {
    await db.close()
  }
  const phoneNumber = `+4420${String(randomInt(0, 100_000_000)).padStart(8, '0')}`
  const registered = await postJson(`${first.url}/numsys/register-user-login`, { email: 'kill@example.com', phoneNumber })
  assert.equal(registered.status, 200, JSON.stringify(registered.body))

  const load = new ApprovalLoad({ url: first.url, key, phoneNumber, workers: 16 })
  t.after(() => load.stop()) // also when an assertion fails midway
  load.start()
  await load.untilAcknowledged(300)
  const killedAt = performance.now()
  first.child.kill('SIGKILL')
  const exit = await first.exited
  await load.stop()
  assert.equal(exit.signal, 'SIGKILL')

  // The kill hit the load, not a pause in it: approvals were being acknowledged right up to it.
  // (Requests cut off by it are usual but not certain: at the instant of a kill the 16 workers
  // can all be between requests, their last answers already in the socket buffers.)
  const cutOff = load.attempts.filter((a) => a.status === 0 && a.at < killedAt)
  const acknowledgedLast100ms = load.attempts.filter((a) => a.status === 200 && a.kind === 'approval' && a.at + a.ms > killedAt - 100).length
  t.diagnostic(`before the kill: ${summarize(load.attempts.filter((a) => a.at + a.ms <= killedAt))}; cut off by it: ${cutOff.length}; ` +
    `acknowledged in its last 100 ms: ${acknowledgedLast100ms}`)
  assert.ok(acknowledgedLast100ms > 0, 'no approval was acknowledged in the last 100 ms before the kill')
  assert.ok(load.attempts.every((a) => a.status === 200 || a.status === 0), summarize(load.attempts))

  const second = await startServer({ ...fresh.env, ...LOAD_SERVER_ENV })
  const missing = await missingApprovals(second.url, load.acknowledged)
  t.diagnostic(`acknowledged ${load.acknowledged.length}, found after the restart ${load.acknowledged.length - missing.length}`)
  assert.deepEqual(missing, [], `${missing.length} acknowledged approvals lost`)

  // The requests cut off by the kill are retried with their referenceNumber, as a vendor would: each
  // is created now, or was committed before the kill and is returned as it was.
  for (const body of load.unacknowledged.slice(0, 20)) {
    const retried = await postJson(`${second.url}/numsys/approval-phone`, body, { 'x-api-key': key })
    assert.equal(retried.status, 200, JSON.stringify(retried.body))
  }
  await second.stop()
})
