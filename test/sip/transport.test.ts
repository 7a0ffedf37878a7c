/**
 * The SIP server's transport rules, with a plain UDP/TCP client: untrusted sources dropped;
 * the INVITE's final response retransmitted over UDP until its ACK; a retransmitted INVITE
 * answered again; CANCEL; OPTIONS; other methods 405; malformed requests 400 or dropped; a
 * TCP stream framed by Content-Length, keep-alive CRLFs answered.
 */
import { after, before, describe, test } from 'node:test'
import assert from 'node:assert/strict'
import { createSocket, type Socket } from 'node:dgram'
import { connect } from 'node:net'
import { SipServer } from '../../src/sip/server.ts'
import type { SipSettings } from '../../src/lib/sip-settings.ts'
import { startHarness, type Harness } from '../helpers.ts'

let h: Harness
let sip: SipServer
let client: Socket
const received: string[] = []

async function startSip(settings: Partial<SipSettings> = {}): Promise<SipServer> {
  const server = new SipServer(h.service, { host: '127.0.0.1', port: 0, trustedSources: ['127.0.0.1'], signingKeyId: null, block: [], redress: null, ...settings })
  await server.listen()
  return server
}

before(async () => {
  h = await startHarness()
  sip = await startSip()
  client = createSocket('udp4')
  client.on('message', (m) => received.push(m.toString()))
  await new Promise<void>((resolve) => client.bind(0, '127.0.0.1', resolve))
})
after(async () => {
  client?.close()
  await sip?.close()
  await h?.close()
})

let branch = 0
function request(method: string, options: { branch?: string; extra?: string[]; omit?: string; cseq?: string } = {}): string {
  const b = options.branch ?? `z9hG4bK-test-${++branch}`
  const lines = [
    `${method} sip:+14155550199@127.0.0.1;user=phone;sti=vs SIP/2.0`,
    `Via: SIP/2.0/UDP 127.0.0.1:${client.address().port};rport;branch=${b}`,
    'From: <sip:+12025550142@127.0.0.1>;tag=abc',
    'To: <sip:+14155550199@127.0.0.1>',
    `Call-ID: call-${b}`,
    `CSeq: ${options.cseq ?? `1 ${method}`}`,
    'Max-Forwards: 70',
    ...(options.extra ?? []),
    'Content-Length: 0',
  ].filter((l) => options.omit === undefined || !l.startsWith(options.omit))
  return `${lines.join('\r\n')}\r\n\r\n`
}

const send = (text: string, port = sip.address.udp!) => new Promise<void>((resolve) => client.send(Buffer.from(text), port, '127.0.0.1', () => resolve()))
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

async function answers(count: number, ms = 2000): Promise<string[]> {
  const deadline = Date.now() + ms
  while (received.length < count && Date.now() < deadline) await sleep(10)
  return received.splice(0)
}

const status = (message: string | undefined) => Number(/^SIP\/2\.0 (\d{3})/.exec(message ?? '')?.[1])

