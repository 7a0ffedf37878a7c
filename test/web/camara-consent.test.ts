/**
 * A bank's three-legged CAMARA path as its customer goes through it on a 390 px phone, in
 * headless Chromium: the bank sends the browser to the authorization endpoint (code, PKCE S256,
 * state, nonce, the SIM Swap scope and the fraud purpose); the customer types the number and the
 * texted code, and sees a screen naming the bank, what it will learn about the number and why
 * (photographed and checked by axe at both widths, both colour schemes, with a client name as
 * long as registration allows); Allow lands on the bank's callback (a loopback http server) with
 * the code and the bank's state; the bank redeems it with private_key_jwt and the verifier for a
 * JWT access token and calls `check` with NO phoneNumber: true for a SIM change the operator
 * reported within maxAge, false outside it, and a phoneNumber in the body is 422
 * UNNECESSARY_IDENTIFIER. Don't allow lands on the callback with access_denied.
 */
import assert from 'node:assert/strict'
import { createHash, randomBytes, randomInt } from 'node:crypto'
import { after, before, describe, test } from 'node:test'
import { decodeJwt } from 'jose'
import type { Browser, Page } from 'playwright-core'
import { FRAUD_PREVENTION_PURPOSE } from '../../src/camara/access.ts'
import { startBankCallback, type BankCallback } from '../support/bank-callback.ts'
import { startSmsc, type FakeSmsc } from '../support/fake-smsc.ts'
import { register } from '../support/kns.ts'
import { codeSentTo, type LoginServer } from '../support/login.ts'
import { clientAssertion, registerCamaraClient, tokenRequest, type CamaraTestClient } from '../support/camara-client.ts'
import { assertClean, horizontalOverflow, launchChromium, openPage, screenshot, SKIP, startWebServer, type WebServer } from './support.ts'

/** As long as a client name may be (64 characters), with one word that cannot break at a space. */
const BANK_NAME = 'Acme Banks (UK) InternationalFraudPreventionAndDetectionServices'
const SCOPE = `openid sim-swap:check ${FRAUD_PREVENTION_PURPOSE}`
const HOUR = 3600_000

/** A UK mobile number (07911…): SIM Swap applies to it, unlike the fixed lines randomPhone() gives. */
function randomMobile(): string {
  return `+447911${String(randomInt(0, 1_000_000)).padStart(6, '0')}`
}

