/**
 * CamaraTokens, the CAMARA APIs' check of an access token: what our provider issues is
 * accepted (two-legged: no number; three-legged: the number, looked up), and every other token
 * is 401 UNAUTHENTICATED, each rule on its own: no or malformed header, expired, another key,
 * an unknown kid, not at+jwt, another audience or issuer, another algorithm, claims missing,
 * a client removed, no purpose, a subject that is not the client's, a user gone. Keys rotate.
 */
import assert from 'node:assert/strict'
import { generateKeyPairSync, randomUUID, type JsonWebKey } from 'node:crypto'
import { after, before, describe, test } from 'node:test'
import { importJWK, SignJWT, type JWTPayload } from 'jose'
import { camaraAudience, FRAUD_PREVENTION_PURPOSE } from '../../src/camara/access.ts'
import { CamaraTokens } from '../../src/camara/access-token.ts'
import { CamaraError } from '../../src/camara/camara-error.ts'
import { startHarness, type Harness } from '../helpers.ts'
import { randomPhone, register } from '../support/kns.ts'
import { clientKeyPair } from '../support/camara-client.ts'

let h: Harness
let tokens: CamaraTokens
let twoLegged: string
let threeLegged: string
const SCOPE = `sim-swap:check ${FRAUD_PREVENTION_PURPOSE}`

before(async () => {
  h = await startHarness({ PUBLIC_BASE_URL: 'https://kns.example.com' })
  const clients = h.service.accounts.clients
  twoLegged = (await clients.add({ name: 'Bank two', grantType: 'client_credentials', jwks: { keys: [(await clientKeyPair()).publicJwk] }, scope: SCOPE })).client.clientId
  threeLegged = (await clients.add({
    name: 'Bank three', grantType: 'authorization_code', redirectUris: ['https://bank.example/cb'], jwks: { keys: [(await clientKeyPair()).publicJwk] }, scope: `openid ${SCOPE}`,
  })).client.clientId
  tokens = new CamaraTokens(h.service)
})
after(async () => { await h.close() })

/** The provider's signing key, as it signs. */
async function signingJwk(): Promise<JsonWebKey & { kid: string }> {
  return (await h.service.accounts.keys.forProvider())[0] as JsonWebKey & { kid: string }
}

/** An access token as our provider makes one; `claims` override (null removes), `header` too. */
async function accessToken(claims: Record<string, unknown> = {}, header: Record<string, unknown> = {}, jwk?: JsonWebKey & { kid: string }): Promise<string> {
  const key = jwk ?? await signingJwk()
  const now = Math.floor(Date.now() / 1000)
  const payload: Record<string, unknown> = {
    iss: h.service.config.zkLoginIssuer, aud: camaraAudience(h.service.config.publicBaseUrl), sub: twoLegged, client_id: twoLegged,
    scope: SCOPE, jti: randomUUID(), iat: now, exp: now + 300, ...claims,
  }
  for (const [k, v] of Object.entries(payload)) if (v === null) delete payload[k]
  const alg = (header.alg as string | undefined) ?? 'RS256'
  return new SignJWT(payload as JWTPayload).setProtectedHeader({ alg, typ: 'at+jwt', kid: key.kid, ...header }).sign(await importJWK(key as never, alg))
}

async function refused(authorization: string | undefined, why: RegExp): Promise<void> {
  await assert.rejects(tokens.verify(authorization), (err: unknown) => {
    assert.ok(err instanceof CamaraError, String(err))
    assert.equal(err.status, 401)
    assert.equal(err.code, 'UNAUTHENTICATED')
    assert.match(err.message, why)
    return true
  })
}

