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
import { randomPhone, register, registerEach } from '../support/kns.ts'
import { Browser, startLoginServer, type LoginServer } from '../support/login.ts'

const texts: SmsMessage[] = []

/** A server with the default limits (cooldown given), recording every text that really leaves. */
async function limitedServer(cooldownS: number): Promise<LoginServer> {
  const started = await startLoginServer({
    SMS_DELIVERY: 'log', TRUST_PROXY: 'loopback', LOGIN_RESEND_COOLDOWN_S: String(cooldownS),
    LOGIN_SENDS_PER_NUMBER: '5', LOGIN_SENDS_PER_NUMBER_TOTAL: '20', LOGIN_SENDS_PER_IP: '20', LOGIN_SENDS_PER_PREFIX: '200', LOGIN_PREFIX_DIGITS: '7',
  })
  // The sender the login codes were built with.
  started.h.service.accounts.sms.send = async (message) => { texts.push(message) }
  return started
}

/** The settings (a 30 s cooldown); `hourly`: the same without the cooldown, to reach the hourly budgets quickly. */
let server: LoginServer
let hourly: LoginServer
before(async () => { [server, hourly] = await Promise.all([limitedServer(30), limitedServer(0)]) })
after(async () => { await Promise.all([server?.close(), hourly?.close()]) })