describe('UDP', () => {
  test('OPTIONS: 200 with Allow; an unknown method: 405; the top Via stamped with received/rport', async () => {
    await send(request('OPTIONS'))
    const [ok] = await answers(1)
    assert.equal(status(ok), 200)
    assert.match(ok!, /\r\nAllow: INVITE, ACK, CANCEL, OPTIONS\r\n/)
    assert.match(ok!, new RegExp(`;rport=${client.address().port};`))
    await send(request('REGISTER'))
    assert.equal(status((await answers(1))[0]), 405)
  })

  test('the final response is sent again until the ACK; a retransmitted INVITE gets it again; the ACK stops it', async () => {
    const invite = request('INVITE', { branch: 'z9hG4bK-retrans' })
    await send(invite)
    const first = await answers(1)
    assert.equal(status(first[0]), 302)
    await sleep(700) // Timer G: again after 500 ms
    const again = await answers(1, 100)
    assert.equal(again[0], first[0], 'the same response, byte for byte')
    await send(invite)
    assert.equal((await answers(1, 500))[0], first[0])
    await send(request('ACK', { branch: 'z9hG4bK-retrans', cseq: '1 ACK' }))
    await sleep(1200)
    assert.deepEqual(received.splice(0), [], 'nothing after the ACK')
  })

  test('CANCEL: 200 for a known INVITE (answered already: no 487), 481 for an unknown one', async () => {
    await send(request('INVITE', { branch: 'z9hG4bK-cancel' }))
    assert.equal(status((await answers(1))[0]), 302)
    await send(request('CANCEL', { branch: 'z9hG4bK-cancel', cseq: '1 CANCEL' }))
    const [cancelled] = await answers(1, 300)
    assert.equal(status(cancelled), 200)
    assert.match(cancelled!, /CSeq: 1 CANCEL/)
    await send(request('ACK', { branch: 'z9hG4bK-cancel', cseq: '1 ACK' }))
    await send(request('CANCEL', { branch: 'z9hG4bK-nobody', cseq: '1 CANCEL' }))
    assert.equal(status((await answers(1))[0]), 481)
  })

  test('a bare LF or another control character in the header: dropped, so nothing of it is copied into a response', async () => {
    await send(request('OPTIONS').replace('To: <sip:+14155550199@127.0.0.1>', 'To: <sip:+14155550199@127.0.0.1>\nX-Injected: yes'))
    await send(request('OPTIONS').replace('Call-ID: ', 'Call-ID: a\rb'))
    await send(request('OPTIONS').replace('Max-Forwards: 70', 'Max-Forwards: 7\u000b0'))
    await sleep(300)
    assert.deepEqual(received.splice(0), [])
  })

  test('a branch reused for another call (or without the magic cookie) is another transaction, answered on its own', async () => {
    await send(request('INVITE', { branch: 'z9hG4bK-reused' }))
    const first = await answers(1)
    await send(request('INVITE', { branch: 'z9hG4bK-reused' }).replace('Call-ID: call-z9hG4bK-reused', 'Call-ID: another-call'))
    const second = await answers(1)
    assert.equal(status(second[0]), 302)
    assert.match(second[0]!, /Call-ID: another-call/)
    assert.notEqual(first[0], second[0])
    for (const callId of ['legacy-1', 'legacy-2']) {
      await send(request('INVITE', { branch: 'legacy-branch' }).replace('Call-ID: call-legacy-branch', `Call-ID: ${callId}`))
      assert.match((await answers(1))[0]!, new RegExp(`Call-ID: ${callId}`))
    }
    await send(request('ACK', { branch: 'z9hG4bK-reused', cseq: '1 ACK' }))
    await send(request('ACK', { branch: 'z9hG4bK-reused', cseq: '1 ACK' }).replace('Call-ID: call-z9hG4bK-reused', 'Call-ID: another-call'))
    await sleep(50)
    received.splice(0)
  })

  test('a request missing Call-ID: 400; a response or garbage: dropped', async () => {
    await send(request('INVITE', { omit: 'Call-ID' }))
    assert.equal(status((await answers(1))[0]), 400)
    await send('SIP/2.0 200 OK\r\nVia: SIP/2.0/UDP 127.0.0.1\r\n\r\n')
    await send('\u0000\u0001garbage that is no SIP at all')
    await send(`INVITE sip:x SIP/2.0\r\nVia: SIP/2.0/UDP 127.0.0.1;branch=z9hG4bK-nohead\r\n`)
    await sleep(200)
    assert.deepEqual(received.splice(0), [])
  })

  test('an untrusted source is dropped without an answer', async () => {
    const guarded = await startSip({ trustedSources: ['10.9.8.7'] })
    try {
      await send(request('OPTIONS'), guarded.address.udp!)
      await sleep(300)
      assert.deepEqual(received.splice(0), [])
    } finally {
      await guarded.close()
    }
  })
})

describe('TCP', () => {
  test('two requests in one write and one split across writes are framed by Content-Length; CRLF keep-alive answered', async () => {
    const socket = connect(sip.address.tcp!, '127.0.0.1')
    let data = ''
    socket.on('data', (d) => { data += d.toString() })
    await new Promise((resolve) => socket.once('connect', resolve))
    const options = request('OPTIONS').replace('SIP/2.0/UDP', 'SIP/2.0/TCP')
    socket.write(options + options)
    socket.write(options.slice(0, 40))
    await sleep(50)
    socket.write(options.slice(40))
    socket.write('\r\n\r\n')
    const deadline = Date.now() + 2000
    while ((data.match(/SIP\/2\.0 200 OK/g) ?? []).length < 3 && Date.now() < deadline) await sleep(10)
    assert.equal((data.match(/SIP\/2\.0 200 OK/g) ?? []).length, 3)
    await sleep(50)
    assert.ok(data.endsWith('\r\n'))
    socket.destroy()
  })

  test('a message without Content-Length closes the connection; an untrusted peer is closed at once', async () => {
    const socket = connect(sip.address.tcp!, '127.0.0.1')
    await new Promise((resolve) => socket.once('connect', resolve))
    socket.write(request('OPTIONS').replace('Content-Length: 0\r\n', ''))
    await new Promise((resolve) => socket.once('close', resolve))
    const guarded = await startSip({ trustedSources: ['10.9.8.7'] })
    try {
      const refused = connect(guarded.address.tcp!, '127.0.0.1')
      refused.on('error', () => {})
      await new Promise((resolve) => refused.once('close', resolve))
    } finally {
      await guarded.close()
    }
  })
})
