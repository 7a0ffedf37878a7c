/**
 * Three-legged CAMARA tokens over HTTP: the authorization code flow (PKCE S256) of a CAMARA
 * client, the phone-number login, the consent step naming the client and the purpose, and the
 * token endpoint with private_key_jwt: a JWT access token whose pairwise sub CamaraTokens maps
 * back to the number, an ID token without the number or a global identifier. Deny is
 * access_denied; consent is asked on every authorization; login clients are not asked.
 */
import assert from 'node:assert/strict'
import { createHash, randomBytes } from 'node:crypto'
import { after, before, describe, test } from 'node:test'
import { decodeJwt, decodeProtectedHeader, SignJWT } from 'jose'
import { camaraAudience, FRAUD_PREVENTION_PURPOSE } from '../../src/camara/access.ts'
import { CamaraTokens } from '../../src/camara/access-token.ts'
import { randomPhone, register } from '../support/kns.ts'
import { Browser, codeFlowUrl, logIn, startLoginServer, type LoginServer } from '../support/login.ts'
import { clientAssertion, registerCamaraClient, tokenRequest, type CamaraTestClient } from '../support/camara-client.ts'

const CALLBACK = 'http://localhost:45999/bank/callback'
const SCOPE = `openid sim-swap:check ${FRAUD_PREVENTION_PURPOSE}`

let server: LoginServer
let bank: CamaraTestClient
let tokens: CamaraTokens

before(async () => {
  server = await startLoginServer()
  bank = await registerCamaraClient(server, { grantType: 'authorization_code', redirectUris: [CALLBACK], name: 'Acme Bank' })
  tokens = new CamaraTokens(server.h.service)
})
after(async () => { await server.close() })

function authorizationUrl(client: CamaraTestClient, verifier: string, scope = SCOPE): string {
  const url = new URL(`${server.issuer}/auth`)
  url.search = new URLSearchParams({
    client_id: client.clientId, redirect_uri: CALLBACK, response_type: 'code', scope, state: 'st', ...(scope.split(' ').includes('openid') ? { nonce: 'nn' } : {}),
    code_challenge: createHash('sha256').update(verifier).digest('base64url'), code_challenge_method: 'S256',
  }).toString()
  return url.href
}

