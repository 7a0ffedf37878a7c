/**
 * Every URL the login provider writes comes from its issuer (ZKLOGIN_ISSUER), never from the
 * request's Host, X-Forwarded-Host or X-Forwarded-Proto, with and without TRUST_PROXY: the
 * discovery document (endpoints, jwks_uri), every Location of a login, the resume URL, the
 * logout page. A cache in front must not be poisoned into serving an attacker's key location.
 * The discovery document and the JWKS may be cached a few minutes; per-user answers never.
 */
import assert from 'node:assert/strict'
import { request } from 'node:http'
import { after, before, describe, test } from 'node:test'
import * as client from 'openid-client'
import { startHarness } from '../helpers.ts'
import { randomPhone, register } from '../support/kns.ts'
import { Browser, codeFlowUrl, logIn, startLoginServer, type LoginServer } from '../support/login.ts'

const EVIL = 'evil.example'
const HOSTILE: Array<Record<string, string>> = [
  { host: EVIL },
  { 'x-forwarded-host': EVIL, 'x-forwarded-proto': 'https' },
  { host: `${EVIL}:8443`, 'x-forwarded-host': EVIL, 'x-forwarded-proto': 'https', forwarded: `host=${EVIL};proto=https` },
]

/** A browser whose every request carries `headers` (fetch cannot send Host: node:http can). */
class HostileBrowser extends Browser {
  readonly seen: Array<{ url: string; status: number; location: string | null; body: string }> = []
  readonly #headers: Record<string, string>

  constructor(headers: Record<string, string>) {
    super()
    this.#headers = headers
  }

