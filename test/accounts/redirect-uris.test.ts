/**
 * Redirect URIs are refused when browsers and RFC 3986 parsers could read them differently
 * (issue 31, item 11c: `http://localhost:45080\@evil.example/`), and stored in the form a
 * browser sends back, on the admin route and the CLI alike; a refusal stores nothing. A URI
 * stored before these rules is not served by the provider.
 */
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { checkRedirectUri } from '../../src/accounts/redirect-uris.ts'
import { ValidationError } from '../../src/errors.ts'
import { startHarness, type Harness } from '../helpers.ts'
import { killAll, runKns } from '../support/process.ts'

const REFUSED: Array<[string, RegExp]> = [
  ['http://localhost:45080\\@evil.example/', /backslash/],
  ['https://app.example\\cb', /backslash/],
  ['https://user@app.example/cb', /credentials/],
  ['https://@app.example/cb', /credentials/],
  ['http://localhost:45080@evil.example/', /credentials/],
  ['https://app.example/cb#frag', /fragment/],
  ['https://app.example/cb#', /fragment/],
  ['https://*.app.example/cb', /wildcard/],
  ['https://app.example/c b', /whitespace/],
  ['https://app.example/cb\n', /whitespace/],
  ['https://app.example/\u0000cb', /control/],
  ['https://app.example/c%zzb', /RFC 3986 allows/],
  ['https://bücher.example/cb', /RFC 3986 allows/],
  ['https://app.example/"cb"', /RFC 3986 allows/],
  ['https://ex%61mple.com/cb', /percent-encoded/],
  ['http://127.1:8080/cb', /disagree/],
  ['http://0x7f.0.0.1/cb', /disagree/],
  ['https:///app.example/cb', /with a host/],
  ['https:app.example/cb', /with a host/],
  ['/cb', /with a host/],
  ['javascript://app.example/%0aalert(1)', /https/],
  ['com.example.app://cb', /https/],
  ['http://app.example/cb', /https/],
  [`https://app.example/${'a'.repeat(512)}`, /at most 512/],
]
const ACCEPTED = [
  'https://app.example/cb', 'https://app.example/', 'https://app.example:8443/cb?x=1&y=%20', 'http://localhost:45080/', 'http://127.0.0.1:3000/approve',
  'http://[::1]:8080/cb', 'https://xn--bcher-kva.example/cb',
  // Other spellings of a fit URI: clients send back the string they registered, compared as a string.
  'HTTPS://App.example/cb', 'https://app.example', 'https://app.example:443/cb', 'https://app.example/a/../cb', "https://app.example/cb?x='1'",
]

describe('checkRedirectUri', () => {
  for (const [uri, why] of REFUSED) {
    test(`refuses ${JSON.stringify(uri.slice(0, 60))}`, () => {
      assert.throws(() => checkRedirectUri(uri), (err: unknown) => err instanceof ValidationError && why.test(err.message))
    })
  }
  test('keeps exact, plainly written URIs as given', () => {
    for (const uri of ACCEPTED) assert.equal(checkRedirectUri(uri), uri)
  })
})

describe('registering redirect URIs', () => {
  let h: Harness
  let key: string
  before(async () => {
    h = await startHarness()
    key = await h.key()
  })
  after(async () => {
    await killAll()
    await h.close()
  })

  const stored = async () => JSON.stringify(await h.service.accounts.clients.list())
  const add = (body: Record<string, unknown>) => h.app.inject({ method: 'POST', url: '/api/v1/admin/oidc/clients', headers: { 'x-api-key': key }, payload: body })

  test('the admin route: 400 in the error shape for each, nothing stored, also beside a good URI or for the built-in client', async () => {
    const before = await stored()
    for (const [uri] of REFUSED) {
      for (const body of [
        { name: 'Probe', redirectUris: [uri] },
        { name: 'Probe', redirectUris: ['https://app.example/cb', uri] },
        { name: 'Probe', clientId: h.service.config.zkLoginClientId, redirectUris: [uri] },
      ]) {
        const res = await add(body)
        if (uri.length > 512) {
          assert.equal(res.statusCode, 400, 'the schema bounds it first')
          continue
        }
        assert.equal(res.statusCode, 400, `${uri}: ${res.body}`)
        const answer = res.json() as Record<string, unknown>
        assert.equal(answer.success, false)
        assert.equal(answer.code, 'INVALID_REQUEST')
        assert.equal(answer.field, 'redirectUris')
      }
    }
    assert.equal(await stored(), before, 'nothing stored')
    const plain = ACCEPTED.slice(0, 10)
    const ok = await add({ name: 'Good', redirectUris: plain })
    assert.equal(ok.statusCode, 201, ok.body)
    assert.deepEqual(ok.json().redirectUris, plain)
  })

  test('the CLI: the same refusal, a non-zero exit, nothing stored', async () => {
    const before = await stored()
    const result = await runKns(['oidc', 'client', 'add', '--name', 'Probe', '--redirect-uri', 'http://localhost:45080\\@evil.example/'], h.env)
    assert.notEqual(result.code, 0)
    assert.match(result.stderr, /backslash/)
    assert.equal(await stored(), before)
  })

  test('a URI stored before these rules is not served at the authorization endpoint', async () => {
    const bad = 'http://localhost:45080\\@evil.example/'
    await h.service.db.run('INSERT INTO oidc_clients (client_id, name, redirect_uris, sealed_secret, created_at) VALUES ($1, $2, $3, NULL, $4)',
      ['legacy-client', 'Legacy', JSON.stringify([bad, 'http://localhost:45080/cb']), Date.now()])
    const authorize = (redirectUri: string) => h.app.inject({
      method: 'GET',
      url: `/oidc/auth?${new URLSearchParams({ client_id: 'legacy-client', redirect_uri: redirectUri, response_type: 'id_token', scope: 'openid', nonce: 'n', state: 's' })}`,
    })
    const refused = await authorize(bad)
    assert.equal(refused.statusCode, 400, refused.body)
    assert.equal(refused.headers.location, undefined, 'never redirected to')
    const served = await authorize('http://localhost:45080/cb')
    assert.equal(served.statusCode, 303, served.body)
  })
})