/** Logs in as `phone`; returns the browser at the consent step and its interaction uid. */
async function toConsent(client: CamaraTestClient, phone: string, verifier: string, browser = new Browser()) {
  const atConsent = await logIn(server, browser, authorizationUrl(client, verifier), phone)
  const uid = /\/oidc\/interaction\/([^/?#]+)$/.exec(new URL(atConsent).pathname)?.[1]
  assert.ok(uid !== undefined, `the provider asks for consent after the login, got ${atConsent}`)
  return { browser, uid }
}

async function decide(browser: Browser, uid: string, decision: 'approve' | 'deny'): Promise<URL> {
  const answer = await browser.json(`${server.base}/oidc/interaction/${uid}/consent`, { decision })
  assert.equal(answer.status, 200, JSON.stringify(answer.body))
  const done = await browser.follow(new URL(String(answer.body.redirectTo), server.base).href, server.base)
  return new URL(done.url)
}

async function redeem(client: CamaraTestClient, code: string, verifier: string) {
  return tokenRequest(server, {
    grant_type: 'authorization_code', code, redirect_uri: CALLBACK, code_verifier: verifier,
    client_assertion_type: 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer', client_assertion: await clientAssertion(server, client),
  })
}

describe('three-legged CAMARA tokens', () => {
  test('login, consent naming the client and the purpose, token: the access token gives the number to the resource server', async () => {
    const user = await register(server.h, randomPhone())
    const verifier = randomBytes(32).toString('base64url')
    const { browser, uid } = await toConsent(bank, user.phoneNumber, verifier)

    const details = await browser.fetch(`${server.base}/oidc/interaction/${uid}/details`)
    const asked = await details.json() as Record<string, unknown>
    assert.equal(asked.prompt, 'consent')
    assert.deepEqual(asked.client, { clientId: bank.clientId, name: 'Acme Bank' })
    const consent = asked.consent as { scopes: Array<{ scope: string; description: string }>; purpose: { scope: string; description: string } }
    assert.deepEqual(consent.scopes.map((s) => s.scope), ['sim-swap:check'])
    assert.match(consent.scopes[0]!.description, /SIM card/)
    assert.equal(consent.purpose.scope, FRAUD_PREVENTION_PURPOSE)
    assert.match(consent.purpose.description, /fraud/i)
    // The login steps are over: no code can be sent from the consent step.
    assert.equal((await browser.json(`${server.base}/oidc/interaction/${uid}/code`, { phoneNumber: user.phoneNumber })).status, 400)

    const callback = await decide(browser, uid, 'approve')
    assert.equal(callback.origin + callback.pathname, CALLBACK)
    const code = callback.searchParams.get('code')
    assert.ok(code, callback.href)
    const answer = await redeem(bank, code, verifier)
    assert.equal(answer.status, 200, JSON.stringify(answer.body))
    assert.equal(answer.body.refresh_token, undefined)

    const jwt = String(answer.body.access_token)
    assert.equal(decodeProtectedHeader(jwt).typ, 'at+jwt')
    const claims = decodeJwt(jwt)
    assert.equal(claims.aud, camaraAudience(server.h.service.config.publicBaseUrl))
    assert.equal(claims.client_id, bank.clientId)
    assert.equal(claims.scope, `sim-swap:check ${FRAUD_PREVENTION_PURPOSE}`)
    assert.notEqual(claims.sub, user.userId, 'pairwise, not the user ID')
    assert.ok(!jwt.includes(user.phoneNumber.slice(1)) && !JSON.stringify(claims).includes(user.phoneNumber.slice(1)), 'no number in the token')

    const idClaims = decodeJwt(String(answer.body.id_token))
    assert.equal(idClaims.sub, claims.sub, 'the ID token names the same pairwise subject')
    assert.equal(idClaims.aud, bank.clientId)
    for (const claim of ['phone_number', 'preferred_username', 'email']) assert.equal(idClaims[claim], undefined, claim)

    const access = await tokens.verify(`Bearer ${jwt}`)
    assert.equal(access.phoneNumber, user.phoneNumber)
    assert.equal(access.clientId, bank.clientId)
    assert.deepEqual([...access.scopes].sort(), [FRAUD_PREVENTION_PURPOSE, 'sim-swap:check'].sort())
  })

  test('the pairwise subject differs from one client to another for the same user, and is stable at one client', async () => {
    const other = await registerCamaraClient(server, { grantType: 'authorization_code', redirectUris: [CALLBACK] })
    const user = await register(server.h, randomPhone())
    const subs: string[] = []
    for (const client of [bank, other, bank]) {
      const verifier = randomBytes(32).toString('base64url')
      const { browser, uid } = await toConsent(client, user.phoneNumber, verifier)
      const code = (await decide(browser, uid, 'approve')).searchParams.get('code')!
      subs.push(String(decodeJwt(String((await redeem(client, code, verifier)).body.access_token)).sub))
    }
    assert.notEqual(subs[0], subs[1])
    assert.equal(subs[0], subs[2])
  })

  test('without openid: an access token and no ID token', async () => {
    const user = await register(server.h, randomPhone())
    const verifier = randomBytes(32).toString('base64url')
    const browser = new Browser()
    const atConsent = await logIn(server, browser, authorizationUrl(bank, verifier, `sim-swap:check ${FRAUD_PREVENTION_PURPOSE}`), user.phoneNumber)
    const uid = /\/oidc\/interaction\/([^/?#]+)$/.exec(new URL(atConsent).pathname)![1]!
    const code = (await decide(browser, uid, 'approve')).searchParams.get('code')!
    const answer = await redeem(bank, code, verifier)
    assert.equal(answer.status, 200, JSON.stringify(answer.body))
    assert.equal(answer.body.id_token, undefined)
    assert.equal((await tokens.verify(`Bearer ${String(answer.body.access_token)}`)).phoneNumber, user.phoneNumber)
  })

  test('deny sends the client access_denied and no code', async () => {
    const user = await register(server.h, randomPhone())
    const { browser, uid } = await toConsent(bank, user.phoneNumber, randomBytes(32).toString('base64url'))
    const callback = await decide(browser, uid, 'deny')
    assert.equal(callback.searchParams.get('error'), 'access_denied', callback.href)
    assert.equal(callback.searchParams.get('code'), null)
  })

  test('consent is asked on every authorization, also in a browser that consented before', async () => {
    const user = await register(server.h, randomPhone())
    const first = randomBytes(32).toString('base64url')
    const { browser, uid } = await toConsent(bank, user.phoneNumber, first)
    await decide(browser, uid, 'approve')
    // The same browser (its session) comes back: no login is asked, but consent is.
    const again = await browser.follow(authorizationUrl(bank, randomBytes(32).toString('base64url')), server.base)
    const uid2 = /\/oidc\/interaction\/([^/?#]+)$/.exec(new URL(again.url).pathname)?.[1]
    assert.ok(uid2 !== undefined, again.url)
    const details = await (await browser.fetch(`${server.base}/oidc/interaction/${uid2}/details`)).json() as { prompt: string }
    assert.equal(details.prompt, 'consent')
  })

  test('what the authorization request asks is checked there: scopes outside the registration, no purpose, the number\'s claims', async () => {
    for (const scope of [`openid device-swap:check ${FRAUD_PREVENTION_PURPOSE}`, 'openid sim-swap:check', `openid phone sim-swap:check ${FRAUD_PREVENTION_PURPOSE}`]) {
      const res = await new Browser().follow(authorizationUrl(bank, randomBytes(32).toString('base64url'), scope), server.base)
      const callback = new URL(res.url)
      assert.equal(callback.origin + callback.pathname, CALLBACK, `${scope}: ${res.url}`)
      assert.equal(callback.searchParams.get('error'), 'invalid_scope', scope)
    }
  })

  test('a consent answer where no consent is asked is refused', async () => {
    const user = await register(server.h, randomPhone())
    const browser = new Browser()
    const toLogin = await browser.follow(authorizationUrl(bank, randomBytes(32).toString('base64url')), server.base)
    const uid = /\/oidc\/interaction\/([^/?#]+)$/.exec(new URL(toLogin.url).pathname)![1]!
    const answer = await browser.json(`${server.base}/oidc/interaction/${uid}/consent`, { decision: 'approve' })
    assert.equal(answer.status, 400, JSON.stringify(answer.body))
    // A stranger's browser (no interaction cookie) cannot answer someone's consent step.
    const { uid: asked } = await toConsent(bank, user.phoneNumber, randomBytes(32).toString('base64url'))
    assert.equal((await new Browser().json(`${server.base}/oidc/interaction/${asked}/consent`, { decision: 'approve' })).status, 404)
  })

  test('a signed authentication request (JAR): accepted within CAMARA\'s rules, refused outside them', async () => {
    const user = await register(server.h, randomPhone())
    const verifier = randomBytes(32).toString('base64url')
    const plain = new URL(authorizationUrl(bank, verifier))
    /** The plain request and the same parameters signed (by the bank's key, or `signer`'s). */
    const signed = async (claims: Record<string, unknown> = {}, signer = bank) => {
      const now = Math.floor(Date.now() / 1000)
      const payload = { ...Object.fromEntries(plain.searchParams), iss: bank.clientId, aud: server.issuer, iat: now, exp: now + 120, jti: randomBytes(8).toString('hex'), ...claims }
      for (const [k, v] of Object.entries(payload)) if (v === null) delete (payload as Record<string, unknown>)[k]
      const url = new URL(plain)
      url.searchParams.set('request', await new SignJWT(payload).setProtectedHeader({ alg: signer.alg, kid: signer.kid, typ: 'oauth-authz-req+jwt' }).sign(signer.privateKey))
      return url.href
    }
    const browser = new Browser()
    const atConsent = await logIn(server, browser, await signed(), user.phoneNumber)
    const uid = /\/oidc\/interaction\/([^/?#]+)$/.exec(new URL(atConsent).pathname)![1]!
    const code = (await decide(browser, uid, 'approve')).searchParams.get('code')!
    assert.equal((await redeem(bank, code, verifier)).status, 200)

    const now = Math.floor(Date.now() / 1000)
    const stranger = await registerCamaraClient(server, { grantType: 'authorization_code', redirectUris: [CALLBACK] })
    for (const [why, url] of [
      ['lives 600 s', await signed({ iat: now, exp: now + 600 })],
      ['no jti', await signed({ jti: null })],
      ['another scope inside', await signed({ scope: `openid sim-swap:retrieve-date ${FRAUD_PREVENTION_PURPOSE}` })],
      ['signed by another client\'s key', await signed({}, stranger)],
    ] as const) {
      const res = await new Browser().follow(url, server.base)
      const body = res.url.startsWith(server.base) ? await res.res.text() : ''
      assert.match(`${res.url} ${body}`, /invalid_request_object/, why)
      assert.doesNotMatch(res.url, /[?&]code=/, why)
    }
    // A login client may not send request objects.
    const login = new URL(codeFlowUrl(server, verifier))
    login.searchParams.set('request', await new SignJWT({ client_id: login.searchParams.get('client_id')! }).setProtectedHeader({ alg: 'ES256' }).sign(bank.privateKey))
    const res = await new Browser().follow(login.href, server.base)
    assert.match(`${res.url} ${res.url.startsWith(server.base) ? await res.res.text() : ''}`, /invalid_request_object/)
  })

  test('login clients are never asked for consent', async () => {
    const user = await register(server.h, randomPhone())
    const callback = await logIn(server, new Browser(), codeFlowUrl(server, randomBytes(32).toString('base64url')), user.phoneNumber)
    assert.ok(new URL(callback).searchParams.get('code'), callback)
  })

  test('a two-legged client cannot use the authorization endpoint', async () => {
    const twoLegged = await registerCamaraClient(server)
    const res = await new Browser().fetch(authorizationUrl(twoLegged, randomBytes(32).toString('base64url')))
    assert.equal(res.headers.get('location'), null, 'never redirected')
    assert.equal(res.status, 400)
  })
})