describe('a bank\'s three-legged SIM Swap check, as its customer goes through it on a phone', { skip: SKIP }, () => {
  let browser: Browser
  let server: WebServer
  let smsc: FakeSmsc
  let login: LoginServer
  let callback: BankCallback
  let bank: CamaraTestClient
  let operatorKey: string

  before(async () => {
    smsc = await startSmsc()
    callback = await startBankCallback()
    server = await startWebServer({ SMS_DELIVERY: 'smpp', SMPP_URL: smsc.url(), SMS_FROM: 'KNS', LOGIN_RESEND_COOLDOWN_S: '0' })
    login = { h: server.h, base: server.url, issuer: `${server.url}/oidc`, smsc, close: async () => {} }
    bank = await registerCamaraClient(login, { grantType: 'authorization_code', redirectUris: [callback.uri], name: BANK_NAME, scope: SCOPE })
    operatorKey = await server.h.key({ scopes: ['sim-changes'], vendor: 'Operator OSS' })
    browser = await launchChromium()
  })
  after(async () => {
    await browser?.close()
    await server?.close()
    await callback?.close()
    await smsc?.close()
  })

  /** What the bank keeps while its customer is away: the PKCE verifier, state and nonce. */
  function bankRequest() {
    const verifier = randomBytes(32).toString('base64url')
    const state = randomBytes(16).toString('base64url')
    const nonce = randomBytes(16).toString('base64url')
    const url = new URL(`${login.issuer}/auth`)
    url.search = new URLSearchParams({
      client_id: bank.clientId, redirect_uri: callback.uri, response_type: 'code', scope: SCOPE, state, nonce,
      code_challenge: createHash('sha256').update(verifier).digest('base64url'), code_challenge_method: 'S256',
    }).toString()
    return { url: url.href, verifier, state, nonce }
  }

  /** The operator reports SIM changes of `phone` through the admin API, as its OSS does. */
  async function reportChanges(phone: string, changes: Array<{ kind: string; changedAt: number }>): Promise<void> {
    const res = await fetch(`${server.url}/api/v1/admin/sim-changes`, {
      method: 'POST', headers: { 'x-api-key': operatorKey, 'content-type': 'application/json' },
      body: JSON.stringify({ changes: changes.map((c) => ({ eventId: `oss-${randomBytes(6).toString('hex')}`, phoneNumber: phone, kind: c.kind, changedAt: new Date(c.changedAt).toISOString() })) }),
    })
    assert.equal(res.status, 200, await res.text())
  }

  async function check(token: string, body: Record<string, unknown>) {
    const res = await fetch(`${server.url}/sim-swap/v2/check`, {
      method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'x-correlator': 'bank-3l-check' }, body: JSON.stringify(body),
    })
    return { status: res.status, correlator: res.headers.get('x-correlator'), body: await res.json() as Record<string, unknown> }
  }

  /** The customer clicks; the browser arrives at the bank's callback (the bank's server saw it, the page shows it). */
  async function backAtTheBank(page: Page, click: () => Promise<void>): Promise<URL> {
    const arrival = callback.arrival(callback.count)
    await click()
    const url = await arrival
    await page.waitForURL((u) => u.href.startsWith(callback.uri))
    await page.getByRole('heading', { name: 'Back at the bank' }).waitFor()
    return url
  }

  /** The number, the texted code: the page then asks for consent. */
  async function logInToConsent(page: Page, phoneNumber: string, authorizationUrl: string): Promise<void> {
    await page.goto(authorizationUrl)
    await page.getByRole('heading', { name: 'Log in with your phone number' }).waitFor()
    assert.equal(await page.locator('[data-field="client"]').first().textContent(), `To continue to ${BANK_NAME}`)
    const before = smsc.submits.length
    await page.getByLabel('Phone number, with country code').fill(phoneNumber)
    await page.getByRole('button', { name: 'Send code' }).click()
    await page.getByRole('heading', { name: 'Enter the code' }).waitFor()
    await page.getByLabel('6-digit code').fill(await codeSentTo(smsc, phoneNumber, before))
    await page.getByRole('button', { name: 'Log in' }).click()
    await page.getByRole('heading', { name: `Allow ${BANK_NAME} to check your phone number?` }).waitFor()
  }

  /** Every part of the consent step lies inside the 390 px viewport's width, the buttons at full tap size. */
  async function assertFitsThePhone(page: Page): Promise<void> {
    assert.equal(await horizontalOverflow(page), 0, 'no sideways scrolling')
    for (const selector of ['#consent-heading', '#consent-scopes', '#consent-purpose', '#allow', '#refuse']) {
      const box = await page.locator(selector).boundingBox()
      assert.ok(box !== null, `${selector} is shown`)
      assert.ok(box.x >= 0 && box.x + box.width <= 390, `${selector} inside the width: ${JSON.stringify(box)}`)
    }
    for (const button of ['#allow', '#refuse']) {
      const box = (await page.locator(button).boundingBox())!
      assert.ok(box.height >= 44 && box.width >= 44, `${button} is a full-size tap target: ${JSON.stringify(box)}`)
      // Reachable: scrolled to, it is in view and the topmost element at its centre (nothing covers it).
      await page.locator(button).scrollIntoViewIfNeeded()
      assert.equal(await page.locator(button).evaluate((el) => {
        const r = el.getBoundingClientRect()
        return (globalThis as any).document.elementFromPoint(r.x + r.width / 2, r.y + r.height / 2) === el
      }), true, `${button} can be tapped`)
    }
    const heading = (await page.locator('#consent-heading').boundingBox())!
    assert.ok(heading.height > 40, 'the long client name wraps onto more than one line')
  }

  test('Allow: the bank gets a code and its state back, a JWT access token, and checks the number without naming it', async () => {
    const user = await register(server.h, randomMobile())
    await reportChanges(user.phoneNumber, [{ kind: 'activation', changedAt: Date.now() - 60 * 24 * HOUR }, { kind: 'sim-change', changedAt: Date.now() - 3 * HOUR }])
    const request = bankRequest()
    const { context, page, watch } = await openPage(browser, { device: 'phone' })
    await logInToConsent(page, user.phoneNumber, request.url)
    const items = await page.locator('#consent-scopes li').allTextContents()
    assert.equal(items.length, 1)
    assert.match(items[0]!, /SIM card/)
    assert.match((await page.locator('#consent-purpose').textContent())!, /fraud/i)
    assert.equal(await page.evaluate(() => (globalThis as any).document.activeElement?.id), 'consent-heading', 'focus moves to the question')
    assert.equal(await page.getByText('KNS will never call you or ask for this code').isVisible(), false, 'no word of a code where none is asked')
    await assertFitsThePhone(page)
    await screenshot(page, 'login-consent')

    const back = await backAtTheBank(page, () => page.getByRole('button', { name: 'Allow', exact: true }).click())
    assert.equal(back.searchParams.get('state'), request.state, 'the bank\'s state comes back')
    assert.equal(back.searchParams.get('error'), null, back.href)
    const code = back.searchParams.get('code')
    assert.ok(code, back.href)
    assert.equal(back.searchParams.get('iss'), login.issuer)

    const answer = await tokenRequest(login, {
      grant_type: 'authorization_code', code, redirect_uri: callback.uri, code_verifier: request.verifier,
      client_assertion_type: 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer', client_assertion: await clientAssertion(login, bank),
    })
    assert.equal(answer.status, 200, JSON.stringify(answer.body))
    assert.equal(String(answer.body.token_type).toLowerCase(), 'bearer')
    const token = String(answer.body.access_token)
    assert.equal(token.split('.').length, 3, 'a JWT access token')
    assert.equal(decodeJwt(token).client_id, bank.clientId)
    assert.equal(decodeJwt(String(answer.body.id_token)).nonce, request.nonce, 'the ID token carries the bank\'s nonce')
    // The code is spent: a second redemption is refused.
    const again = await tokenRequest(login, {
      grant_type: 'authorization_code', code, redirect_uri: callback.uri, code_verifier: request.verifier,
      client_assertion_type: 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer', client_assertion: await clientAssertion(login, bank),
    })
    assert.equal(again.status, 400, JSON.stringify(again.body))

    const inside = await check(token, { maxAge: 24 })
    assert.deepEqual([inside.status, inside.body], [200, { swapped: true }])
    assert.equal(inside.correlator, 'bank-3l-check')
    assert.deepEqual((await check(token, { maxAge: 2 })).body, { swapped: false }, 'the change is 3 hours old')
    const named = await check(token, { phoneNumber: user.phoneNumber, maxAge: 24 })
    assert.deepEqual([named.status, named.body.code], [422, 'UNNECESSARY_IDENTIFIER'], JSON.stringify(named.body))
    await assertClean(watch)
    await context.close()
  })

  test('Don\'t allow: the bank hears access_denied with its state, and no code', async () => {
    const user = await register(server.h, randomMobile())
    const request = bankRequest()
    const { context, page, watch } = await openPage(browser, { device: 'phone' })
    await logInToConsent(page, user.phoneNumber, request.url)
    const back = await backAtTheBank(page, () => page.getByRole('button', { name: 'Don\'t allow' }).click())
    assert.equal(back.searchParams.get('error'), 'access_denied', back.href)
    assert.equal(back.searchParams.get('state'), request.state)
    assert.equal(back.searchParams.get('code'), null)
    await assertClean(watch)
    await context.close()
  })
})
