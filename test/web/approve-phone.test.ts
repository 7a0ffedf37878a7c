/**
 * "Approve with your phone number" in headless Chromium on a 390 px phone: a number registered
 * with register-user-login, a vendor's request to it, and its owner approving with no wallet:
 * the provider's login page (number, then the code the local SMSC received), back with the
 * id_token, then salt, proof and a zkLogin signature made in the page. On the embedded ledger
 * (the clear proof) and on LEDGER=sui (the prover stand-in and the strict Sui GraphQL stub).
 * transaction_details says approved and the vendor's webhook arrives.
 */
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { after, before, describe, test } from 'node:test'
import type { Browser, Page } from 'playwright-core'
import { normalizeSuiAddress } from '@mysten/sui/utils'
import type { JSONWebKeySet, JWK } from 'jose'
import { addSubscription } from '../../src/events/webhooks/subscriptions.ts'
import { linkNumber } from '../../src/identity/numbers.ts'
import { maskPhone } from '../../src/identity/phone.ts'
import { startSuiGraphqlStub, type SuiGraphqlStub } from '../ledger/sui-graphql-stub.ts'
import { startSmsc, type FakeSmsc } from '../support/fake-smsc.ts'
import { approvalBody, details, post, randomPhone, register } from '../support/kns.ts'
import { codeSentTo } from '../support/login.ts'
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.ts'
import { startZkLoginProverStub, type ZkLoginProverStub } from '../support/zklogin-prover-stub.ts'
import { assertClean, horizontalOverflow, launchChromium, openPage, screenshot, SKIP, startWebServer, type WebServer } from './support.ts'

const SUCCESS = 'https://vendor.example/approved'

interface Setup {
  server: WebServer
  smsc: FakeSmsc
  receiver: WebhookReceiver
  key: string
  /** A registered number whose token (minted, or added to the Sui stub) is owned by its zkAddress. */
  owner(): Promise<{ phoneNumber: string; zkAddress: string }>
}

async function startSetup(env: Record<string, string>, tokenFor?: (server: WebServer, zkAddress: string, phone: string) => Promise<void>): Promise<Setup> {
  const smsc = await startSmsc()
  const server = await startWebServer({
    SMS_DELIVERY: 'smpp', SMPP_URL: smsc.url(), SMS_FROM: 'KNS', LOGIN_RESEND_COOLDOWN_S: '0', WEBHOOK_ALLOW_PRIVATE: 'true', ...env,
  })
  const key = await server.h.key({ vendor: 'Acme Mobile', scopes: ['approvals'] })
  const keyId = (await server.h.service.db.get<{ id: string }>('SELECT id FROM api_keys WHERE vendor = $1', ['Acme Mobile']))!.id
  const receiver = await startWebhookReceiver()
  receiver.secret = (await addSubscription(server.h.service.db, server.h.service.events.box, { keyId, url: receiver.url }, { allowPrivate: true })).secret
  return {
    server, smsc, receiver, key,
    async owner() {
      const user = await register(server.h, randomPhone())
      if (tokenFor !== undefined) await tokenFor(server, user.zkAddress, user.phoneNumber)
      return user
    },
  }
}

async function closeSetup(setup: Setup | undefined): Promise<void> {
  await setup?.server.close()
  await setup?.receiver.close()
  await setup?.smsc.close()
}

async function newApproval(setup: Setup, phoneNumber: string, method: 'sign' | 'event' = 'sign') {
  const res = await post(setup.server.h, '/numsys/approval-phone', approvalBody({ phoneNumber }, {
    method, title: 'SIM replacement', successRedirectUrl: SUCCESS, cancelRedirectUrl: 'https://vendor.example/cancelled',
  }), { 'x-api-key': setup.key })
  assert.equal(res.statusCode, 200, res.body)
  return res.json() as { approvalUrl: string; approvalNumber: string }
}

