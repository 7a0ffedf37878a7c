/**
 * Registering CAMARA clients (Clients.add and the admin route): the grant type, a JWKS of
 * public keys only (no private member, RSA 2048+ or P-256, unique kids, known members, size
 * limits), scopes from the CAMARA list and the purpose; each refusal a 400 with nothing stored;
 * and the metadata the provider is given. Login clients register as before.
 */
import assert from 'node:assert/strict'
import { generateKeyPairSync } from 'node:crypto'
import { after, before, describe, test } from 'node:test'
import { exportJWK, generateKeyPair } from 'jose'
import { FRAUD_PREVENTION_PURPOSE } from '../../src/camara/access.ts'
import { startHarness, type Harness } from '../helpers.ts'
import { assertError } from '../support/kns.ts'
import { clientKeyPair } from '../support/camara-client.ts'

let h: Harness
let key: string
before(async () => {
  h = await startHarness()
  key = await h.key({ scopes: ['oidc'] })
})
after(async () => { await h.close() })

const SCOPE = `sim-swap:check ${FRAUD_PREVENTION_PURPOSE}`

async function publicJwk(kid = 'k1') {
  return (await clientKeyPair('ES256', kid)).publicJwk
}

async function count(): Promise<number> {
  return Number((await h.service.db.get<{ n: number }>('SELECT COUNT(*) AS n FROM oidc_clients'))!.n)
}

async function refused(input: Record<string, unknown>, message: RegExp, field?: string): Promise<void> {
  const before = await count()
  const res = await h.app.inject({ method: 'POST', url: '/api/v1/admin/oidc/clients', headers: { 'x-api-key': key }, payload: { name: 'Acme Bank', ...input } })
  const body = assertError(res, 400, 'INVALID_REQUEST', field)
  assert.match(String(body.message), message)
  assert.equal(await count(), before, 'nothing stored')
}

