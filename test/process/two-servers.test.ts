/**
 * Two `kns serve` processes on one PostgreSQL database behave as one service: no request
 * depends on state held in one process's memory. PostgreSQL only (the suite's second run).
 */
import assert from 'node:assert/strict'
import { randomInt } from 'node:crypto'
import { after, before, test } from 'node:test'
import { openDatabase } from '../../src/db/open.ts'
import { createApiKey } from '../../src/keys/api-keys.ts'
import { ENGINE, freshDatabaseEnv, type TestEnv } from '../helpers.ts'
import { approvalPhoneBody, killAll, measureRevocation, postJson, runKns, startServer, type RunningServer } from '../support/process.ts'

const skip = ENGINE === 'postgres' ? false : 'PostgreSQL only: set DATABASE_URL'

let fresh: TestEnv | undefined
let a: RunningServer
let b: RunningServer
let key: { id: string; key: string }

const randomPhone = () => `+4420${String(randomInt(0, 100_000_000)).padStart(8, '0')}`

before(async () => {
  if (skip) return
  // Behind one balancer: one public URL for both (a second process without it refuses to start, below).
  fresh = await freshDatabaseEnv({ PUBLIC_BASE_URL: 'https://kns.example.com' })
  // Both start at once on an empty schema: their migrations race, as in a rolling deploy.
  ;[a, b] = await Promise.all([startServer(fresh.env), startServer(fresh.env)])
  const db = openDatabase(fresh.config)
  try {
    key = await createApiKey(db, { vendor: 'Two Servers Ltd', scopes: ['approvals'], rate: 100_000 })
  } finally {
    await db.close()
  }
})

after(async () => {
  await killAll()
  await fresh?.cleanup()
})

test('register on one server, again on the other: the same answer, userId, identifiers and zkAddress', { skip }, async () => {
  const phoneNumber = randomPhone()
  const registered = await postJson(`${a.url}/numsys/register-user-login`, { email: 'twin@example.com', phoneNumber })
  assert.equal(registered.status, 200, JSON.stringify(registered.body))
  assert.equal(registered.body.message, 'user registered')
  const login = await postJson(`${b.url}/numsys/register-user-login`, { email: 'twin@example.com', phoneNumber })
  assert.equal(login.status, 200, JSON.stringify(login.body))
  assert.equal(login.body.message, 'user registered', 'the same answer whether or not the number was registered')
  assert.equal(login.body.userId, registered.body.userId)
  assert.equal(login.body.zkAddress, registered.body.zkAddress)
  assert.deepEqual(login.body.identifiers, registered.body.identifiers)

  // Registering grants nothing, across processes too: another e-mail gets the same identity, and binds nothing.
  const squatter = await postJson(`${b.url}/numsys/register-user-login`, { email: 'mallory@example.com', phoneNumber })
  assert.equal(squatter.status, 200)
  assert.equal(squatter.body.userId, registered.body.userId)
  assert.ok(!JSON.stringify(squatter.body).includes('twin@example.com'), 'the stored e-mail is never shown')
})

test('an approval created on one server is read on the other; a retry there returns the same approval', { skip }, async () => {
  const phoneNumber = randomPhone()
  const registered = await postJson(`${a.url}/numsys/register-user-login`, { email: 'approver@example.com', phoneNumber })
  assert.equal(registered.status, 200)
  const body = approvalPhoneBody(phoneNumber)
  const created = await postJson(`${a.url}/numsys/approval-phone`, body, { 'x-api-key': key.key })
  assert.equal(created.status, 200, JSON.stringify(created.body))
  const ref = created.body.approvalNumber as string
  assert.match(ref, /^[0-9a-f]{24}$/)

  const res = await fetch(`${b.url}/numsys/transaction_details?ref=${ref}`)
  assert.equal(res.status, 200)
  const details = (await res.json()) as Record<string, unknown>
  assert.equal(details.phoneNumber, phoneNumber)
  assert.equal(details.wallet, registered.body.zkAddress, 'the token was minted to the zkAddress at registration')
  assert.equal(details.vendorBrand, 'Two Servers Ltd')
  assert.equal(details.status, 'pending')
  assert.equal(details.approved, false)

  // Both sign for the same public URL, so a signature made for one verifies on the other.
  const onA = (await (await fetch(`${a.url}/numsys/transaction_details?ref=${ref}`)).json()) as Record<string, unknown>
  assert.equal(details.signMessage, onA.signMessage)
  assert.match(String(details.signMessage), /^Service: https:\/\/kns\.example\.com$/m)

  const retried = await postJson(`${b.url}/numsys/approval-phone`, body, { 'x-api-key': key.key })
  assert.equal(retried.status, 200)
  assert.equal(retried.body.approvalNumber, ref)
  const conflict = await postJson(`${b.url}/numsys/approval-phone`, { ...body, title: 'Something else' }, { 'x-api-key': key.key })
  assert.equal(conflict.status, 409)
})

test('a third process without PUBLIC_BASE_URL refuses to start, naming the URL the database is served as', { skip }, async () => {
  const { PUBLIC_BASE_URL: _shared, ...withoutUrl } = fresh!.env
  const third = await startServer(withoutUrl, { timeoutMs: 10_000 }).then(
    (server) => ({ started: true as const, server }),
    (err: unknown) => ({ started: false as const, err }))
  if (third.started) await third.server.stop()
  assert.equal(third.started, false, 'the third server started')
  assert.match(String((third as { err: unknown }).err), /PUBLIC_BASE_URL is not set, and this database is served as https:\/\/kns\.example\.com/)
})

test('a key revoked through the CLI is refused by both servers within 1 s', { skip }, async (t) => {
  const timing = await measureRevocation([a.url, b.url], key.key,
    () => runKns(['api-key', 'revoke', key.id, '--json'], fresh!.env), '+14155550125')
  assert.equal(timing.revoke.code, 0, timing.revoke.stderr)
  t.diagnostic(`401 ${timing.lag.map((ms) => Math.round(ms)).join(' / ')} ms after the CLI returned`)
  for (const [i, name] of ['A', 'B'].entries()) {
    assert.ok(timing.before[i]!.every((status) => status === 404), `server ${name} accepted the key before: ${timing.before[i]}`)
    assert.ok(timing.lag[i]! <= 1000, `server ${name} refused it ${timing.lag[i]} ms after the CLI returned`)
  }
})

test('both servers shut down cleanly on SIGTERM', { skip }, async () => {
  const [exitA, exitB] = await Promise.all([a.stop(), b.stop()])
  assert.deepEqual(exitA, { code: 0, signal: null }, a.stderr())
  assert.deepEqual(exitB, { code: 0, signal: null }, b.stderr())
})
