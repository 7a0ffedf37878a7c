/**
 * Which of signing and verification an INVITE asks the redirect server (src/sip/redirect.ts),
 * and the Contact it is sent on to: `sti` as a Request-URI parameter (after the host, any
 * case; a tel URI's too), `qtype` on From (Sansay's way, any case), else by whether an Identity
 * header came. Called directly, without a socket: the server answers verification with a 302
 * carrying a P-Asserted-Identity, and signing (no SIP_SIGNING_KEY here) with 403.
 */
import { after, before, test } from 'node:test'
import assert from 'node:assert/strict'
import { parseRequest, type SipResponse } from '../../src/sip/message.ts'
import { redirect, type RedirectPolicy } from '../../src/sip/redirect.ts'
import { startHarness, type Harness } from '../helpers.ts'

let h: Harness
before(async () => { h = await startHarness() })
after(async () => { await h?.close() })

const policy: RedirectPolicy = { block: new Set(), redress: null, signingBinding: async () => null }

function invite(uri: string, fromParams = '', extra: string[] = []): Buffer {
  return Buffer.from([
    `INVITE ${uri} SIP/2.0`,
    'Via: SIP/2.0/UDP 127.0.0.1:5062;branch=z9hG4bK-mode',
    `From: <sip:+12025550142@127.0.0.1>;tag=1${fromParams}`,
    'To: <sip:+14155550199@127.0.0.1>',
    'Call-ID: mode-1',
    'CSeq: 1 INVITE',
    ...extra,
    'Content-Length: 0',
    '', '',
  ].join('\r\n'))
}

async function ask(bytes: Buffer): Promise<{ mode: 'as' | 'vs'; response: SipResponse }> {
  const response = await redirect(h.service, policy, parseRequest(bytes)!, '127.0.0.1')
  const header = (name: string) => response.headers.find(([n]) => n === name)?.[1]
  if (response.status === 302 && header('P-Asserted-Identity') !== undefined) return { mode: 'vs', response }
  assert.equal(response.status, 403, `signing without a key answers 403, not ${response.status}`)
  assert.match(header('Warning')!, /signs nothing/)
  return { mode: 'as', response }
}

const IDENTITY = 'Identity: a.b.c;ppt=shaken'

test('sti on the Request-URI, in any case, chooses; in a user part it is no parameter', async () => {
  const cases: Array<[string, string[], 'as' | 'vs']> = [
    ['sip:+14155550199@127.0.0.1;user=phone;sti=vs', [], 'vs'],
    ['sip:+14155550199@127.0.0.1;user=phone;STI=Vs', [], 'vs'],
    ['sip:+14155550199@127.0.0.1;user=phone;sti=as', [IDENTITY], 'as'],
    ['tel:+14155550199;sti=vs', [], 'vs'],
    ['sip:+14155550199;sti=vs@127.0.0.1;user=phone', [], 'as'],
    ['sip:+14155550199;sti=as@127.0.0.1;user=phone', [IDENTITY], 'vs'],
  ]
  for (const [uri, extra, mode] of cases) assert.equal((await ask(invite(uri, '', extra))).mode, mode, uri)
})

test('qtype on From, in any case, chooses when the Request-URI does not say', async () => {
  const uri = 'sip:+14155550199@127.0.0.1;user=phone'
  assert.equal((await ask(invite(uri, ';qtype=sti-vs'))).mode, 'vs')
  assert.equal((await ask(invite(uri, ';qtype=STI-VS'))).mode, 'vs')
  assert.equal((await ask(invite(uri, ';qtype=sti-as', [IDENTITY]))).mode, 'as')
  assert.equal((await ask(invite(`${uri};sti=as`, ';qtype=sti-vs'))).mode, 'as', 'the Request-URI first')
})

test('otherwise an INVITE with Identity is verified, one without signed', async () => {
  const uri = 'sip:+14155550199@127.0.0.1;user=phone'
  assert.equal((await ask(invite(uri, '', [IDENTITY]))).mode, 'vs')
  assert.equal((await ask(invite(uri))).mode, 'as')
})

test('the Contact is the Request-URI without the sti parameter, whatever its form', async () => {
  const contacts: Array<[string, string]> = [
    ['sip:+14155550199@127.0.0.1;sti=VS;user=phone', 'sip:+14155550199@127.0.0.1;user=phone'],
    ['tel:+14155550199;sti=vs;isub=a@b', 'tel:+14155550199;isub=a@b'],
    ['sip:+14155550199@[2001:db8::1]:5060;sti=vs', 'sip:+14155550199@[2001:db8::1]:5060'],
    ['sip:+14155550199;sti=vs@127.0.0.1;sti=vs', 'sip:+14155550199;sti=vs@127.0.0.1'],
  ]
  for (const [uri, onward] of contacts) {
    const { response } = await ask(invite(uri))
    const contact = response.headers.find(([n]) => n === 'Contact')![1]
    assert.equal(contact.slice(0, contact.indexOf('?')), `<${onward}`, uri)
  }
})
