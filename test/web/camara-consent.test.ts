/**
 * The login page's consent step for a CAMARA three-legged client, in headless Chromium on a
 * 390 px phone: the number, the texted code, then a screen naming the client, what it will
 * learn about the number and why (photographed and checked by axe at both widths, both colour
 * schemes); Allow sends a code the client redeems for a token that names the number to the
 * resource server; Don't allow sends access_denied.
 */
import assert from 'node:assert/strict'
import { createHash, randomBytes } from 'node:crypto'
import { after, before, describe, test } from 'node:test'
import type { Browser, Page } from 'playwright-core'
import { FRAUD_PREVENTION_PURPOSE } from '../../src/camara/access.ts'
import { CamaraTokens } from '../../src/camara/access-token.ts'
import { startSmsc, type FakeSmsc } from '../support/fake-smsc.ts'
import { randomPhone, register } from '../support/kns.ts'
import { codeSentTo, type LoginServer } from '../support/login.ts'
import { clientAssertion, registerCamaraClient, tokenRequest, type CamaraTestClient } from '../support/camara-client.ts'
import { assertClean, horizontalOverflow, launchChromium, openPage, screenshot, SKIP, startWebServer, type WebServer } from './support.ts'

const CALLBACK = 'https://vendor.example/bank/callback'

describe('the consent step of a CAMARA client, on a phone', { skip: SKIP }, () => {
  let browser: Browser
  let server: WebServer
  let smsc: FakeSmsc
  let login: LoginServer
  let bank: CamaraTestClient

  before(async () => {
    smsc = await startSmsc()
    server = await startWebServer({ SMS_DELIVERY: 'smpp', SMPP_URL: smsc.url(), SMS_FROM: 'KNS', LOGIN_RESEND_COOLDOWN_S: '0' })
    login = { h: server.h, base: server.url, issuer: `${server.url}/oidc`, smsc, close: async () => {} }
    bank = await registerCamaraClient(login, { grantType: 'authorization_code', redirectUris: [CALLBACK], name: 'Acme Bank' })
    browser = await launchChromium()
  })
  after(async () => {
    await browser?.close()
    await server?.close()
    await smsc?.close()
  })

  function authorizationUrl(verifier: string): string {
    const url = new URL(`${login.issuer}/auth`)
    url.search = new URLSearchParams({
      client_id: bank.clientId, redirect_uri: CALLBACK, response_type: 'code', scope: `openid sim-swap:check sim-swap:retrieve-date ${FRAUD_PREVENTION_PURPOSE}`,
      state: 'st', code_challenge: createHash('sha256').update(verifier).digest('base64url'), code_challenge_method: 'S256',
    }).toString()
    return url.href
  }

  /**
   * Where the provider sends the browser after the click: the client's redirect URI, as the
   * browser requests it (the stand-in client page may load after a first attempt Chromium makes
   * outside the test's routing, so the request is watched rather than the page's load).
   */
  async function backAtTheClient(page: Page, click: () => Promise<void>): Promise<URL> {
    const request = page.waitForRequest((r) => r.url().startsWith(CALLBACK))
    await click()
    return new URL((await request).url())
  }

  /** Number, code: the page then shows the consent step. */
  async function logInToConsent(page: Page, phoneNumber: string, verifier: string): Promise<void> {
    await page.goto(authorizationUrl(verifier))
    await page.getByRole('heading', { name: 'Log in with your phone number' }).waitFor()
    assert.equal(await page.locator('[data-field="client"]').first().textContent(), 'To continue to Acme Bank')
    const before = smsc.submits.length
    await page.getByLabel('Phone number, with country code').fill(phoneNumber)
    await page.getByRole('button', { name: 'Send code' }).click()
    await page.getByRole('heading', { name: 'Enter the code' }).waitFor()
    await page.getByLabel('6-digit code').fill(await codeSentTo(smsc, phoneNumber, before))
    await page.getByRole('button', { name: 'Log in' }).click()
    await page.getByRole('heading', { name: 'Allow Acme Bank to check your phone number?' }).waitFor()
  }

  test('Allow: the client gets a code, and its token names the number to the resource server', async () => {
    const user = await register(server.h, randomPhone())
    const verifier = randomBytes(32).toString('base64url')
    const { context, page, watch } = await openPage(browser, { device: 'phone' })
    await logInToConsent(page, user.phoneNumber, verifier)
    const items = await page.locator('#consent-scopes li').allTextContents()
    assert.equal(items.length, 2)
    assert.ok(items.every((text) => /SIM card/.test(text)), items.join(' / '))
    assert.match((await page.locator('#consent-purpose').textContent())!, /fraud/i)
    assert.equal(await page.evaluate(() => (globalThis as any).document.activeElement?.id), 'consent-heading', 'focus moves to the question')
    assert.equal(await horizontalOverflow(page), 0)
    await screenshot(page, 'login-consent')

    const callback = await backAtTheClient(page, () => page.getByRole('button', { name: 'Allow', exact: true }).click())
    const code = callback.searchParams.get('code')
    assert.ok(code, callback.href)
    const answer = await tokenRequest(login, {
      grant_type: 'authorization_code', code, redirect_uri: CALLBACK, code_verifier: verifier,
      client_assertion_type: 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer', client_assertion: await clientAssertion(login, bank),
    })
    assert.equal(answer.status, 200, JSON.stringify(answer.body))
    const access = await new CamaraTokens(server.h.service).verify(`Bearer ${String(answer.body.access_token)}`)
    assert.equal(access.phoneNumber, user.phoneNumber)
    await assertClean(watch)
    await context.close()
  })

  test('Don\'t allow: the client hears access_denied', async () => {
    const user = await register(server.h, randomPhone())
    const { context, page, watch } = await openPage(browser, { device: 'phone' })
    await logInToConsent(page, user.phoneNumber, randomBytes(32).toString('base64url'))
    const callback = await backAtTheClient(page, () => page.getByRole('button', { name: 'Don\'t allow' }).click())
    assert.equal(callback.searchParams.get('error'), 'access_denied', callback.href)
    await assertClean(watch)
    await context.close()
  })
})
