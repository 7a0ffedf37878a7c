/**
 * The page logic that must agree with the server (phone masking, the embedded ledger's approve
 * text), and how the pages are served: headers, page config, assets, compression. No browser.
 */
import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { brotliDecompressSync, gunzipSync } from 'node:zlib'
import { after, before, describe, test } from 'node:test'
import Fastify from 'fastify'
import { maskPhone } from '../../src/identity/phone.ts'
import { ledgerApproveMessage } from '../../src/ledger/approve.ts'
import { CONTENT_SECURITY_POLICY, pageRoutes, renderPage } from '../../src/http/routes/pages.ts'
import { maskPhone as pageMaskPhone } from '../../web/shared/mask-phone.ts'
// The page bundles src/contract/approve-text.ts itself (web/approve/flow.ts).
import { ledgerApproveMessage as pageLedgerApproveMessage } from '../../src/contract/approve-text.ts'
import { describePeriod, formatData } from '../../web/explorer/format.ts'
import { startHarness, type Harness } from '../helpers.ts'
import { randomObjectId } from '../support/kns.ts'
import { SKIP } from './support.ts'

describe('page logic agrees with the server', () => {
  test('maskPhone: same output for every 1-3 digit calling-code prefix and number length', () => {
    let compared = 0
    for (let prefix = 1; prefix <= 999; prefix++) {
      for (const rest of ['23456', '2345678', '234567890', '23456789012', '234567890123']) {
        const phone = `+${prefix}${rest}`.slice(0, 16)
        if (!/^\+[1-9]\d{5,14}$/.test(phone)) continue
        assert.equal(pageMaskPhone(phone), maskPhone(phone), phone)
        compared++
      }
    }
    assert.ok(compared > 4000)
    assert.equal(pageMaskPhone('+14155550100'), '+1 *** *** 0100')
  })

  test('the embedded ledger approve text', () => {
    const objectId = randomObjectId().toUpperCase().replace('0X', '0x')
    assert.equal(pageLedgerApproveMessage(objectId, 'abc123'), ledgerApproveMessage(objectId, 'abc123'))
  })

  test('renderPage escapes the config into the meta attribute', () => {
    const config = { ledger: 'local', x: '"><script>alert(1)</script>&amp;' }
    const html = renderPage('<head><meta name="kns-page-config" content="{}"></head>', config)
    const attribute = /^<head><meta name="kns-page-config" content="([^"<>]*)"><\/head>$/.exec(html)
    assert.ok(attribute, html)
    const unescaped = attribute[1]!.replace(/&quot;/g, '"').replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&amp;/g, '&')
    assert.deepEqual(JSON.parse(unescaped), config)
    assert.throws(() => renderPage('<head></head>', {}), /lacks/)
  })
})

describe('explorer formatting', () => {
  test('data volumes scale their unit (decimal, as the API): never millions of MB', () => {
    assert.equal(formatData(0), '0.00 MB')
    assert.equal(formatData(12.345), '12.35 MB')
    assert.equal(formatData(1_529_685.92), '1.53 TB')
    assert.equal(formatData(999.99), '999.99 MB')
    assert.equal(formatData(999.999), '1.00 GB')
    assert.equal(formatData(1_000), '1.00 GB')
    assert.equal(formatData(250_000), '250.00 GB')
    assert.equal(formatData(3e9), '3.00 PB')
  })

  test('periods read as people read them: the year on both ends, the last day included, no date after the period', () => {
    const now = Date.parse('2026-11-24T14:30:00Z')
    const DAY = 86_400_000
    assert.equal(describePeriod({ start: new Date(now - 30 * DAY).toISOString(), end: new Date(now).toISOString() }, DAY, now), '25 Oct 2026 – now (UTC, daily)')
    assert.equal(describePeriod({ start: '2025-11-24T14:30:00.000Z', end: new Date(now).toISOString() }, 7 * DAY, now), '24 Nov 2025 – now (UTC, weekly)')
    assert.equal(describePeriod({ start: '2026-09-01T00:00:00.000Z', end: '2026-09-04T00:00:00.000Z' }, DAY, now), '1 Sept 2026 – 3 Sept 2026 (UTC, daily)')
    assert.equal(describePeriod({ start: '2026-11-23T14:30:00.000Z', end: new Date(now).toISOString() }, 3_600_000, now), '23 Nov 2026 14:00 – now (UTC, hourly)')
  })
})

