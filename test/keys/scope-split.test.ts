/**
 * The operator's scopes kept apart (issue "Production under pressure", item 5): a statistics
 * uploader's key reaches no webhook or login-client administration, and migration 14 leaves
 * every existing `admin` key with statistics uploads only.
 */
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { migrate } from '../../src/db/migrations.ts'
import { openDatabase } from '../../src/db/open.ts'
import { parseScopes } from '../../src/keys/api-keys.ts'
import { MIGRATIONS } from '../../src/migrations.ts'
import { freshDatabaseEnv, startHarness, type Harness } from '../helpers.ts'

describe('the operator scopes', () => {
  let h: Harness
  before(async () => { h = await startHarness({ WEBHOOK_ALLOW_PRIVATE: 'true' }) })
  after(async () => { await h.close() })

  const call = (key: string, method: 'GET' | 'POST', url: string, payload?: object) => payload === undefined
    ? h.app.inject({ method, url, headers: { 'x-api-key': key } })
    : h.app.inject({ method, url, headers: { 'x-api-key': key, 'content-type': 'application/json' }, payload: JSON.stringify(payload) })

  test('a stats key uploads statistics but cannot subscribe to a vendor\'s decisions, replay them, or add a login client', async () => {
    const uploader = await h.key({ scopes: ['stats'], vendor: 'Gateway uploader' })
    const vendorKeyId = (await h.service.db.get<{ id: string }>('SELECT id FROM api_keys ORDER BY created_at LIMIT 1'))!.id
    const subscribe = await call(uploader, 'POST', '/api/v1/admin/webhooks', { keyId: vendorKeyId, url: 'https://hooks.example.com/kns' })
    assert.equal(subscribe.statusCode, 403, subscribe.body)
    assert.match(subscribe.json().error, /webhooks/)
    assert.equal((await call(uploader, 'GET', '/api/v1/admin/webhook-deliveries')).statusCode, 403)
    assert.equal((await call(uploader, 'POST', '/api/v1/admin/webhook-events/evt_00000000000000000000000000000000/replay')).statusCode, 403)
    assert.equal((await call(uploader, 'POST', '/api/v1/admin/oidc/clients', { name: 'x', redirectUris: ['https://rp.example.com/cb'] })).statusCode, 403)
    // ... and what it is for still works (validation, not authorization, answers).
    assert.notEqual((await call(uploader, 'POST', '/api/v1/admin/usage', [])).statusCode, 403)
  })

  test('a webhooks key administers webhooks only', async () => {
    const hooks = await h.key({ scopes: ['webhooks'], vendor: 'Operator' })
    assert.equal((await call(hooks, 'GET', '/api/v1/admin/webhooks')).statusCode, 200)
    assert.equal((await call(hooks, 'GET', '/api/v1/admin/oidc/clients')).statusCode, 403)
    assert.equal((await call(hooks, 'POST', '/api/v1/admin/usage', [])).statusCode, 403)
  })

  test('"admin" is refused with the names it was split into', () => {
    assert.throws(() => parseScopes('approvals,admin'), /admin scope was split: stats .*webhooks .*oidc/)
  })
})

test('migration 14: every existing admin key keeps statistics uploads only; other scopes untouched', async () => {
  const fresh = await freshDatabaseEnv()
  const db = openDatabase(fresh.config)
  try {
    await migrate(db, MIGRATIONS.filter((m) => m.version <= 13))
    const keys = [['a1', 'admin'], ['a2', 'approvals,admin'], ['a3', 'admin,caller'], ['a4', 'approvals,caller,signing'], ['a5', 'caller,admin,signing']]
    for (const [id, scopes] of keys) {
      await db.run('INSERT INTO api_keys (id, secret_hash, vendor, scopes, rate, created_at) VALUES ($1, $2, $3, $4, 10, 0)', [id, 'x', 'V', scopes])
    }
    assert.deepEqual(await migrate(db, MIGRATIONS.filter((m) => m.version <= 14)), [14])
    const rows = await db.all<{ id: string; scopes: string }>('SELECT id, scopes FROM api_keys ORDER BY id')
    assert.deepEqual(rows.map((r) => [r.id, r.scopes]), [
      ['a1', 'stats'], ['a2', 'approvals,stats'], ['a3', 'stats,caller'], ['a4', 'approvals,caller,signing'], ['a5', 'caller,stats,signing'],
    ])
  } finally {
    await db.close()
    await fresh.cleanup()
  }
})