/** One login started in its own browser (cookie jar): its interaction's code URL. */
async function startLogin(on: LoginServer = server, browser = new Browser()): Promise<{ browser: Browser; codeUrl: string }> {
  const params = new URLSearchParams({
    client_id: on.h.service.config.zkLoginClientId, redirect_uri: `${on.base}/approve`, response_type: 'id_token',
    scope: 'openid', nonce: `n-${Math.random()}`, state: 's',
  })
  const { url } = await browser.follow(`${on.issuer}/auth?${params}`, on.base)
  const uid = /\/oidc\/interaction\/([^/?#]+)$/.exec(new URL(url).pathname)?.[1]
  assert.ok(uid !== undefined, `the provider asks for a login, got ${url}`)
  return { browser, codeUrl: `${on.base}/oidc/interaction/${uid}/code` }
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
    const users = await registerEach(server.h, 40)
    const logins = await Promise.all(users.map(() => startLogin()))
    const answers = await Promise.all(users.map((user, i) => sendCode(logins[i]!, user.phoneNumber, '198.51.100.8')))
    assert.equal(answers.filter((a) => a.status === 202).length, 20)
    const sent = (await Promise.all(users.map((u) => textsTo(u.phoneNumber)))).reduce((a, b) => a + b, 0)
    assert.equal(sent, 20, 'texts')
  })

  test('IPv6 addresses in one /64 are one requester: they share the cooldown; another /64 does not', async () => {
    const user = await register(server.h, randomPhone())
    assert.equal((await sendCode(await startLogin(), user.phoneNumber, '2001:db8:31:1::a')).status, 202)
    const sameHost = await sendCode(await startLogin(), user.phoneNumber, '2001:db8:31:1:9c2e:11ff:fe00:7')
    assert.equal(sameHost.status, 429, 'another address of the same /64')
    assert.equal((await sendCode(await startLogin(), user.phoneNumber, '2001:db8:31:2::a')).status, 202, 'another /64')
    assert.equal(await textsTo(user.phoneNumber), 2)
  })

  test('IPv6 addresses in one /64 share the per-address budget', async () => {
    const users = await registerEach(hourly.h, 21)
    const login = await startLogin(hourly)
    for (const [i, user] of users.slice(0, 20).entries()) {
      assert.equal((await sendCode(login, user.phoneNumber, `2001:db8:32:1::${(i + 1).toString(16)}`)).status, 202)
    }
    const last = await sendCode(login, users[20]!.phoneNumber, '2001:db8:32:1:ffff::1')
    assert.equal(last.status, 429)
    assert.match(String(last.body.message), /this network address/)
  })

  test('a stranger spends only his own budget: the owner from another address still gets a code', async () => {
    const owner = await register(hourly.h, randomPhone())
    const stranger = await startLogin(hourly)
    for (let i = 0; i < 5; i++) assert.equal((await sendCode(stranger, owner.phoneNumber, '127.0.0.2')).status, 202)
    const refused = await sendCode(stranger, owner.phoneNumber, '127.0.0.2')
    assert.equal(refused.status, 429, 'the stranger is over his budget for this number')
    const before = await textsTo(owner.phoneNumber)
    const answer = await sendCode(await startLogin(hourly), owner.phoneNumber, '127.0.0.3')
    assert.equal(answer.status, 202, JSON.stringify(answer.body))
    assert.equal(await textsTo(owner.phoneNumber), before + 1, 'the owner got a text')
  })

  test('strangers from many addresses fill the number\'s hourly budget: an address that logged in to it still gets a code', async () => {
    const owner = await register(hourly.h, randomPhone())
    const ownerLogin = await startLogin(hourly)
    assert.equal((await sendCode(ownerLogin, owner.phoneNumber, '127.0.3.1')).status, 202)
    const code = /^(\d{6})/.exec(texts.filter((m) => m.to === owner.phoneNumber).at(-1)!.text)![1]
    const loggedIn = await ownerLogin.browser.fetch(ownerLogin.codeUrl.replace(/\/code$/, '/login'), {
      method: 'POST', headers: { 'content-type': 'application/json', 'x-forwarded-for': '127.0.3.1' }, body: JSON.stringify({ code }),
    })
    assert.equal(loggedIn.status, 200)
    for (let a = 2; a <= 5; a++) {
      const stranger = await startLogin(hourly)
      for (let i = 0; i < 5; i++) await sendCode(stranger, owner.phoneNumber, `127.0.3.${a}`)
    }
    assert.equal((await sendCode(await startLogin(hourly), owner.phoneNumber, '127.0.3.99')).status, 429, '20 sends this hour from all addresses')
    const before = await textsTo(owner.phoneNumber)
    assert.equal((await sendCode(await startLogin(hourly), owner.phoneNumber, '127.0.3.1')).status, 202, 'the address the owner logged in from')
    assert.equal(await textsTo(owner.phoneNumber), before + 1)
  })

  test('220 sends to numbers without an account in one prefix lock nobody out: its registered numbers still get codes', async () => {
    const prefix = freshPrefix()
    const flood = Array.from({ length: 11 }, (_, a) => `127.0.1.${a + 1}`)
    const answers = await Promise.all(flood.map(async (ip, a) => {
      const login = await startLogin(hourly)
      const statuses: number[] = []
      for (let i = 0; i < 20; i++) statuses.push((await sendCode(login, `${prefix}${String(a * 20 + i).padStart(4, '0')}`, ip)).status)
      return statuses
    }))
    assert.deepEqual(new Set(answers.flat()), new Set([202]), 'a send that texts nothing spends no pumping budget')
    assert.equal(texts.filter((m) => m.to.startsWith(prefix)).length, 0, 'not one text')
    for (const [number, ip] of [['9998', '127.0.2.1'], ['9999', flood[0]!]] as const) {
      const user = await register(hourly.h, `${prefix}${number}`)
      const answer = await sendCode(await startLogin(hourly), user.phoneNumber, ip)
      assert.equal(answer.status, 202, `${user.phoneNumber} from ${ip}: ${JSON.stringify(answer.body)}`)
      assert.equal(await textsTo(user.phoneNumber), 1)
    }
  })
})

