/**
 * APPROVAL_COMMIT: a new approval is written through the database's asyncCommit connections
 * (the default) or through its ordinary ones (`sync`). Only PostgreSQL tells them apart: on
 * SQLite both are the same database.
 */
import { after, before, describe, test } from 'node:test'
import assert from 'node:assert/strict'
import type { PostgresDatabase } from '../../src/db/postgres.ts'
import { ENGINE, startHarness, type Harness } from '../helpers.ts'
import { approvalBody, localLedger, post, randomObjectId, randomPhone } from '../support/kns.ts'
import { linkNumber } from '../../src/identity/numbers.ts'

const skip = ENGINE === 'sqlite' ? 'PostgreSQL only: on SQLite asyncCommit is the database itself' : false

async function createOne(h: Harness): Promise<string> {
  const key = await h.key({ scopes: ['approvals'] })
  const phone = randomPhone()
  const { objectId } = await localLedger(h).mintToken(randomObjectId())
  await linkNumber(h.service.db, phone, objectId, 'linked')
  const response = await post(h, '/numsys/approval-phone', approvalBody({ phoneNumber: phone }), { 'x-api-key': key })
  assert.equal(response.statusCode, 200, response.body)
  const { approvalNumber } = response.json() as { approvalNumber: string }
  const stored = await h.service.db.get<{ status: string }>('SELECT status FROM approvals WHERE approval_number = $1', [approvalNumber])
  assert.equal(stored?.status, 'pending')
  return approvalNumber
}

const asyncPool = (h: Harness) => (h.service.db.asyncCommit as PostgresDatabase).pool

for (const [mode, env, used] of [['async (default)', {}, true], ['sync', { APPROVAL_COMMIT: 'sync' }, false]] as const) {
  describe(`APPROVAL_COMMIT=${mode}`, { skip }, () => {
    let h: Harness
    before(async () => { h = await startHarness(env) })
    after(async () => { await h.close() })

    test(used ? 'the approval is written through the asyncCommit connections' : 'the asyncCommit connections are not used', async () => {
      // The pool is opened on first use: in sync mode this access creates it, unused.
      let acquired = 0
      asyncPool(h).on('acquire', () => { acquired++ })
      await createOne(h)
      assert.equal(acquired > 0, used, `${acquired} acquisitions`)
      assert.equal(asyncPool(h).totalCount > 0, used)
    })

    test('the OpenAPI description of both creation endpoints states what a 200 promises', async () => {
      const doc = (await h.app.inject({ method: 'GET', url: '/openapi.json' })).json()
      for (const path of ['/numsys/approval-phone', '/numsys/approval-object-id']) {
        assert.match(doc.paths[path].post.description, used ? /answers before the new approval is on the database's disk/ : /committed durably before this answer/, path)
      }
    })
  })
}
