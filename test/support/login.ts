/**
 * Logging in with the service's own OpenID provider in tests: a server on a real port (so an
 * independent relying party can do discovery against its issuer), a local SMSC that receives
 * the codes, and a browser stand-in (a cookie jar that follows redirects by hand).
 */
import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
import { createServer } from 'node:net'
import type { AddressInfo } from 'node:net'
import type { Ledger } from '../../src/ledger/ledger.ts'
import { startHarness, type Harness } from '../helpers.ts'
import { startSmsc, until, type FakeSmsc } from './fake-smsc.ts'

export async function freePort(): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  await new Promise((resolve) => server.close(resolve))
  return port
}

export interface LoginServer {
  h: Harness
  base: string
  issuer: string
  smsc: FakeSmsc
  close(): Promise<void>
}

/** A harness listening on 127.0.0.1, its issuer `<base>/oidc`, codes delivered over SMPP to a local SMSC. */
export async function startLoginServer(env: Record<string, string> = {}, options: { ledger?: Ledger; events?: boolean } = {}): Promise<LoginServer> {
  const smsc = await startSmsc()
  const port = await freePort()
  const base = `http://127.0.0.1:${port}`
  const h = await startHarness({
    PUBLIC_BASE_URL: base, SMS_DELIVERY: 'smpp', SMPP_URL: smsc.url(), SMS_FROM: 'KNS', LOGIN_RESEND_COOLDOWN_S: '0', ...env,
  }, options)
  await h.app.listen({ port, host: '127.0.0.1' })
  return {
    h, base, issuer: `${base}/oidc`, smsc,
    async close() {
      await h.close()
      await smsc.close()
    },
  }
}

/** The code in the newest text to `phone` (as the SMSC received it). */
export async function codeSentTo(smsc: FakeSmsc, phone: string, after = 0): Promise<string> {
  const digits = phone.replace(/^\+/, '')
  await until(() => smsc.submits.slice(after).some((pdu) => pdu.destination_addr === digits), 5000)
  const pdu = smsc.submits.slice(after).reverse().find((p) => p.destination_addr === digits)!
  const text = Buffer.isBuffer(pdu.short_message) ? pdu.short_message.toString() : String((pdu.short_message as { message?: string })?.message ?? pdu.short_message)
  const match = /^(\d{6}) is your KNS login code/.exec(text)
  assert.ok(match, `a login code text, got ${JSON.stringify(text)}`)
  return match[1]!
}

/** A browser's cookie jar and manual redirects. */
export class Browser {
  readonly cookies = new Map<string, string>()

  async fetch(url: string, init: RequestInit = {}): Promise<Response> {
    const headers = new Headers(init.headers)
    if (this.cookies.size > 0) headers.set('cookie', this.cookieHeader())
    const res = await fetch(url, { ...init, headers, redirect: 'manual' })
    this.keepCookies(res.headers)
    return res
  }

  cookieHeader(): string {
    return [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ')
  }

  /** Takes an answer's Set-Cookie lines into the jar (an emptied or expired cookie leaves it). */
  keepCookies(headers: Headers): void {
    for (const line of headers.getSetCookie()) {
      const [pair] = line.split(';')
      const eq = pair!.indexOf('=')
      const name = pair!.slice(0, eq).trim()
      const value = pair!.slice(eq + 1).trim()
      if (value === '' || /expires=Thu, 01 Jan 1970/i.test(line)) this.cookies.delete(name)
      else this.cookies.set(name, value)
    }
  }

  async json(url: string, body: unknown): Promise<{ status: number; body: Record<string, unknown> }> {
    const res = await this.fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })
    return { status: res.status, body: await res.json() as Record<string, unknown> }
  }

  /** Follows redirects from `url` until one leaves `origin` or a page answers; returns the last URL. */
  async follow(url: string, origin: string): Promise<{ url: string; res: Response }> {
    let current = url
    for (let hops = 0; hops < 10; hops++) {
      const res = await this.fetch(current)
      const location = res.headers.get('location')
      if (location === null) return { url: current, res }
      current = new URL(location, current).href
      if (!current.startsWith(origin) || new URL(current).pathname.startsWith('/approve')) return { url: current, res }
    }
    throw new Error('too many redirects')
  }
}

/** An authorization code request of the built-in client with PKCE (S256) for `verifier`, back to `$base/approve`. */
export function codeFlowUrl(server: LoginServer, verifier: string): string {
  const url = new URL(`${server.issuer}/auth`)
  url.search = new URLSearchParams({
    client_id: server.h.service.config.zkLoginClientId, redirect_uri: `${server.base}/approve`, response_type: 'code', scope: 'openid', state: 's', nonce: 'n',
    code_challenge: createHash('sha256').update(verifier).digest('base64url'), code_challenge_method: 'S256',
  }).toString()
  return url.href
}

/**
 * Logs in at an authorization URL as the holder of `phone`: to the interaction, a code sent,
 * read from the SMSC, entered; returns the URL the provider sends the browser to at the end
 * (the client's redirect URI with the code or the id_token).
 */
export async function logIn(server: LoginServer, browser: Browser, authorizationUrl: string, phone: string): Promise<string> {
  const toLogin = await browser.follow(authorizationUrl, server.base)
  const uid = /\/oidc\/interaction\/([^/?#]+)$/.exec(new URL(toLogin.url).pathname)?.[1]
  assert.ok(uid !== undefined, `the provider asks for a login, got ${toLogin.url} (${toLogin.res.status})`)
  const before = server.smsc.submits.length
  const sent = await browser.json(`${server.base}/oidc/interaction/${uid}/code`, { phoneNumber: phone })
  assert.equal(sent.status, 202, JSON.stringify(sent.body))
  const code = await codeSentTo(server.smsc, phone, before)
  const login = await browser.json(`${server.base}/oidc/interaction/${uid}/login`, { code })
  assert.equal(login.status, 200, JSON.stringify(login.body))
  const done = await browser.follow(new URL(String(login.body.redirectTo), server.base).href, server.base)
  return done.url
}