describe('CamaraTokens', () => {
  test('a two-legged token: the client, its scopes, no number', async () => {
    const jti = randomUUID()
    const access = await tokens.verify(`Bearer ${await accessToken({ jti })}`)
    assert.deepEqual(access, { clientId: twoLegged, scopes: new Set(SCOPE.split(' ')), phoneNumber: null, tokenId: jti })
    // The scheme's case does not matter (RFC 9110).
    await tokens.verify(`bearer ${await accessToken()}`)
  })

  test('a three-legged token: the pairwise subject opened to the user, the number looked up now', async () => {
    const user = await register(h, randomPhone())
    const sub = h.service.accounts.subjects.subjectFor(user.userId, threeLegged)
    const token = await accessToken({ sub, client_id: threeLegged })
    assert.equal((await tokens.verify(`Bearer ${token}`)).phoneNumber, user.phoneNumber)
    // Made for another client: refused, as is a two-legged shape from a three-legged client.
    await refused(`Bearer ${await accessToken({ sub: h.service.accounts.subjects.subjectFor(user.userId, 'another-client'), client_id: threeLegged })}`, /not one this service issued/)
    await refused(`Bearer ${await accessToken({ sub: threeLegged, client_id: threeLegged })}`, /names no user/)
    await refused(`Bearer ${await accessToken({ sub: h.service.accounts.subjects.subjectFor(user.userId, twoLegged) })}`, /two-legged/)
    // A user gone since.
    await h.service.db.run('DELETE FROM users WHERE user_id = $1', [user.userId])
    await refused(`Bearer ${token}`, /no longer has an account/)
  })

  test('no token, another scheme, not a JWT, too long', async () => {
    await refused(undefined, /access token is required/)
    await refused('', /access token is required/)
    await refused(`Basic ${Buffer.from('a:b').toString('base64')}`, /must be Bearer/)
    await refused('Bearer opaque-token', /must be Bearer and a JWT/)
    await refused(`Bearer ${'a'.repeat(9000)}.b.c`, /too long/)
    await refused('Bearer a.b.c', /not valid: malformed/)
  })

  test('expired, not at+jwt, another audience or issuer, another algorithm, claims missing', async () => {
    const now = Math.floor(Date.now() / 1000)
    await refused(`Bearer ${await accessToken({ iat: now - 900, exp: now - 600 })}`, /expired/)
    await refused(`Bearer ${await accessToken({}, { typ: 'JWT' })}`, /typ must be at\+jwt/)
    await refused(`Bearer ${await accessToken({ aud: 'https://other.example' })}`, /claim aud/)
    await refused(`Bearer ${await accessToken({ iss: 'https://other.example/oidc' })}`, /claim iss/)
    await refused(`Bearer ${await accessToken({}, { alg: 'PS256' })}`, /not RS256/)
    for (const claim of ['jti', 'client_id', 'scope', 'sub', 'exp']) await refused(`Bearer ${await accessToken({ [claim]: null })}`, new RegExp(claim))
    await refused(`Bearer ${await accessToken({ client_id: 42 })}`, /client_id must be a string/)
  })

  test('another key: a forged signature under our kid, or a kid we do not publish', async () => {
    const ours = await signingJwk()
    const forger = { ...generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ format: 'jwk' }), kid: ours.kid }
    await refused(`Bearer ${await accessToken({}, {}, forger)}`, /signature does not verify/)
    await refused(`Bearer ${await accessToken({}, {}, { ...forger, kid: 'not-ours' })}`, /no key this provider publishes/)
  })

  test('a client removed (refused at once, its token verified before or not, and after its ID is registered again), a scope taken away, no purpose', async () => {
    const jwks = { keys: [(await clientKeyPair()).publicJwk] }
    const { client } = await h.service.accounts.clients.add({ name: 'Bank gone', grantType: 'client_credentials', jwks, scope: SCOPE })
    const token = await accessToken({ sub: client.clientId, client_id: client.clientId })
    await tokens.verify(`Bearer ${token}`)
    await h.service.accounts.clients.remove(client.clientId)
    await refused(`Bearer ${token}`, /no longer registered/)
    // Registered again under the same ID (another bank, or the same one anew): the earlier token stays refused.
    await new Promise((resolve) => setTimeout(resolve, 1000))
    await h.service.accounts.clients.add({ name: 'Bank again', clientId: client.clientId, grantType: 'client_credentials', jwks, scope: SCOPE })
    await refused(`Bearer ${token}`, /issued before its client was registered/)
    await tokens.verify(`Bearer ${await accessToken({ sub: client.clientId, client_id: client.clientId })}`)
    await refused(`Bearer ${await accessToken({ sub: h.service.config.zkLoginClientId, client_id: h.service.config.zkLoginClientId })}`, /no longer registered/)
    const access = await tokens.verify(`Bearer ${await accessToken({ scope: `${SCOPE} device-swap:check` })}`)
    assert.ok(!access.scopes.has('device-swap:check'), 'a scope the client is not registered for is not honoured')
    // No purpose: verified, and without it the routes answer 403 PERMISSION_DENIED (test/http/camara-errors.test.ts).
    assert.deepEqual((await tokens.verify(`Bearer ${await accessToken({ scope: 'sim-swap:check' })}`)).scopes, new Set(['sim-swap:check']))
  })

  test('keys rotate: the new signing key verifies within a second, the retired one during its overlap', async () => {
    const before = await accessToken()
    await tokens.verify(`Bearer ${before}`)
    await h.service.accounts.keys.rotate({ force: true })
    const after = await accessToken()
    assert.notEqual(JSON.parse(Buffer.from(after.split('.')[0]!, 'base64url').toString()).kid, JSON.parse(Buffer.from(before.split('.')[0]!, 'base64url').toString()).kid)
    // The cache is younger than a second: the new kid waits for the next second at most, never a minute.
    const later = Date.now() + 1500
    await tokens.verify(`Bearer ${after}`, later)
    await tokens.verify(`Bearer ${before}`, later)
  })
})