/** A registered number's new request, opened on a phone, "Approve with your phone number" tapped: on the login page. */
async function toLoginPage(browser: Browser, setup: Setup, phoneNumber?: string) {
  const user = phoneNumber === undefined ? await setup.owner() : { phoneNumber }
  const request = await newApproval(setup, user.phoneNumber)
  const opened = await openPage(browser, { device: 'phone' })
  await opened.page.goto(request.approvalUrl)
  await opened.page.getByRole('button', { name: 'Approve with your phone number' }).click()
  await opened.page.waitForURL(/\/oidc\/interaction\//)
  return { ...opened, user, request }
}

/** On the login page: the number, then the code the SMSC received for it. */
async function logInOnPage(page: Page, setup: Setup, phoneNumber: string, options: { photograph?: boolean } = {}): Promise<void> {
  await page.waitForURL(/\/oidc\/interaction\//)
  await page.getByRole('heading', { name: 'Log in with your phone number' }).waitFor()
  assert.match((await page.locator('[data-field="client"]').first().textContent())!, /^To continue to /)
  if (options.photograph) await screenshot(page, 'login-number')
  const before = setup.smsc.submits.length
  // As people type it: spaces and all.
  await page.getByLabel('Phone number, with country code').fill(phoneNumber.replace(/^(\+\d{2})(\d{4})/, '$1 $2 '))
  await page.getByRole('button', { name: 'Send code' }).click()
  await page.getByRole('heading', { name: 'Enter the code' }).waitFor()
  assert.match((await page.locator('#sent-to').textContent())!, new RegExp(maskPhone(phoneNumber).replace(/[+*]/g, '\\$&')))
  if (options.photograph) await screenshot(page, 'login-code')
  const code = await codeSentTo(setup.smsc, phoneNumber, before)
  await page.getByLabel('6-digit code').fill(code)
  await page.getByRole('button', { name: 'Log in' }).click()
}

async function approveByPhone(browser: Browser, setup: Setup, method: 'sign' | 'event', photograph = false): Promise<void> {
  const user = await setup.owner()
  const request = await newApproval(setup, user.phoneNumber, method)
  const shown = await details(setup.server.h, request.approvalNumber)
  assert.equal(shown.phoneLogin, true, 'transaction_details says the owner is the number\'s phone login')
  assert.equal(shown.wallet, user.zkAddress)

  const { context, page, watch } = await openPage(browser, { device: 'phone' })
  await page.goto(request.approvalUrl)
  await page.locator('#request').waitFor()
  const approve = page.getByRole('button', { name: 'Approve with your phone number' })
  await approve.waitFor()
  assert.equal(await page.locator('#no-wallet').isVisible(), false, 'no wallet is asked for')
  if (photograph) await screenshot(page, 'approve-phone-pending')
  await approve.click()
  await logInOnPage(page, setup, user.phoneNumber, { photograph })

  // Back on the approval page, which proves, signs and approves by itself.
  await page.locator('#final[data-state="approved-here"]').waitFor({ timeout: 30_000 })
  assert.ok(!page.url().includes('id_token'), `the id_token is gone from the address bar: ${page.url()}`)
  assert.equal(new URL(page.url()).searchParams.get('ref'), request.approvalNumber)
  assert.equal(await horizontalOverflow(page), 0)
  if (photograph) await screenshot(page, 'approve-phone-approved')
  assert.equal(await page.evaluate(() => (globalThis as any).sessionStorage.length), 0, 'the ephemeral key is not kept after use')

  const after = await details(setup.server.h, request.approvalNumber)
  assert.equal(after.status, 'approved')
  assert.equal(normalizeSuiAddress(after.wallet as string), normalizeSuiAddress(user.zkAddress))
  const deliveries = await setup.receiver.waitFor(1, 15_000)
  const approved = deliveries.find((d) => (d.verified?.data as { approvalNumber?: string } | undefined)?.approvalNumber === request.approvalNumber)
  assert.ok(approved, 'the vendor\'s webhook for this approval arrived')
  assert.equal(approved.verified?.type, 'approval.approved')

  await page.getByRole('link', { name: 'Continue to Acme Mobile' }).click()
  await page.waitForURL(SUCCESS)
  await assertClean(watch)
  await context.close()
}

describe('approving with the phone number on the embedded ledger', { skip: SKIP, timeout: 180_000 }, () => {
  let setup: Setup
  let browser: Browser
  before(async () => {
    setup = await startSetup({})
    browser = await launchChromium()
  })
  after(async () => {
    await browser?.close()
    await closeSetup(setup)
  })

  test('sign: register, open the request on a phone, log in with the code, approved; webhook sent', async () => {
    await approveByPhone(browser, setup, 'sign', true)
  })

  test('event: kns::approve on the embedded ledger, signed with the phone login', async () => {
    setup.receiver.received.length = 0
    await approveByPhone(browser, setup, 'event')
  })

  test('a wrong code: said on the page, and the right one still works', async () => {
    const { context, page, watch, user } = await toLoginPage(browser, setup)
    const before = setup.smsc.submits.length
    await page.getByLabel('Phone number, with country code').fill(user.phoneNumber)
    await page.getByRole('button', { name: 'Send code' }).click()
    const code = await codeSentTo(setup.smsc, user.phoneNumber, before)
    const wrong = code === '000000' ? '111111' : '000000'
    await page.getByLabel('6-digit code').fill(wrong)
    await page.getByRole('button', { name: 'Log in' }).click()
    await page.getByRole('alert').getByText(/code/i).waitFor()
    assert.equal(await page.getByLabel('6-digit code').getAttribute('aria-invalid'), 'true')
    await screenshot(page, 'login-wrong-code')
    await page.getByLabel('6-digit code').fill(code)
    await page.getByRole('button', { name: 'Log in' }).click()
    await page.locator('#final[data-state="approved-here"]').waitFor({ timeout: 30_000 })
    await assertClean(watch)
    await context.close()
  })

  test('logging in with another registered number: the page says so and approves nothing', async () => {
    const other = await setup.owner()
    const { context, page, request } = await toLoginPage(browser, setup)
    await logInOnPage(page, setup, other.phoneNumber)
    await page.getByRole('alert').getByText(/does not own this request's phone number/).waitFor({ timeout: 30_000 })
    assert.equal((await details(setup.server.h, request.approvalNumber)).status, 'pending')
    // The way to approve is offered again.
    await page.getByRole('button', { name: 'Approve with your phone number' }).waitFor()
    await context.close()
  })

  test('cancelling the login: back on the request, nothing approved, Approve offered again', async () => {
    const { context, page, watch, request } = await toLoginPage(browser, setup)
    await page.getByRole('button', { name: 'Cancel and go back' }).click()
    // Back through the provider's redirects, as after a login (30 s like those: a loaded CI machine took 17 s once).
    await page.getByRole('alert').getByText('You did not log in, so nothing was approved.').waitFor({ timeout: 30_000 })
    assert.equal(new URL(page.url()).searchParams.get('ref'), request.approvalNumber)
    assert.equal((await details(setup.server.h, request.approvalNumber)).status, 'pending')
    await page.getByRole('button', { name: 'Approve with your phone number' }).waitFor()
    await assertClean(watch)
    await context.close()
  })

  test('the login page opened after its login expired (or in another browser): says so, in the error shape\'s words', async () => {
    const { context, page, watch } = await openPage(browser, { device: 'phone' })
    await page.goto(`${setup.server.url}/oidc/interaction/${randomBytes(16).toString('base64url')}`)
    await page.getByRole('heading', { name: 'This login has expired' }).waitFor()
    await screenshot(page, 'login-expired')
    assert.deepEqual(await watch.cspViolations(), [])
    await context.close()
  })

  test('a number that is not in international form is refused on the page, before anything is sent', async () => {
    const { context, page } = await toLoginPage(browser, setup)
    const before = setup.smsc.submits.length
    await page.getByLabel('Phone number, with country code').fill('07700 900123')
    await page.getByRole('button', { name: 'Send code' }).click()
    await page.getByRole('alert').getByText(/country code/).waitFor()
    assert.equal(await page.getByLabel('Phone number, with country code').getAttribute('aria-invalid'), 'true')
    assert.equal(setup.smsc.submits.length, before)
    await context.close()
  })
})

describe('approving with the phone number on LEDGER=sui', { skip: SKIP, timeout: 180_000 }, () => {
  let sui: SuiGraphqlStub
  let prover: ZkLoginProverStub
  let setup: Setup
  let browser: Browser
  before(async () => {
    sui = await startSuiGraphqlStub()
    // The prover reads the provider's JWKS from the server (started below) on each request.
    let jwksUri = ''
    prover = await startZkLoginProverStub({ jwks: async () => await (await fetch(jwksUri)).json() as JSONWebKeySet, onProof: (p) => sui.world.acceptZkProof(p) })
    setup = await startSetup({ ...sui.ledgerEnv(), LEDGER_CACHE_TTL_S: '0', ZKLOGIN_PROVER_URL: prover.url }, async (server, zkAddress, phone) => {
      const tokenId = normalizeSuiAddress(`0x${randomBytes(32).toString('hex')}`)
      sui.world.addToken(tokenId, zkAddress)
      await linkNumber(server.h.service.db, phone, tokenId, 'linked')
    })
    const issuer = `${setup.server.url}/oidc`
    jwksUri = `${issuer}/jwks`
    // Sui lists the provider's issuer and its published keys (what SIP-42 asks of Sui for Karrier One).
    sui.world.addZkLoginProvider(issuer, await (await fetch(jwksUri)).json() as { keys: JWK[] })
    sui.world.setEpoch(500)
    browser = await launchChromium()
  })
  after(async () => {
    await browser?.close()
    await closeSetup(setup)
    await prover?.close()
    await sui?.close()
  })

  test('sign: the proof from the prover, the signature verified by Sui', async () => {
    const proofs = prover.proofs.length
    await approveByPhone(browser, setup, 'sign')
    assert.equal(prover.proofs.length, proofs + 1, 'one proof asked of the prover')
    assert.deepEqual(prover.refusals, [])
  })

  test('event on Sui: a phone login cannot pay for the transaction; the page says what is needed and offers no Approve', async () => {
    const user = await setup.owner()
    const request = await newApproval(setup, user.phoneNumber, 'event')
    const { context, page, watch } = await openPage(browser, { device: 'phone' })
    await page.goto(request.approvalUrl)
    await page.getByRole('heading', { name: 'This request needs a Sui wallet' }).waitFor()
    assert.match((await page.locator('#no-wallet-text').textContent())!, /network fee in SUI/)
    assert.equal(await page.getByRole('button', { name: /^Approve/ }).count(), 0)
    await screenshot(page, 'approve-phone-sui-event')
    await assertClean(watch)
    await context.close()
  })
})
