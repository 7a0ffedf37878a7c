/**
 * The login codes and their texts as /metrics counts them (issue 33, item 2), driven over HTTP
 * as a browser logs in: a code texted with SMS_DELIVERY=log, a resend refused by the cooldown, a
 * wrong code, the right one; and a text the HTTP gateway refuses (500), counted as failed with
 * its reason. Every combination an alert reads exists at 0 before the first event.
 */
import assert from 'node:assert/strict'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { after, before, test } from 'node:test'
import { randomPhone, register } from '../support/kns.ts'
import { Browser, startLoginServer, type LoginServer } from '../support/login.ts'
import { sampleValue } from '../support/metrics.ts'
import { until } from '../support/until.ts'

let logged: LoginServer
let gatewayed: LoginServer
let gateway: Server
let gatewayHits = 0
/** What the log sender wrote (SMS_DELIVERY=log): the texts, as a developer reads them. */
const texts: Array<{ to: string; text: string }> = []

before(async () => {
  gateway = createServer((_req, res) => {
    gatewayHits++
    res.writeHead(500, { 'content-type': 'text/plain' }).end('internal error')
  })
  await new Promise<void>((resolve) => gateway.listen(0, '127.0.0.1', resolve))
  const gatewayUrl = `http://127.0.0.1:${(gateway.address() as AddressInfo).port}/cgi-bin/sendsms?username=kns&password=s3cret`
  ;[logged, gatewayed] = await Promise.all([
    startLoginServer({ SMS_DELIVERY: 'log', LOGIN_RESEND_COOLDOWN_S: '30' }),
    startLoginServer({ SMS_DELIVERY: 'http', SMS_HTTP_URL: gatewayUrl }),
  ])
  logged.h.service.accounts.useLogger({ info() {}, warn: (obj) => { if ('sms' in obj) texts.push((obj as { sms: { to: string; text: string } }).sms) } })
})
after(async () => {
  await Promise.all([logged?.close(), gatewayed?.close()])
  await new Promise((resolve) => gateway?.close(resolve))
})

const scrape = async (on: LoginServer) => (await on.h.app.inject({ method: 'GET', url: '/metrics' })).body

/** A login started in its own browser: the interaction's base URL. */
async function startLogin(on: LoginServer): Promise<{ browser: Browser; at: string }> {
  const browser = new Browser()
  const params = new URLSearchParams({
    client_id: on.h.service.config.zkLoginClientId, redirect_uri: `${on.base}/approve`, response_type: 'id_token', scope: 'openid', nonce: 'n', state: 's',
  })
  const { url } = await browser.follow(`${on.issuer}/auth?${params}`, on.base)
  const uid = /\/oidc\/interaction\/([^/?#]+)$/.exec(new URL(url).pathname)?.[1]
  assert.ok(uid !== undefined, `the provider asks for a login, got ${url}`)
  return { browser, at: `${on.base}/oidc/interaction/${uid}` }
}

test('before any login: every reason an alert reads is a series at 0', async () => {
  const text = await scrape(logged)
  assert.equal(sampleValue(text, 'kns_sms_sent_total', { delivery: 'log' }), 0)
  for (const reason of ['timeout', 'network', 'refused', 'throttled', 'rejected', 'closed', 'other']) {
    assert.equal(sampleValue(text, 'kns_sms_failed_total', { delivery: 'log', reason }), 0, reason)
  }
  for (const reason of ['cooldown', 'number_and_requester', 'number', 'requester', 'prefix']) {
    assert.equal(sampleValue(text, 'kns_login_codes_refused_total', { step: 'send', reason }), 0, reason)
  }
  for (const reason of ['no_code', 'expired', 'used', 'no_tries_left', 'wrong_code']) {
    assert.equal(sampleValue(text, 'kns_login_codes_refused_total', { step: 'verify', reason }), 0, reason)
  }
  assert.equal(sampleValue(text, 'kns_login_codes_sent_total'), 0)
  assert.equal(sampleValue(text, 'kns_login_codes_verified_total'), 0)
  // Only this process's delivery: no series for the others.
  assert.equal(sampleValue(text, 'kns_sms_sent_total', { delivery: 'smpp' }), undefined)
})

test('SMS_DELIVERY=log: a code sent and texted, a resend refused (cooldown), a wrong code, the right one', async () => {
  const { phoneNumber } = await register(logged.h, randomPhone())
  const login = await startLogin(logged)
  const sent = await login.browser.json(`${login.at}/code`, { phoneNumber })
  assert.equal(sent.status, 202, JSON.stringify(sent.body))
  await until(() => texts.some((t) => t.to === phoneNumber))
  const code = /^(\d{6}) is your KNS login code/.exec(texts.find((t) => t.to === phoneNumber)!.text)![1]!
  assert.equal((await login.browser.json(`${login.at}/code`, { phoneNumber })).status, 429)
  const wrong = code === '000000' ? '000001' : '000000'
  assert.equal((await login.browser.json(`${login.at}/login`, { code: wrong })).status, 400)
  const right = await login.browser.json(`${login.at}/login`, { code })
  assert.equal(right.status, 200, JSON.stringify(right.body))

  const text = await scrape(logged)
  assert.equal(sampleValue(text, 'kns_sms_sent_total', { delivery: 'log' }), 1)
  assert.equal(sampleValue(text, 'kns_login_codes_sent_total'), 1)
  assert.equal(sampleValue(text, 'kns_login_codes_refused_total', { step: 'send', reason: 'cooldown' }), 1)
  assert.equal(sampleValue(text, 'kns_login_codes_refused_total', { step: 'verify', reason: 'wrong_code' }), 1)
  assert.equal(sampleValue(text, 'kns_login_codes_verified_total'), 1)
  // The code is used: another try is refused as such.
  assert.equal((await login.browser.json(`${login.at}/login`, { code })).status, 400)
  assert.equal(sampleValue(await scrape(logged), 'kns_login_codes_refused_total', { step: 'verify', reason: 'used' }), 1)
})

test('SMS_DELIVERY=http: a gateway answering 500 counts a failed text (rejected), none sent; the answer stays 202', async () => {
  const { phoneNumber } = await register(gatewayed.h, randomPhone())
  const login = await startLogin(gatewayed)
  const sent = await login.browser.json(`${login.at}/code`, { phoneNumber })
  assert.equal(sent.status, 202, JSON.stringify(sent.body))
  await until(async () => sampleValue(await scrape(gatewayed), 'kns_sms_failed_total', { delivery: 'http', reason: 'rejected' }) === 1)
  const text = await scrape(gatewayed)
  assert.equal(gatewayHits, 1)
  assert.equal(sampleValue(text, 'kns_sms_sent_total', { delivery: 'http' }), 0)
  assert.equal(sampleValue(text, 'kns_login_codes_sent_total'), 1)
  // The gateway's credentials are never a label value.
  assert.doesNotMatch(text, /s3cret|sendsms/)
})