describe('a number without an account is answered as one with, at every budget', () => {
  /** The answer with what may differ between two sends a moment apart (the seconds to wait) taken out. */
  const shape = (a: Answer) => ({
    status: a.status, keys: Object.keys(a.body).sort(), code: a.body.code, message: String(a.body.message ?? '').replace(/\d+/g, 'N'),
    headers: Object.keys(a.headers).sort(), sentTo: typeof a.body.sentTo, expiresInS: a.body.expiresInS, resendAfterS: a.body.resendAfterS,
  })
  /** Runs `steps` against a registered and an unregistered number alike; their answers, step by step, must not differ. */
  async function alike(on: LoginServer, steps: (phone: string, tag: number) => Promise<Answer[]>): Promise<Answer[]> {
    const registered = (await register(on.h, randomPhone())).phoneNumber
    const [withAccount, without] = await Promise.all([steps(registered, 1), steps(randomPhone(), 2)])
    assert.deepEqual(withAccount.map(shape), without!.map(shape))
    return withAccount!
  }

  test('the cooldown, and another address not held by it', async () => {
    const answers = await alike(server, async (phone, tag) => [
      await sendCode(await startLogin(), phone, `198.51.101.${tag}`),
      await sendCode(await startLogin(), phone, `198.51.101.${tag}`),
      await sendCode(await startLogin(), phone, `198.51.101.${10 + tag}`),
    ])
    assert.deepEqual(answers.map((a) => a.status), [202, 429, 202])
    assert.ok(Number(answers[1]!.headers['retry-after']) > 0)
  })

  test('the per-(number, address) and per-number budgets', async () => {
    const answers = await alike(hourly, async (phone, tag) => {
      const out: Answer[] = []
      const stranger = await startLogin(hourly)
      for (let i = 0; i < 6; i++) out.push(await sendCode(stranger, phone, `198.51.102.${tag}`))
      for (let a = 1; a < 4; a++) for (let i = 0; i < 5; i++) out.push(await sendCode(await startLogin(hourly), phone, `198.51.102.${10 * a + tag}`))
      out.push(await sendCode(await startLogin(hourly), phone, `198.51.102.${200 + tag}`))
      return out
    })
    assert.deepEqual(answers.map((a) => a.status), [202, 202, 202, 202, 202, 429, ...Array<number>(15).fill(202), 429])
    assert.match(String(answers[5]!.body.message), /this number from this network address/)
    assert.match(String(answers[21]!.body.message), /sent to this number this hour/)
  })

  test('the pumping budgets: an address out of texts is refused for every number', async () => {
    const login = await startLogin(hourly)
    for (let i = 0; i < 20; i++) assert.equal((await sendCode(login, (await register(hourly.h, randomPhone())).phoneNumber, '10.33.0.1')).status, 202)
    const answers = await alike(hourly, async (phone) => [await sendCode(await startLogin(hourly), phone, '10.33.0.1')])
    assert.equal(answers[0]!.status, 429)
    assert.match(String(answers[0]!.body.message), /sent to this network address/)
  })

  test('the pumping budgets: a prefix out of texts is refused for every number of it', async () => {
    const prefix = freshPrefix()
    // 200 texts in the prefix: 10 registered numbers of it, 20 sends each from 4 addresses (5 each).
    const pumped = []
    for (let n = 0; n < 10; n++) pumped.push(await register(hourly.h, `${prefix}${String(n).padStart(4, '0')}`))
    for (const [n, user] of pumped.entries()) {
      await Promise.all(Array.from({ length: 4 }, async (_, a) => {
        const login = await startLogin(hourly)
        for (let i = 0; i < 5; i++) assert.equal((await sendCode(login, user.phoneNumber, `10.31.${n}.${a}`)).status, 202)
      }))
    }
    const registered = (await register(hourly.h, `${prefix}9000`)).phoneNumber
    const [withAccount, without] = await Promise.all([
      sendCode(await startLogin(hourly), registered, '10.32.0.1'), sendCode(await startLogin(hourly), `${prefix}9001`, '10.32.0.2'),
    ])
    assert.equal(withAccount.status, 429)
    assert.deepEqual(shape(withAccount), shape(without))
    assert.match(String(withAccount.body.message), /numbers of this range/)
  })
})
