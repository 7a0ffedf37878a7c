/**
 * approval-phone resolves the number through a cache (PhoneLinks) that the change signal
 * keeps fresh; the approval insert re-checks the link, so even an entry gone stale without
 * a signal never yields an approval for the wrong token.
 */
import { after, before, test } from 'node:test'
import assert from 'node:assert/strict'
import { linkNumber } from '../../src/identity/numbers.ts'
import { startHarness, type Harness } from '../helpers.ts'
import { approvalBody, assertError, localLedger, post, randomObjectId, randomPhone } from '../support/kns.ts'

let h: Harness
let key: string

before(async () => {
  h = await startHarness()
  key = await h.key({ scopes: ['approvals'], vendor: 'Acme Bank' })
})
after(async () => { await h.close() })

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** A number linked to a fresh token, with the setup's own change signals already heard. */
async function linkedNumber(): Promise<{ phone: string; objectId: string }> {
  const phone = randomPhone()
  const { objectId } = await localLedger(h).mintToken(randomObjectId())
  await linkNumber(h.service.db, phone, objectId, 'linked')
  await sleep(1100)
  return { phone, objectId }
}

async function approve(phone: string) {
  return post(h, '/numsys/approval-phone', approvalBody({ phoneNumber: phone }), { 'x-api-key': key })
}

async function storedToken(approvalNumber: string): Promise<string | undefined> {
  return (await h.service.db.get<{ object_id: string }>('SELECT object_id FROM approvals WHERE approval_number = $1', [approvalNumber]))?.object_id
}

test('a link changed without the change signal: the cache still holds the old token, the approval names the new one', async () => {
  const { phone, objectId } = await linkedNumber()
  const first = await approve(phone)
  assert.equal(first.statusCode, 200, first.body)
  assert.equal(await storedToken(first.json().approvalNumber), objectId)

  const { objectId: other } = await localLedger(h).mintToken(randomObjectId())
  await h.service.db.run('UPDATE numbers SET object_id = $1 WHERE phone = $2', [other, phone])
  await sleep(300)
  assert.equal((await h.service.phoneLinks.find(phone))?.objectId, objectId, 'the cache is warm and stale')

  const second = await approve(phone)
  assert.equal(second.statusCode, 200, second.body)
  assert.equal(await storedToken(second.json().approvalNumber), other)
  assert.equal((await h.service.phoneLinks.find(phone))?.objectId, other, 'the stale entry was replaced')
})

test('a link removed without the change signal: 404, and nothing is stored', async () => {
  const { phone } = await linkedNumber()
  assert.equal((await approve(phone)).statusCode, 200)
  await h.service.db.run('DELETE FROM numbers WHERE phone = $1', [phone])
  const before = await h.service.db.get<{ n: number }>('SELECT COUNT(*) AS n FROM approvals WHERE phone_number = $1', [phone])
  assertError(await approve(phone), 404, 'NOT_FOUND', 'phoneNumber')
  const after = await h.service.db.get<{ n: number }>('SELECT COUNT(*) AS n FROM approvals WHERE phone_number = $1', [phone])
  assert.equal(Number(after?.n), Number(before?.n))
})

test('relinking through linkNumber reaches the cache within 1 s', async () => {
  const { phone, objectId } = await linkedNumber()
  assert.equal((await approve(phone)).statusCode, 200)
  assert.equal((await h.service.phoneLinks.find(phone))?.objectId, objectId)
  const { objectId: other } = await localLedger(h).mintToken(randomObjectId())
  await linkNumber(h.service.db, phone, other, 'linked')
  const deadline = Date.now() + 1000
  let seen = objectId
  while (Date.now() < deadline && seen !== other) {
    await sleep(50)
    seen = (await h.service.phoneLinks.find(phone))?.objectId ?? ''
  }
  assert.equal(seen, other)
})

test('a number without a link is not cached: linked a moment later, it is found at once', async () => {
  const phone = randomPhone()
  assert.equal((await approve(phone)).statusCode, 404)
  const { objectId } = await localLedger(h).mintToken(randomObjectId())
  // Written without the signal: only an uncached miss can see it.
  await h.service.db.run(`INSERT INTO numbers (phone, object_id, source, country, created_at) VALUES ($1, $2, 'linked', 'GB', $3)`,
    [phone, objectId, Date.now()])
  const res = await approve(phone)
  assert.equal(res.statusCode, 200, res.body)
  assert.equal(await storedToken(res.json().approvalNumber), objectId)
})
