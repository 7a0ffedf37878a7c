/**
 * An authorization code is redeemed once, also when its redemptions arrive together: of many
 * simultaneous token requests with one code and its PKCE verifier, exactly one gets tokens and
 * the others invalid_grant (never a 5xx). oidc-provider reads `consumed` on find, before it
 * consumes, so the storage adapter's consume is what decides (real HTTP to a listening server).
 */
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import * as client from 'openid-client'
import { adapterFactory } from '../../src/accounts/provider-adapter.ts'
import { randomPhone, register } from '../support/kns.ts'
import { Browser, codeFlowUrl, logIn, startLoginServer, type LoginServer } from '../support/login.ts'

const SIMULTANEOUS = 20

let server: LoginServer
let redirectUri: string
before(async () => {
  server = await startLoginServer()
  redirectUri = `${server.base}/approve`
})
after(async () => { await server.close() })

/** A fresh code for a registered user of the built-in client, and its verifier. */
async function freshCode(): Promise<{ code: string; verifier: string }> {
  const user = await register(server.h, randomPhone())
  const verifier = client.randomPKCECodeVerifier()
  const callback = new URL(await logIn(server, new Browser(), codeFlowUrl(server, verifier), user.phoneNumber))
  const code = callback.searchParams.get('code')
  assert.ok(code !== null, `a code in ${callback.href}`)
  return { code, verifier }
}

async function redeem(code: string, verifier: string): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`${server.issuer}/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'authorization_code', code, redirect_uri: redirectUri, code_verifier: verifier, client_id: server.h.service.config.zkLoginClientId }),
  })
  return { status: res.status, body: await res.json() as Record<string, unknown> }
}

describe('an authorization code is redeemed once', () => {
  test(`${SIMULTANEOUS} simultaneous token requests with one code: one token set, the others invalid_grant (three rounds)`, async () => {
    for (let round = 0; round < 3; round++) {
      const { code, verifier } = await freshCode()
      const answers = await Promise.all(Array.from({ length: SIMULTANEOUS }, () => redeem(code, verifier)))
      const issued = answers.filter((a) => a.status === 200)
      assert.equal(issued.length, 1, `round ${round}: ${issued.length} token sets`)
      assert.equal(typeof issued[0]!.body.id_token, 'string')
      for (const refused of answers.filter((a) => a.status !== 200)) {
        assert.equal(refused.status, 400, JSON.stringify(refused.body))
        assert.equal(refused.body.error, 'invalid_grant')
      }
    }
  })

  test('a code redeemed after its use is refused too', async () => {
    const { code, verifier } = await freshCode()
    assert.equal((await redeem(code, verifier)).status, 200)
    const again = await redeem(code, verifier)
    assert.equal(again.status, 400)
    assert.equal(again.body.error, 'invalid_grant')
  })

  test('the adapter consumes a payload once: a second consume is refused as invalid_grant and revokes its grant', async () => {
    const { db, accounts } = server.h.service
    const adapter = adapterFactory(db, accounts.clients)('AuthorizationCode')
    const grants = adapterFactory(db, accounts.clients)('Grant')
    const grantId = `grant-${Date.now()}`
    await grants.upsert(grantId, { jti: grantId }, 60)
    await adapter.upsert('code-1', { jti: 'code-1', grantId }, 60)
    // Started together, either may win: exactly one is fulfilled, the other refused.
    const settled = await Promise.allSettled([adapter.consume('code-1'), adapter.consume('code-1')])
    assert.deepEqual(settled.map((s) => s.status).sort(), ['fulfilled', 'rejected'])
    const refused = settled.find((s): s is PromiseRejectedResult => s.status === 'rejected')!
    const error = refused.reason as { error?: string; error_detail?: string }
    assert.equal(error.error, 'invalid_grant')
    assert.equal(error.error_detail, 'authorization code already consumed')
    assert.equal(await grants.find(grantId), undefined, 'the grant is revoked')
    assert.equal(await adapter.find('code-1'), undefined, 'and its code')
  })
})
