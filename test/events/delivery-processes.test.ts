/**
 * Deliveries across real server processes: `kill -9` between a decision and its delivery
 * (the endpoint has the request, the server never hears the answer), then a restart: the
 * event is delivered once more, with the same webhook-id, and never again. And on PostgreSQL,
 * two servers share the work: every event delivered, none twice.
 */
import assert from 'node:assert/strict'
import { randomBytes, randomInt } from 'node:crypto'
import { after, test } from 'node:test'
import { migrate } from '../../src/db/migrations.ts'
import { openDatabase } from '../../src/db/open.ts'
import { MIGRATIONS } from '../../src/migrations.ts'
import { createApiKey } from '../../src/keys/api-keys.ts'
import { ENGINE, freshDatabaseEnv, type TestEnv } from '../helpers.ts'
import { approvalPhoneBody, killAll, postJson, sleep, startServer, type RunningServer } from '../support/process.ts'
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.ts'

const cleanups: Array<() => Promise<void>> = []
after(async () => {
  await killAll()
  for (const cleanup of cleanups.reverse()) await cleanup()
})

interface World { fresh: TestEnv; admin: string; vendor: string; vendorId: string; receiver: WebhookReceiver }

async function world(extra: Record<string, string> = {}): Promise<World> {
  const fresh = await freshDatabaseEnv({
    PUBLIC_BASE_URL: 'https://kns.example.com', KNS_SECRET: randomBytes(32).toString('hex'),
    WEBHOOK_ALLOW_PRIVATE: 'true', WEBHOOK_TIMEOUT_MS: '1000', WEBHOOK_RETRY_BASE_MS: '200', ...extra,
  })
  const receiver = await startWebhookReceiver()
  cleanups.push(async () => { await receiver.close(); await fresh.cleanup() })
  const db = openDatabase(fresh.config)
  try {
    await migrate(db, MIGRATIONS)
    const admin = (await createApiKey(db, { vendor: 'Operator', scopes: ['webhooks'], rate: 100_000 })).key
    const vendor = await createApiKey(db, { vendor: 'Acme Bank', scopes: ['approvals'], rate: 100_000 })
    return { fresh, admin, vendor: vendor.key, vendorId: vendor.id, receiver }
  } finally {
    await db.close()
  }
}

async function subscribe(server: RunningServer, w: World): Promise<void> {
  const added = await postJson(`${server.url}/api/v1/admin/webhooks`, { keyId: w.vendorId, url: w.receiver.url }, { 'x-api-key': w.admin })
  assert.equal(added.status, 201, JSON.stringify(added.body))
  w.receiver.secret = String(added.body.secret)
}

async function decideOne(server: RunningServer, w: World): Promise<string> {
  const phoneNumber = `+4420${String(randomInt(0, 100_000_000)).padStart(8, '0')}`
  const registered = await postJson(`${server.url}/numsys/register-user-login`, { email: `${randomBytes(4).toString('hex')}@example.com`, phoneNumber })
  assert.equal(registered.status, 200, JSON.stringify(registered.body))
  const created = await postJson(`${server.url}/numsys/approval-phone`, approvalPhoneBody(phoneNumber), { 'x-api-key': w.vendor })
  assert.equal(created.status, 200, JSON.stringify(created.body))
  const ref = String(created.body.approvalNumber)
  const cancelled = await postJson(`${server.url}/numsys/approval-cancel`, { approvalNumber: ref })
  assert.equal(cancelled.body.success, true)
  return ref
}

test(`kill -9 mid-delivery: after a restart the event is delivered once more, same webhook-id (${ENGINE})`, async () => {
  const w = await world()
  const first = await startServer(w.fresh.env)
  await subscribe(first, w)
  // The endpoint takes the request and never answers: the server is waiting on it when killed.
  w.receiver.respond = () => {}
  const ref = await decideOne(first, w)
  const [held] = await w.receiver.waitFor(1)
  first.child.kill('SIGKILL')
  await first.exited
  w.receiver.respond = (_d, res) => { res.writeHead(200).end() }

  const second = await startServer(w.fresh.env)
  const [, again] = await w.receiver.waitFor(2, 20_000)
  assert.equal(again!.id, held!.id, 'the same webhook-id')
  assert.equal(again!.body, held!.body)
  assert.equal(again!.verifyError, null)
  assert.equal((again!.verified!.data as { approvalNumber: string }).approvalNumber, ref)
  await sleep(1500)
  assert.equal(w.receiver.received.length, 2, 'delivered exactly once more')
  await second.stop()
})

test('two servers on one PostgreSQL database: every event delivered, none twice', { skip: ENGINE !== 'postgres' && 'PostgreSQL only' }, async () => {
  const w = await world()
  const a = await startServer(w.fresh.env)
  const b = await startServer(w.fresh.env)
  await subscribe(a, w)
  const refs: string[] = []
  for (let i = 0; i < 20; i++) refs.push(await decideOne(i % 2 === 0 ? a : b, w))
  await w.receiver.waitFor(20, 20_000)
  await sleep(1000)
  const ids = w.receiver.received.map((d) => d.id)
  assert.equal(ids.length, 20, 'none twice')
  assert.equal(new Set(ids).size, 20)
  assert.deepEqual(new Set(w.receiver.received.map((d) => (d.verified!.data as { approvalNumber: string }).approvalNumber)), new Set(refs))
  await Promise.all([a.stop(), b.stop()])
})
