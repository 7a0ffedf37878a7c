/**
 * The send limits of login codes over HTTP, as an attacker meets them (issue 31, items 1 and 2):
 * simultaneous sends (the limit check and the write that counts a send are one atomic step),
 * budgets a stranger cannot spend for the owner, IPv6 addresses grouped by /64, and a number
 * without an account answered exactly as one with. Texts are counted as they leave (a recording
 * sender), not by the 202s. Client addresses come from X-Forwarded-For (TRUST_PROXY=loopback).
 */
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import type { SmsMessage } from '../../src/accounts/sms/sms-sender.ts'
import { randomPhone, register } from '../support/kns.ts'
import { Browser, startLoginServer, type LoginServer } from '../support/login.ts'

let server: LoginServer
const texts: SmsMessage[] = []

before(async () => {
  server = await startLoginServer({
    SMS_DELIVERY: 'log', TRUST_PROXY: 'loopback', LOGIN_RESEND_COOLDOWN_S: '30',
    LOGIN_SENDS_PER_NUMBER: '5', LOGIN_SENDS_PER_IP: '20', LOGIN_SENDS_PER_PREFIX: '200', LOGIN_PREFIX_DIGITS: '7',
  })
  // Every text that really leaves: the sender the login codes were built with, recording.
  server.h.service.accounts.sms.send = async (message) => { texts.push(message) }
})
after(async () => { await server.close() })

/** One login started in its own browser (cookie jar): its interaction's code URL. */
async function startLogin(browser = new Browser()): Promise<{ browser: Browser; codeUrl: string }> {
  const params = new URLSearchParams({
    client_id: server.h.service.config.zkLoginClientId, redirect_uri: `${server.base}/approve`, response_type: 'id_token',
    scope: 'openid', nonce: `n-${Math.random()}`, state: 's',
  })
  const { url } = await browser.follow(`${server.issuer}/auth?${params}`, server.base)
  const uid = /\/oidc\/interaction\/([^/?#]+)$/.exec(new URL(url).pathname)?.[1]
  assert.ok(uid !== undefined, `the provider asks for a login, got ${url}`)
  return { browser, codeUrl: `${server.base}/oidc/interaction/${uid}/code` }
}

interface Answer { status: number; body: Record<string, unknown>; headers: Record<string, string> }

/** Asks for a code to `phone` from client address `ip`; the status, body and the headers that could tell anything. */
async function sendCode(login: { browser: Browser; codeUrl: string }, phone: string, ip: string): Promise<Answer> {
  const res = await login.browser.fetch(login.codeUrl, {
    method: 'POST', headers: { 'content-type': 'application/json', 'x-forwarded-for': ip }, body: JSON.stringify({ phoneNumber: phone }),
  })
  const headers: Record<string, string> = {}
  for (const name of ['retry-after', 'cache-control', 'content-type']) {
    const value = res.headers.get(name)
    if (value !== null) headers[name] = value
  }
  return { status: res.status, body: await res.json() as Record<string, unknown>, headers }
}

/** The texts sent so far to `phone`, once every delivery queued by the answers already received has run. */
async function textsTo(phone: string): Promise<number> {
  await new Promise((resolve) => setImmediate(resolve))
  return texts.filter((m) => m.to === phone).length
}

let prefixSeq = 0
/** A 7-digit prefix of its own for each test (+88 is not assigned). */
function freshPrefix(): string {
  return `+88${String((Date.now() + prefixSeq++) % 100_000).padStart(5, '0')}`
}

describe('login code send limits over HTTP', () => {
  test('40 simultaneous sends to one number from one address: one text (the cooldown holds)', async () => {
    const user = await register(server.h, randomPhone())
    const logins = await Promise.all(Array.from({ length: 40 }, () => startLogin()))
    const answers = await Promise.all(logins.map((login) => sendCode(login, user.phoneNumber, '198.51.100.7')))
    const statuses = answers.map((a) => a.status)
    assert.equal(statuses.filter((s) => s === 202).length, 1, `202s: ${statuses.join(',')}`)
    assert.equal(statuses.filter((s) => s === 429).length, 39)
    assert.equal(await textsTo(user.phoneNumber), 1, 'one text')
  })

  test('40 registered numbers from one address at once: the per-address budget (20) holds', async () => {
    const users = await Promise.all(Array.from({ length: 40 }, () => register(server.h, randomPhone())))
    const logins = await Promise.all(users.map(() => startLogin()))
    const answers = await Promise.all(users.map((user, i) => sendCode(logins[i]!, user.phoneNumber, '198.51.100.8')))
    assert.equal(answers.filter((a) => a.status === 202).length, 20)
    const sent = (await Promise.all(users.map((u) => textsTo(u.phoneNumber)))).reduce((a, b) => a + b, 0)
    assert.equal(sent, 20, 'texts')
  })
})
