/**
 * A CAMARA client's ID token (three-legged, its pairwise subject) is for that client's own
 * login, never a zkLogin credential: the salt service and the prover take ID tokens of the
 * login (zkLogin) clients only, as the CAMARA APIs take no login client's token.
 */
import assert from 'node:assert/strict'
import { createHash, randomBytes } from 'node:crypto'
import { after, before, test } from 'node:test'
import { FRAUD_PREVENTION_PURPOSE } from '../../src/camara/access.ts'
import { post, randomPhone, register } from '../support/kns.ts'
import { Browser, logIn, startLoginServer, type LoginServer } from '../support/login.ts'
import { clientAssertion, registerCamaraClient, tokenRequest, type CamaraTestClient } from '../support/camara-client.ts'

const CALLBACK = 'http://localhost:45998/bank/callback'

let server: LoginServer
let bank: CamaraTestClient

before(async () => {
  server = await startLoginServer()
  bank = await registerCamaraClient(server, { grantType: 'authorization_code', redirectUris: [CALLBACK], name: 'Acme Bank' })
})
after(async () => { await server.close() })

async function camaraIdToken(phone: string): Promise<string> {
  const verifier = randomBytes(32).toString('base64url')
  const url = new URL(`${server.issuer}/auth`)
  url.search = new URLSearchParams({
    client_id: bank.clientId, redirect_uri: CALLBACK, response_type: 'code', scope: `openid sim-swap:check ${FRAUD_PREVENTION_PURPOSE}`, state: 'st', nonce: 'nn',
    code_challenge: createHash('sha256').update(verifier).digest('base64url'), code_challenge_method: 'S256',
  }).toString()
  const browser = new Browser()
  const atConsent = await logIn(server, browser, url.href, phone)
  const uid = /\/oidc\/interaction\/([^/?#]+)$/.exec(new URL(atConsent).pathname)![1]!
  const answer = await browser.json(`${server.base}/oidc/interaction/${uid}/consent`, { decision: 'approve' })
  const done = await browser.follow(new URL(String(answer.body.redirectTo), server.base).href, server.base)
  const code = new URL(done.url).searchParams.get('code')!
  const tokens = await tokenRequest(server, {
    grant_type: 'authorization_code', code, redirect_uri: CALLBACK, code_verifier: verifier,
    client_assertion_type: 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer', client_assertion: await clientAssertion(server, bank),
  })
  assert.equal(tokens.status, 200, JSON.stringify(tokens.body))
  return String(tokens.body.id_token)
}

test('a CAMARA client\'s ID token gets no zkLogin salt', async () => {
  const user = await register(server.h, randomPhone())
  const idToken = await camaraIdToken(user.phoneNumber)
  const salt = await post(server.h, '/zklogin/v1/salt', { token: idToken })
  assert.equal(salt.statusCode, 400, salt.body)
  assert.equal((salt.json() as { code: string }).code, 'INVALID_ID_TOKEN')
})
