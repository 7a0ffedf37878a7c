/**
 * The login provider as an independent relying party sees it (openid-client, OpenID Certified
 * RP library): discovery, authorization code with PKCE, the implicit id_token flow with a nonce,
 * id_token validation against the JWKS, and a key rotation (the old kid verifies during the
 * overlap and not after). Codes reach the phone over SMPP (a local SMSC).
 */
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import * as client from 'openid-client'
import { decodeProtectedHeader } from 'jose'
import { computeZkLoginAddress } from '@mysten/sui/zklogin'
import { KEY_OVERLAP_MS } from '../../src/accounts/signing-keys.ts'
import { post, randomPhone, register } from '../support/kns.ts'
import { Browser, logIn, startLoginServer, type LoginServer } from '../support/login.ts'

let server: LoginServer
let redirectUri: string

before(async () => {
  server = await startLoginServer()
  redirectUri = `${server.base}/approve`
})
after(async () => { await server.close() })

async function relyingParty(): Promise<client.Configuration> {
  return client.discovery(new URL(server.issuer), server.h.service.config.zkLoginClientId, undefined, client.None(), { execute: [client.allowInsecureRequests] })
}

/** An implicit login: the callback URL (fragment with id_token and state) and what was expected. */
async function implicitLogin(config: client.Configuration, phone: string) {
  const nonce = client.randomNonce()
  const state = client.randomState()
  const url = client.buildAuthorizationUrl(config, { redirect_uri: redirectUri, scope: 'openid phone email profile', response_type: 'id_token', nonce, state, prompt: 'login' })
  const callback = await logIn(server, new Browser(), url.href, phone)
  return { callback: new URL(callback), nonce, state }
}

