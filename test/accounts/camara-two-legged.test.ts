/**
 * Two-legged CAMARA tokens (client credentials): a client registered with its own key pair
 * authenticates with private_key_jwt only and gets an RFC 9068 JWT access token for the CAMARA
 * APIs with `scope` alone; the CAMARA Security profile's refusals, each on its own.
 */
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { decodeJwt, decodeProtectedHeader } from 'jose'
import { camaraAudience, FRAUD_PREVENTION_PURPOSE } from '../../src/camara/access.ts'
import { CamaraTokens } from '../../src/camara/access-token.ts'
import { startLoginServer, type LoginServer } from '../support/login.ts'
import {
  clientAssertion, clientCredentials, registerCamaraClient, SIM_SWAP_SCOPE, tokenRequest, type CamaraTestClient,
} from '../support/camara-client.ts'

let server: LoginServer
let bank: CamaraTestClient
let tokens: CamaraTokens
/** Why the last token request failed: invalid_client answers say only "client authentication failed", the reason is the error's detail. */
let lastDetail = ''

before(async () => {
  server = await startLoginServer()
  bank = await registerCamaraClient(server)
  tokens = new CamaraTokens(server.h.service)
  server.h.service.accounts.provider.provider.on('grant.error', (_ctx, err: { error_detail?: string }) => { lastDetail = err.error_detail ?? '' })
})
after(async () => { await server.close() })

function assertOAuthError(answer: { status: number; body: Record<string, unknown> }, error: string, description?: RegExp): void {
  assert.equal(answer.body.error, error, JSON.stringify(answer.body))
  assert.equal(answer.body.access_token, undefined)
  if (description !== undefined) assert.match(`${String(answer.body.error_description)} / ${lastDetail}`, description)
}