describe('registering a CAMARA client', () => {
  test('two-legged: no redirect URI, private_key_jwt with its keys, its scopes; listed with them', async () => {
    const jwk = await publicJwk('bank-2026')
    const res = await h.app.inject({
      method: 'POST', url: '/api/v1/admin/oidc/clients', headers: { 'x-api-key': key },
      payload: { name: 'Acme Bank fraud checks', grantType: 'client_credentials', jwks: { keys: [jwk] }, scope: `${SCOPE} ${SCOPE}` },
    })
    assert.equal(res.statusCode, 201, res.body)
    const client = res.json() as Record<string, unknown>
    assert.deepEqual(client.grantTypes, ['client_credentials'])
    assert.equal(client.scope, SCOPE, 'scopes once each')
    assert.deepEqual(client.keyIds, ['bank-2026'])
    assert.deepEqual(client.redirectUris, [])
    assert.equal(client.clientSecret, null)
    const metadata = await h.service.accounts.clients.metadata(String(client.clientId))
    assert.equal(metadata?.token_endpoint_auth_method, 'private_key_jwt')
    assert.deepEqual(metadata?.grant_types, ['client_credentials'])
    assert.deepEqual(metadata?.response_types, [])
    assert.deepEqual(metadata?.jwks, { keys: [jwk] })
    assert.equal(metadata?.subject_type, undefined)
    const list = await h.app.inject({ method: 'GET', url: '/api/v1/admin/oidc/clients', headers: { 'x-api-key': key } })
    const listed = (list.json() as { clients: Array<Record<string, unknown>> }).clients.find((c) => c.clientId === client.clientId)
    assert.equal(listed?.scope, SCOPE)
  })

  test('three-legged: redirect URIs on one host, pairwise subjects, openid its one OIDC scope', async () => {
    const { client } = await h.service.accounts.clients.add({
      name: 'Acme Bank app', grantType: 'authorization_code', redirectUris: ['https://bank.example/cb', 'https://bank.example/cb2'],
      jwks: { keys: [await publicJwk()] }, scope: `openid ${SCOPE}`,
    })
    const metadata = await h.service.accounts.clients.metadata(client.clientId)
    assert.deepEqual(metadata?.response_types, ['code'])
    assert.deepEqual(metadata?.grant_types, ['authorization_code'])
    assert.equal(metadata?.subject_type, 'pairwise')
    assert.equal(metadata?.scope, 'openid')
    await refused({ grantType: 'authorization_code', redirectUris: ['https://bank.example/cb', 'https://other.example/cb'], jwks: { keys: [await publicJwk()] }, scope: SCOPE },
      /one host/, 'redirectUris')
    await refused({ grantType: 'authorization_code', jwks: { keys: [await publicJwk()] }, scope: SCOPE }, /redirect URI/, 'redirectUris')
  })

  test('the JWKS: public keys only, known members, supported keys, unique kids, within limits', async () => {
    const { privateKey } = await generateKeyPair('ES256', { extractable: true })
    const privateJwk = { ...(await exportJWK(privateKey)), kid: 'leaked' }
    await refused({ grantType: 'client_credentials', jwks: { keys: [privateJwk] }, scope: SCOPE }, /private key material \(d\)/, 'jwks')
    const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 })
    const rsaPrivate = { ...rsa.privateKey.export({ format: 'jwk' }), kid: 'r' }
    await refused({ grantType: 'client_credentials', jwks: { keys: [rsaPrivate] }, scope: SCOPE }, /private key material \(d, p, q, dp, dq, qi\)/, 'jwks')
    await refused({ grantType: 'client_credentials', jwks: { keys: [{ kty: 'oct', kid: 's', k: 'c2VjcmV0' }] }, scope: SCOPE }, /private key material \(k\)/, 'jwks')
    const small = generateKeyPairSync('rsa', { modulusLength: 1024 }).publicKey.export({ format: 'jwk' })
    await refused({ grantType: 'client_credentials', jwks: { keys: [{ ...small, kid: 's' }] }, scope: SCOPE }, /2048 to 8192 bits/, 'jwks')
    const p384 = (await generateKeyPair('ES384', { extractable: true })).publicKey
    await refused({ grantType: 'client_credentials', jwks: { keys: [{ ...(await exportJWK(p384)), kid: 'x' }] }, scope: SCOPE }, /P-256/, 'jwks')
    const ok = await publicJwk('same')
    await refused({ grantType: 'client_credentials', jwks: { keys: [ok, { ...(await publicJwk('same')) }] }, scope: SCOPE }, /used twice/, 'jwks')
    await refused({ grantType: 'client_credentials', jwks: { keys: [{ ...ok, kid: undefined }] }, scope: SCOPE }, /kid is required/, 'jwks')
    await refused({ grantType: 'client_credentials', jwks: { keys: [{ ...ok, alg: 'RS256' }] }, scope: SCOPE }, /alg must be one of ES256/, 'jwks')
    await refused({ grantType: 'client_credentials', jwks: { keys: [{ ...ok, alg: 'HS256' }] }, scope: SCOPE }, /alg must be/, 'jwks')
    await refused({ grantType: 'client_credentials', jwks: { keys: [{ ...ok, use: 'enc' }] }, scope: SCOPE }, /use must be "sig"/, 'jwks')
    await refused({ grantType: 'client_credentials', jwks: { keys: [{ ...ok, x5c: ['MIIB'] }] }, scope: SCOPE }, /unexpected member\(s\) x5c/, 'jwks')
    await refused({ grantType: 'client_credentials', jwks: { keys: [{ ...ok, x: 'AAAA' }] }, scope: SCOPE }, /not a valid EC public key/, 'jwks')
    await refused({ grantType: 'client_credentials', jwks: { keys: [] }, scope: SCOPE }, /1 to 5 keys|must NOT have fewer/, undefined)
    await refused({ grantType: 'client_credentials', scope: SCOPE }, /jwks is required/, 'jwks')
    const many = await Promise.all(Array.from({ length: 6 }, (_, i) => publicJwk(`k${i}`)))
    await refused({ grantType: 'client_credentials', jwks: { keys: many }, scope: SCOPE }, /1 to 5 keys|must NOT have more/, undefined)
    // The CLI reads a file: checked the same way, by the area.
    await assert.rejects(h.service.accounts.clients.add({ name: 'X', grantType: 'client_credentials', jwks: [ok], scope: SCOPE }), /a JSON Web Key Set is an object/)
    await assert.rejects(h.service.accounts.clients.add({ name: 'X', grantType: 'client_credentials', jwks: { keys: [ok], extra: 1 }, scope: SCOPE }), /only "keys"/)
    await assert.rejects(h.service.accounts.clients.add({ name: 'X', grantType: 'client_credentials', jwks: { keys: [{ ...ok, padding: 'x'.repeat(17_000) }] }, scope: SCOPE }), /at most 16384 bytes/)
  })

  test('scopes: required, from the CAMARA list, with the purpose and an API scope; openid only for three-legged', async () => {
    const jwks = { keys: [await publicJwk()] }
    await refused({ grantType: 'client_credentials', jwks }, /scope is required/, 'scope')
    await refused({ grantType: 'client_credentials', jwks, scope: 'sim-swap:check' }, /must include the purpose/, 'scope')
    await refused({ grantType: 'client_credentials', jwks, scope: FRAUD_PREVENTION_PURPOSE }, /at least one CAMARA API scope/, 'scope')
    await refused({ grantType: 'client_credentials', jwks, scope: `${SCOPE} dpv:Marketing` }, /"dpv:Marketing" cannot be registered/, 'scope')
    await refused({ grantType: 'client_credentials', jwks, scope: `openid ${SCOPE}` }, /"openid" cannot be registered/, 'scope')
    await refused({ grantType: 'client_credentials', jwks, scope: `phone ${SCOPE}` }, /"phone" cannot be registered/, 'scope')
  })

  test('a CAMARA client has no secret, no redirect URI when two-legged, and never the built-in ID; login fields stay login fields', async () => {
    const jwks = { keys: [await publicJwk()] }
    await refused({ grantType: 'client_credentials', jwks, scope: SCOPE, confidential: true }, /not a secret/, 'confidential')
    await refused({ grantType: 'client_credentials', jwks, scope: SCOPE, redirectUris: ['https://bank.example/cb'] }, /no redirect URI/, 'redirectUris')
    await refused({ grantType: 'client_credentials', jwks, scope: SCOPE, clientId: h.service.config.zkLoginClientId }, /built-in/, 'clientId')
    await refused({ redirectUris: ['https://bank.example/cb'], jwks }, /for CAMARA clients/, 'grantType')
    await refused({ grantType: 'password', jwks, scope: SCOPE }, /grantType|must be equal to one of/, undefined)
    // The login client form as before: redirect URIs required.
    await refused({}, /redirect URIs/, 'redirectUris')
    const login = await h.service.accounts.clients.add({ name: 'Bank web', redirectUris: ['https://bank.example/login'] })
    assert.deepEqual(login.client.grantTypes, ['authorization_code', 'implicit'])
    assert.equal(login.client.scope, null)
    const metadata = await h.service.accounts.clients.metadata(login.client.clientId)
    assert.equal(metadata?.token_endpoint_auth_method, 'none')
    assert.equal(metadata?.jwks, undefined)
    assert.equal(await h.service.accounts.clients.camara(login.client.clientId), null)
  })
})