describe('the login provider, to openid-client', () => {
  test('discovery names this issuer, RS256, code and id_token, S256 PKCE', async () => {
    const config = await relyingParty()
    const meta = config.serverMetadata()
    assert.equal(meta.issuer, server.issuer)
    assert.deepEqual(meta.id_token_signing_alg_values_supported, ['RS256'])
    assert.ok(meta.response_types_supported?.includes('code') && meta.response_types_supported.includes('id_token'))
    assert.deepEqual(meta.code_challenge_methods_supported, ['S256'])
    const jwks = await (await fetch(meta.jwks_uri!)).json() as { keys: Array<{ kty: string; n: string; kid: string; alg: string; d?: string }> }
    assert.equal(jwks.keys.length, 2, 'the signing key and the next key')
    for (const key of jwks.keys) {
      assert.equal(key.kty, 'RSA')
      assert.equal(Buffer.from(key.n, 'base64url').length * 8, 2048)
      assert.ok(key.kid.length > 0)
      assert.equal(key.d, undefined, 'no private part published')
    }
  })

  test('authorization code with PKCE: an id_token for the registered user, validated against the JWKS', async () => {
    const user = await register(server.h, randomPhone())
    const config = await relyingParty()
    const verifier = client.randomPKCECodeVerifier()
    const state = client.randomState()
    const nonce = client.randomNonce()
    const url = client.buildAuthorizationUrl(config, {
      redirect_uri: redirectUri, scope: 'openid phone email profile', state, nonce,
      code_challenge: await client.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256',
    })
    const callback = await logIn(server, new Browser(), url.href, user.phoneNumber)
    const tokens = await client.authorizationCodeGrant(config, new URL(callback), { pkceCodeVerifier: verifier, expectedState: state, expectedNonce: nonce })
    const claims = tokens.claims()!
    assert.equal(claims.sub, user.userId)
    assert.equal(claims.aud, server.h.service.config.zkLoginClientId, 'aud: one string')
    assert.equal(claims.preferred_username, user.phoneNumber)
    assert.equal(claims.phone_number, user.phoneNumber)
    assert.equal(claims.phone_number_verified, true)
    assert.equal(claims.email, user.email)
    assert.equal(claims.email_verified, false)
  })

  test('a code flow without PKCE is refused', async () => {
    const config = await relyingParty()
    const url = client.buildAuthorizationUrl(config, { redirect_uri: redirectUri, scope: 'openid', state: client.randomState() })
    const res = await new Browser().follow(url.href, server.base)
    assert.match(res.url, /error=invalid_request/)
  })

  test('implicit id_token with a nonce: the zkLogin address of the token is the registered zkAddress', async () => {
    const user = await register(server.h, randomPhone())
    const config = await relyingParty()
    client.useIdTokenResponseType(config)
    const { callback, nonce, state } = await implicitLogin(config, user.phoneNumber)
    const claims = await client.implicitAuthentication(config, callback, nonce, { expectedState: state })
    assert.equal(claims.sub, user.userId)
    assert.equal(claims.nonce, nonce)
    const idToken = new URLSearchParams(callback.hash.slice(1)).get('id_token')!
    const salt = await post(server.h, '/zklogin/v1/salt', { token: idToken })
    assert.equal(salt.statusCode, 200, salt.body)
    const address = computeZkLoginAddress({
      claimName: 'sub', claimValue: claims.sub, iss: claims.iss, aud: claims.aud as string, userSalt: BigInt((salt.json() as { salt: string }).salt), legacyAddress: false,
    })
    assert.equal(address, user.zkAddress)
  })

  test('an implicit request without a nonce is refused', async () => {
    const config = await relyingParty()
    const url = client.buildAuthorizationUrl(config, { redirect_uri: redirectUri, scope: 'openid', response_type: 'id_token', state: client.randomState() })
    const res = await new Browser().follow(url.href, server.base)
    assert.match(res.url, /error=invalid_request/)
  })

  test('a redirect URI that is not registered exactly is refused', async () => {
    const config = await relyingParty()
    for (const uri of [`${redirectUri}/`, `${redirectUri}?x=1`, 'https://evil.example/approve']) {
      const url = client.buildAuthorizationUrl(config, { redirect_uri: uri, scope: 'openid', response_type: 'id_token', nonce: 'n', state: 's' })
      const res = await new Browser().fetch(url.href)
      assert.equal(res.status, 400, uri)
      assert.equal(res.headers.get('location'), null, `${uri}: never redirected to`)
    }
  })

  test('key rotation: the old kid verifies during the overlap and not after', async () => {
    const user = await register(server.h, randomPhone())
    const { keys, provider } = server.h.service.accounts
    const config = await relyingParty()
    client.useIdTokenResponseType(config)
    const old = await implicitLogin(config, user.phoneNumber)
    const oldKid = decodeProtectedHeader(new URLSearchParams(old.callback.hash.slice(1)).get('id_token')!).kid
    const nextKid = (await keys.list()).find((k) => k.state === 'next')!.kid

    await assert.rejects(keys.rotate(), /published for/, 'a next key published a moment ago does not sign yet')
    const rotated = await keys.rotate({ force: true })
    assert.equal(rotated.signing, nextKid, 'the key published before becomes the signing key')
    assert.equal(rotated.retired, oldKid)
    await provider.refresh()

    const fresh = await implicitLogin(await withIdToken(), user.phoneNumber)
    assert.equal(decodeProtectedHeader(new URLSearchParams(fresh.callback.hash.slice(1)).get('id_token')!).kid, nextKid)
    // During the overlap a fresh relying party (fresh JWKS) still verifies the old token.
    await client.implicitAuthentication(await withIdToken(), old.callback, old.nonce, { expectedState: old.state })

    // Past the overlap: the old key leaves the JWKS, and its tokens no longer verify.
    await server.h.service.db.run('UPDATE oidc_keys SET retired_at = $1 WHERE kid = $2', [Date.now() - KEY_OVERLAP_MS - 1000, oldKid])
    await provider.refresh()
    const jwks = await (await fetch(`${server.issuer}/jwks`)).json() as { keys: Array<{ kid: string }> }
    assert.ok(!jwks.keys.some((k) => k.kid === oldKid))
    await assert.rejects(client.implicitAuthentication(await withIdToken(), old.callback, old.nonce, { expectedState: old.state }))
  })
})

async function withIdToken(): Promise<client.Configuration> {
  const config = await relyingParty()
  client.useIdTokenResponseType(config)
  return config
}