describe('client credentials for CAMARA clients', () => {
  test('scope alone (no resource): a JWT access token for the CAMARA audience, which CamaraTokens accepts', async () => {
    const answer = await clientCredentials(server, bank)
    assert.equal(answer.status, 200, JSON.stringify(answer.body))
    assert.equal(answer.body.token_type, 'Bearer')
    assert.equal(answer.body.expires_in, 300)
    assert.equal(answer.body.refresh_token, undefined, 'no refresh token for client credentials')
    assert.equal(answer.body.id_token, undefined)
    const jwt = String(answer.body.access_token)
    const header = decodeProtectedHeader(jwt)
    assert.equal(header.typ, 'at+jwt')
    assert.equal(header.alg, 'RS256')
    const published = await server.h.service.accounts.keys.published()
    assert.equal(header.kid, published[0]!.kid, 'signed with the provider\'s signing key')
    const claims = decodeJwt(jwt)
    assert.equal(claims.iss, server.issuer)
    assert.equal(claims.aud, camaraAudience(server.h.service.config.publicBaseUrl))
    assert.equal(claims.sub, bank.clientId)
    assert.equal(claims.client_id, bank.clientId)
    assert.equal(claims.scope, SIM_SWAP_SCOPE)
    assert.ok(typeof claims.jti === 'string' && claims.jti.length > 0)
    assert.equal(claims.exp! - claims.iat!, 300)
    assert.equal(claims.phone_number, undefined)

    const access = await tokens.verify(`Bearer ${jwt}`)
    assert.equal(access.clientId, bank.clientId)
    assert.equal(access.phoneNumber, null)
    assert.equal(access.tokenId, claims.jti)
    assert.deepEqual([...access.scopes].sort(), SIM_SWAP_SCOPE.split(' ').sort())
  })

  test('an explicit resource equal to the audience works; any other is invalid_target', async () => {
    const audience = camaraAudience(server.h.service.config.publicBaseUrl)
    const ok = await clientCredentials(server, bank, { scope: SIM_SWAP_SCOPE, resource: audience })
    assert.equal(ok.status, 200, JSON.stringify(ok.body))
    assert.equal(decodeJwt(String(ok.body.access_token)).aud, audience)
    for (const resource of ['https://other.example/api', `${audience}/sim-swap/v2`]) {
      assertOAuthError(await clientCredentials(server, bank, { scope: SIM_SWAP_SCOPE, resource }), 'invalid_target')
    }
  })

  test('every key algorithm of the list authenticates (RS256, PS256, ES256)', async () => {
    for (const alg of ['RS256', 'PS256', 'ES256'] as const) {
      const client = await registerCamaraClient(server, { alg })
      const answer = await clientCredentials(server, client)
      assert.equal(answer.status, 200, `${alg}: ${JSON.stringify(answer.body)}`)
    }
  })

  test('private_key_jwt only: a secret, Basic or no authentication is refused', async () => {
    const scope = SIM_SWAP_SCOPE
    assertOAuthError(await tokenRequest(server, { grant_type: 'client_credentials', client_id: bank.clientId, scope }), 'invalid_client')
    assertOAuthError(await tokenRequest(server, { grant_type: 'client_credentials', client_id: bank.clientId, client_secret: 'guess', scope }), 'invalid_client')
    const basic = `Basic ${Buffer.from(`${bank.clientId}:guess`).toString('base64')}`
    assertOAuthError(await tokenRequest(server, { grant_type: 'client_credentials', scope }, { authorization: basic }), 'invalid_client')
  })

  test('an assertion signed by another key, or for another audience, is refused', async () => {
    const stranger = await registerCamaraClient(server)
    const forged = await clientAssertion(server, { ...stranger, clientId: bank.clientId })
    assertOAuthError(await clientCredentials(server, bank, { scope: SIM_SWAP_SCOPE }, forged), 'invalid_client')
    const elsewhere = await clientAssertion(server, bank, { aud: 'https://other.example/token' })
    assertOAuthError(await clientCredentials(server, bank, { scope: SIM_SWAP_SCOPE }, elsewhere), 'invalid_client')
  })

  test('an assertion living more than 300 s, or expiring more than 300 s from now, is refused', async () => {
    const now = Math.floor(Date.now() / 1000)
    const long = await clientAssertion(server, bank, { iat: now - 100, exp: now + 250 })
    assertOAuthError(await clientCredentials(server, bank, undefined, long), 'invalid_client', /lives 350 s/)
    const far = await clientAssertion(server, bank, { iat: null, exp: now + 400 })
    assertOAuthError(await clientCredentials(server, bank, undefined, far), 'invalid_client', /more than 300 s from now/)
    const future = await clientAssertion(server, bank, { iat: now + 60, exp: now + 120 })
    assertOAuthError(await clientCredentials(server, bank, undefined, future), 'invalid_client', /future/)
    // Within the rules, without iat (CAMARA: SHOULD, not MUST).
    const plain = await clientAssertion(server, bank, { iat: null, exp: now + 290 })
    assert.equal((await clientCredentials(server, bank, undefined, plain)).status, 200)
  })

  test('a refused request is logged for the operator with its reason and client, never the assertion', async () => {
    const lines: Array<{ fields: Record<string, unknown>; message: string }> = []
    server.h.service.accounts.useLogger({ info: (fields, message) => lines.push({ fields: fields as Record<string, unknown>, message: message ?? '' }), warn: () => {} })
    const now = Math.floor(Date.now() / 1000)
    const far = await clientAssertion(server, bank, { iat: null, exp: now + 400 })
    assertOAuthError(await clientCredentials(server, bank, undefined, far), 'invalid_client')
    const line = lines.find((l) => l.fields.endpoint === 'token')
    assert.ok(line, JSON.stringify(lines))
    assert.equal(line.fields.clientId, bank.clientId)
    assert.equal(line.fields.error, 'invalid_client')
    assert.match(String(line.fields.detail), /more than 300 s from now/)
    assert.match(line.message, /refused a token request: invalid_client/)
    assert.ok(!JSON.stringify(lines).includes(far), 'the assertion is never logged')
  })

  test('an assertion is used once: replayed later, or sent by requests started together, only one gets a token', async () => {
    const assertion = await clientAssertion(server, bank)
    assert.equal((await clientCredentials(server, bank, undefined, assertion)).status, 200)
    assertOAuthError(await clientCredentials(server, bank, undefined, assertion), 'invalid_client', /only be used once/)

    const together = await clientAssertion(server, bank)
    const answers = await Promise.all(Array.from({ length: 6 }, () => clientCredentials(server, bank, undefined, together)))
    assert.equal(answers.filter((a) => a.status === 200).length, 1, JSON.stringify(answers.map((a) => a.body.error ?? 'ok')))
    for (const a of answers.filter((x) => x.status !== 200)) assertOAuthError(a, 'invalid_client')
  })

  test('scope: required, exactly one purpose and the one served here, within the client\'s registration', async () => {
    assertOAuthError(await clientCredentials(server, bank, {}), 'invalid_request', /scope is required/)
    assertOAuthError(await clientCredentials(server, bank, { scope: 'sim-swap:check' }), 'invalid_scope', /exactly one purpose/)
    assertOAuthError(await clientCredentials(server, bank, { scope: `sim-swap:check ${FRAUD_PREVENTION_PURPOSE} dpv:Marketing` }), 'invalid_scope', /exactly one purpose/)
    assertOAuthError(await clientCredentials(server, bank, { scope: 'sim-swap:check dpv:Marketing' }), 'invalid_scope', /not served here/)
    assertOAuthError(await clientCredentials(server, bank, { scope: `device-swap:check ${FRAUD_PREVENTION_PURPOSE}` }), 'invalid_scope', /not registered for this client/)
    assertOAuthError(await clientCredentials(server, bank, { scope: `openid sim-swap:check ${FRAUD_PREVENTION_PURPOSE}` }), 'invalid_scope', /not registered/)
    assertOAuthError(await clientCredentials(server, bank, { scope: FRAUD_PREVENTION_PURPOSE }), 'invalid_scope', /at least one CAMARA API scope/)
    // A subset of the registration is fine, and the token says exactly what was asked.
    const narrow = await clientCredentials(server, bank, { scope: `sim-swap:check ${FRAUD_PREVENTION_PURPOSE}` })
    assert.equal(narrow.status, 200, JSON.stringify(narrow.body))
    assert.equal(decodeJwt(String(narrow.body.access_token)).scope, `sim-swap:check ${FRAUD_PREVENTION_PURPOSE}`)
  })

  test('a login client cannot use client credentials, nor ask for the CAMARA resource', async () => {
    const { secret, client } = await server.h.service.accounts.clients.add({ name: 'Bank web login', redirectUris: ['https://bank.example/cb'], confidential: true })
    const basic = `Basic ${Buffer.from(`${client.clientId}:${secret}`).toString('base64')}`
    const answer = await tokenRequest(server, { grant_type: 'client_credentials', scope: SIM_SWAP_SCOPE }, { authorization: basic })
    assert.equal(answer.body.access_token, undefined, JSON.stringify(answer.body))
  })

  test('the token stops working when its client is removed', async () => {
    const client = await registerCamaraClient(server)
    const answer = await clientCredentials(server, client)
    const header = `Bearer ${String(answer.body.access_token)}`
    await tokens.verify(header)
    await server.h.service.accounts.clients.remove(client.clientId)
    await assert.rejects(tokens.verify(header), (err: { status?: number; code?: string; message?: string }) =>
      err.status === 401 && err.code === 'UNAUTHENTICATED' && /no longer registered/.test(String(err.message)))
    assertOAuthError(await clientCredentials(server, client), 'invalid_client')
  })
})