describe('serving the pages', { skip: SKIP }, () => {
  let h: Harness
  before(async () => { h = await startHarness({ LEDGER: 'local', SUI_NETWORK: 'mainnet' }) })
  after(async () => { await h.close() })

  test('GET /approve: HTML with the strict CSP, security headers and the page config', async () => {
    const res = await h.app.inject({ method: 'GET', url: '/approve?ref=0123456789abcdef01234567' })
    assert.equal(res.statusCode, 200)
    assert.equal(res.headers['content-type'], 'text/html; charset=utf-8')
    assert.equal(res.headers['content-security-policy'], CONTENT_SECURITY_POLICY)
    for (const directive of ["default-src 'none'", "script-src 'self'", "style-src 'self'", "connect-src 'self'", "frame-ancestors 'none'", "base-uri 'none'"]) {
      assert.ok(CONTENT_SECURITY_POLICY.includes(directive), directive)
    }
    assert.doesNotMatch(CONTENT_SECURITY_POLICY, /unsafe|https?:|\*/)
    assert.equal(res.headers['referrer-policy'], 'no-referrer')
    assert.equal(res.headers['x-frame-options'], 'DENY')
    assert.equal(res.headers['x-content-type-options'], 'nosniff')
    assert.equal(res.headers['cache-control'], 'no-cache')
    const meta = /<meta name="kns-page-config" content="([^"]*)">/.exec(res.body)
    assert.ok(meta)
    assert.deepEqual(JSON.parse(meta[1]!.replace(/&quot;/g, '"')), {
      ledger: 'local', suiNetwork: 'mainnet', callPackageId: h.service.config.knsLatestPackageId,
      loginAuthUrl: '/oidc/auth', loginClientId: h.service.config.zkLoginClientId, loginRedirectUri: `${h.service.config.publicBaseUrl}/approve`,
    })
    assert.doesNotMatch(res.body, /<script(?![^>]*\bsrc=)[^>]*>/, 'no inline script')
    assert.doesNotMatch(res.body, /\sstyle=|<style/, 'no inline style')
    assert.doesNotMatch(res.body, /(src|href)="(https?:)?\/\//, 'nothing from another origin')

    const again = await h.app.inject({ method: 'GET', url: '/approve', headers: { 'if-none-match': String(res.headers.etag) } })
    assert.equal(again.statusCode, 304)
    const head = await h.app.inject({ method: 'HEAD', url: '/approve' })
    assert.equal(head.statusCode, 200)
  })

  test('the login page at the provider\'s interaction path: the same CSP and headers; other methods 405', async () => {
    const url = '/oidc/interaction/AbCdEfGhIjKlMnOp'
    const res = await h.app.inject({ method: 'GET', url })
    assert.equal(res.statusCode, 200)
    assert.equal(res.headers['content-type'], 'text/html; charset=utf-8')
    assert.equal(res.headers['content-security-policy'], CONTENT_SECURITY_POLICY)
    assert.equal(res.headers['x-frame-options'], 'DENY')
    assert.match(res.body, /Log in with your phone number/)
    const post = await h.app.inject({ method: 'POST', url })
    assert.equal(post.statusCode, 405)
    assert.match(String(post.headers.allow), /GET/)
    const bad = await h.app.inject({ method: 'GET', url: '/oidc/interaction/no' })
    assert.equal(bad.statusCode, 400)
  })

  test('assets: immutable, compressed on request, 404 for unknown names; pages stay out of the OpenAPI', async () => {
    const html = (await h.app.inject({ method: 'GET', url: '/approve' })).body
    const scripts = [...html.matchAll(/(?:src|href)="(\/assets\/[^"]+)"/g)].map((m) => m[1]!)
    assert.ok(scripts.some((s) => s.endsWith('.js')) && scripts.some((s) => s.endsWith('.css')), scripts.join(' '))
    for (const url of scripts) {
      const plain = await h.app.inject({ method: 'GET', url })
      assert.equal(plain.statusCode, 200, url)
      assert.equal(plain.headers['cache-control'], 'public, max-age=31536000, immutable')
      if (plain.rawPayload.length < 1024) continue
      const br = await h.app.inject({ method: 'GET', url, headers: { 'accept-encoding': 'gzip, deflate, br' } })
      assert.equal(br.headers['content-encoding'], 'br')
      assert.deepEqual(brotliDecompressSync(br.rawPayload), plain.rawPayload)
      const gz = await h.app.inject({ method: 'GET', url, headers: { 'accept-encoding': 'gzip' } })
      assert.equal(gz.headers['content-encoding'], 'gzip')
      assert.deepEqual(gunzipSync(gz.rawPayload), plain.rawPayload)
    }
    const missing = await h.app.inject({ method: 'GET', url: '/assets/nope.js' })
    assert.equal(missing.statusCode, 404)
    assert.equal((missing.json() as { code: string }).code, 'NOT_FOUND')
    const traversal = await h.app.inject({ method: 'GET', url: '/assets/..%2f..%2fpackage.json' })
    assert.equal(traversal.statusCode, 404)
    const openapi = (await h.app.inject({ method: 'GET', url: '/openapi.json' })).json() as { paths: Record<string, unknown> }
    assert.equal(openapi.paths['/approve'], undefined)
  })

  test('not built: the page paths answer 503 with the command to run, the API is unaffected', async () => {
    const empty = mkdtempSync(join(tmpdir(), 'kns-web-'))
    const app = Fastify({ logger: false })
    try {
      await app.register(pageRoutes, { service: h.service, distDir: empty })
      const res = await app.inject({ method: 'GET', url: '/approve' })
      assert.equal(res.statusCode, 503)
      assert.match(res.body, /npm run build:web/)
    } finally {
      await app.close()
      rmSync(empty, { recursive: true, force: true })
    }
  })
})