  override async fetch(url: string, init: RequestInit = {}): Promise<Response> {
    const target = new URL(url)
    const headers: Record<string, string> = { ...Object.fromEntries(new Headers(init.headers)), ...this.#headers }
    if (this.cookies.size > 0) headers.cookie = this.cookieHeader()
    const answer = await new Promise<{ status: number; headers: Headers; body: string }>((resolve, reject) => {
      const req = request({ host: target.hostname, port: target.port, path: target.pathname + target.search, method: init.method ?? 'GET', headers }, (res) => {
        let body = ''
        res.setEncoding('utf8').on('data', (chunk) => { body += chunk }).on('end', () => {
          const out = new Headers()
          for (const [name, value] of Object.entries(res.headers)) for (const v of [value ?? []].flat()) out.append(name, v)
          resolve({ status: res.statusCode!, headers: out, body })
        })
      })
      req.on('error', reject)
      req.end(init.body === undefined || init.body === null ? undefined : String(init.body))
    })
    this.seen.push({ url, status: answer.status, location: answer.headers.get('location'), body: answer.body })
    this.keepCookies(answer.headers)
    return new Response(answer.status === 204 || answer.status === 304 ? null : answer.body, { status: answer.status, headers: answer.headers })
  }
}

function assertNothingNamesEvil(browser: HostileBrowser, base: string): void {
  for (const answer of browser.seen) {
    assert.ok(!answer.body.includes(EVIL), `${answer.url} (${answer.status}) names ${EVIL}: ${answer.body.slice(0, 300)}`)
    if (answer.location !== null && !answer.location.startsWith(`${base}/approve`)) {
      assert.ok(answer.location.startsWith(`${base}/oidc/`), `${answer.url}: Location ${answer.location} is not the issuer's`)
    }
  }
}

for (const trustProxy of [undefined, 'loopback']) {
  describe(`the provider's URLs are the issuer's (TRUST_PROXY ${trustProxy ?? 'unset'})`, () => {
    let server: LoginServer
    before(async () => { server = await startLoginServer(trustProxy === undefined ? {} : { TRUST_PROXY: trustProxy }) })
    after(async () => { await server.close() })

    test('discovery and JWKS: issuer URLs whatever Host and X-Forwarded-* say, and cacheable a few minutes', async () => {
      for (const headers of HOSTILE) {
        const browser = new HostileBrowser(headers)
        const discovery = await browser.fetch(`${server.issuer}/.well-known/openid-configuration`)
        assert.equal(discovery.status, 200)
        assert.equal(discovery.headers.get('cache-control'), 'public, max-age=300')
        assert.doesNotMatch(discovery.headers.get('vary') ?? '', /host|forwarded/i, 'the answer does not depend on them')
        const meta = await discovery.json() as Record<string, unknown>
        assert.equal(meta.issuer, server.issuer)
        const urls = Object.entries(meta).filter(([, v]) => typeof v === 'string' && /^https?:/.test(v))
        assert.ok(urls.length >= 6, 'endpoints listed')
        for (const [name, url] of urls) assert.ok(String(url).startsWith(`${server.issuer}/`) || url === server.issuer, `${name}: ${url}`)
        const jwks = await browser.fetch(String(meta.jwks_uri))
        assert.equal(jwks.status, 200)
        assert.equal(jwks.headers.get('cache-control'), 'public, max-age=300')
      }
    })

    test('a login, its token and a logout through hostile headers: every Location and page names the issuer only', async () => {
      const user = await register(server.h, randomPhone())
      for (const headers of HOSTILE) {
        const browser = new HostileBrowser(headers)
        const verifier = client.randomPKCECodeVerifier()
        const callback = new URL(await logIn(server, browser, codeFlowUrl(server, verifier), user.phoneNumber))
        assert.ok(browser.seen.some((a) => a.location?.startsWith(`${server.issuer}/interaction/`)), 'to the interaction, absolute')
        const token = await browser.fetch(`${server.issuer}/token`, {
          method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' },
          body: new URLSearchParams({
            grant_type: 'authorization_code', code: callback.searchParams.get('code')!, redirect_uri: `${server.base}/approve`,
            code_verifier: verifier, client_id: server.h.service.config.zkLoginClientId,
          }).toString(),
        })
        assert.equal(token.status, 200)
        assert.equal(token.headers.get('cache-control'), 'no-store', 'per-user answers are never cached')
        const { id_token: idToken } = await token.json() as { id_token: string }
        assert.equal(JSON.parse(Buffer.from(idToken.split('.')[1]!, 'base64url').toString()).iss, server.issuer)
        const logout = await browser.fetch(`${server.issuer}/session/end?id_token_hint=${idToken}`)
        assert.equal(logout.status, 200)
        assert.match(await logout.text(), new RegExp(`action="${server.issuer}/session/end/confirm"`))
        assertNothingNamesEvil(browser, server.base)
      }
    })
  })
}

test('an https issuer is written as https, with Secure cookies, when the request came over plain http', async () => {
  const h = await startHarness({ PUBLIC_BASE_URL: 'https://kns.example.com' })
  try {
    const discovery = await h.app.inject({ method: 'GET', url: '/oidc/.well-known/openid-configuration', headers: { host: EVIL, 'x-forwarded-proto': 'http' } })
    assert.equal(discovery.statusCode, 200)
    assert.equal(discovery.json().jwks_uri, 'https://kns.example.com/oidc/jwks')
    const query = new URLSearchParams({
      client_id: h.service.config.zkLoginClientId, redirect_uri: 'https://kns.example.com/approve', response_type: 'id_token', scope: 'openid', nonce: 'n', state: 's',
    })
    const auth = await h.app.inject({ method: 'GET', url: `/oidc/auth?${query}`, headers: { host: EVIL } })
    assert.equal(auth.statusCode, 303, auth.body)
    assert.match(String(auth.headers.location), /^https:\/\/kns\.example\.com\/oidc\/interaction\//)
    const cookies = [auth.headers['set-cookie'] ?? []].flat()
    assert.ok(cookies.length > 0 && cookies.every((c) => /;\s*secure/i.test(c)), cookies.join('\n'))
  } finally {
    await h.close()
  }
})
