/**
 * The login provider while its database cannot be reached (a failover): the same 503
 * DATABASE_UNAVAILABLE with Retry-After as every other route, in the service's error shape,
 * not oidc-provider's own `server_error` 500 (found by the cluster's crash of the primary:
 * a login's authorization request answered 500).
 */
import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import type { Database } from '../../src/db/engine.ts'
import { startLoginServer, type LoginServer } from '../support/login.ts'

let server: LoginServer

before(async () => { server = await startLoginServer() })
after(async () => { await server.close() })

/** Every statement fails as a connection to a server that is gone does, while `fn` runs. */
async function withDatabaseDown<T>(db: Database, fn: () => Promise<T>): Promise<T> {
  const methods = ['get', 'all', 'run', 'transaction'] as const
  const saved = methods.map((m) => db[m])
  const refused = async () => { throw Object.assign(new Error('connect ECONNREFUSED 10.77.0.13:5432'), { code: 'ECONNREFUSED' }) }
  for (const m of methods) (db as unknown as Record<string, unknown>)[m] = refused
  try {
    return await fn()
  } finally {
    methods.forEach((m, i) => { (db as unknown as Record<string, unknown>)[m] = saved[i] })
  }
}

test('an authorization request while the database is down: 503 DATABASE_UNAVAILABLE with Retry-After, not a server_error 500', async () => {
  const auth = new URL(`${server.issuer}/auth`)
  auth.search = new URLSearchParams({
    client_id: server.h.service.config.zkLoginClientId, redirect_uri: `${server.base}/approve`, response_type: 'id_token',
    scope: 'openid', nonce: 'n-outage', state: 's', prompt: 'login',
  }).toString()
  const res = await withDatabaseDown(server.h.service.db, () => fetch(auth, { redirect: 'manual', headers: { 'x-request-id': 'outage-auth-1' } }))
  const body = await res.json() as Record<string, unknown>
  assert.equal(res.status, 503, JSON.stringify(body))
  assert.equal(res.headers.get('retry-after'), '1')
  assert.deepEqual([body.success, body.code, body.requestId], [false, 'DATABASE_UNAVAILABLE', 'outage-auth-1'])
  assert.equal(body.message, body.error)
  // And once it is back, the same request starts a login.
  const again = await fetch(auth, { redirect: 'manual' })
  assert.equal(again.status, 303)
  assert.match(again.headers.get('location') ?? '', /\/oidc\/interaction\//)
})

test('a login step while the database is down: 503 with Retry-After, not "this login has expired" (a failover must not send a user back to the start)', async () => {
  const auth = new URL(`${server.issuer}/auth`)
  auth.search = new URLSearchParams({
    client_id: server.h.service.config.zkLoginClientId, redirect_uri: `${server.base}/approve`, response_type: 'id_token',
    scope: 'openid', nonce: 'n-outage-2', state: 's', prompt: 'login',
  }).toString()
  const started = await fetch(auth, { redirect: 'manual' })
  assert.equal(started.status, 303)
  const interactionUrl = new URL(started.headers.get('location')!, server.base)
  const cookie = started.headers.getSetCookie().map((c) => c.split(';')[0]).join('; ')
  const step = () => fetch(`${interactionUrl.href}/code`, {
    method: 'POST', headers: { cookie, 'content-type': 'application/json' }, body: JSON.stringify({ phoneNumber: '+447911123456' }),
  })
  const down = await withDatabaseDown(server.h.service.db, step)
  const body = await down.json() as Record<string, unknown>
  assert.equal(down.status, 503, JSON.stringify(body))
  assert.equal(down.headers.get('retry-after'), '1')
  assert.equal(body.code, 'DATABASE_UNAVAILABLE')
  // Back: the same login goes on (202: a code sent, or the same answer for a number without an account).
  assert.equal((await step()).status, 202)
})
