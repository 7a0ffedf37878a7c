/**
 * The SIP server's transport rules, with a plain UDP/TCP client: untrusted sources dropped;
 * what a UDP source that has not proved it receives our answers is sent (one answer per INVITE,
 * a byte budget), and once it has (an ACK with our To tag) the INVITE's final response
 * retransmitted after a 100 Trying until its ACK; answers bounded in size; transactions keyed
 * by source; a retransmitted INVITE answered again; CANCEL; OPTIONS; other methods 405; malformed requests 400 or dropped; a
 * TCP stream framed by Content-Length, keep-alive CRLFs answered.
 */
import { after, before, describe, test } from 'node:test'
import assert from 'node:assert/strict'
import { createSocket, type Socket } from 'node:dgram'
import { connect } from 'node:net'
import { MAX_ANSWER_BYTES, MAX_ECHO_BYTES } from '../../src/sip/message.ts'
import { SipServer } from '../../src/sip/server.ts'
import { UNCONFIRMED_BURST_BYTES, UNCONFIRMED_BYTES_PER_S } from '../../src/sip/sources.ts'
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

/** The ACK of an INVITE's final response, with the To of that response (its tag) unless told another tag. */
function ack(branch: string, response: string, tag?: string): string {
  const to = /\r\nTo: ([^\r]*)/.exec(response)![1]!
  return request('ACK', { branch, cseq: '1 ACK' }).replace(/\r\nTo: [^\r]*/, `\r\nTo: ${tag === undefined ? to : to.replace(/;tag=\w+/, `;tag=${tag}`)}`)
}

/** Verification made slow (a certificate being fetched), so the INVITE is in progress for `ms`. */
function slowVerifier(ms: number): () => void {
  const verifier = h.service.callVerifier
  const verify = verifier.verify.bind(verifier)
  verifier.verify = async (call) => {
    await sleep(ms)
    return verify(call)
  }
  return () => { verifier.verify = verify }
}

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

  test('the report\'s spoofable sti=as INVITE from a source not confirmed: one answer, not 11 over 32 s; a retransmitted INVITE gets it again (issue 31)', async () => {
    const server = await startSip()
    try {
      const invite = request('INVITE', { branch: 'z9hG4bK-forged' }).replace(';sti=vs', ';sti=as')
      await send(invite, server.address.udp!)
      const first = await answers(1)
      assert.equal(status(first[0]), 403)
      // Before: again at 500 ms and 1.5 s (Timer G), 11 datagrams in all.
      await sleep(1700)
      assert.deepEqual(received.splice(0), [], 'not sent again')
      await send(invite, server.address.udp!)
      assert.deepEqual(await answers(1), first, 'the same response, byte for byte, to the INVITE sent again')
    } finally {
      await server.close()
    }
  })

  test('an ACK with our To tag confirms the source: a slow answer then gets 100 Trying and is sent again until the ACK; a wrong tag confirms nothing', async () => {
    const server = await startSip()
    const restore = slowVerifier(400)
    try {
      const port = server.address.udp!
      const slow = (b: string) => request('INVITE', { branch: b, extra: ['Identity: a.b.c;ppt=shaken'] })
      // Unconfirmed: no 100 Trying, one 302.
      /** What an INVITE got: its first `count` answers, then whatever came in the next second. */
      const got = async (count: number) => {
        const first = await answers(count, 5000)
        await sleep(1000)
        return [...first, ...received.splice(0)]
      }
      await send(slow('z9hG4bK-unconfirmed'), port)
      const unconfirmed = await got(1)
      assert.deepEqual(unconfirmed.map(status), [302])
      await send(ack('z9hG4bK-unconfirmed', unconfirmed[0]!, 'wrong0tag000'), port)
      await send(slow('z9hG4bK-still'), port)
      const still = await got(1)
      assert.deepEqual(still.map(status), [302], 'an ACK with another tag confirms nothing')
      await send(ack('z9hG4bK-still', still[0]!), port)
      await send(slow('z9hG4bK-confirmed'), port)
      // 100 Trying at 200 ms, the 302 at 400 ms and again 500 ms later.
      const confirmed = await answers(3, 5000)
      assert.deepEqual(confirmed.map(status), [100, 302, 302])
      assert.equal(confirmed[2], confirmed[1])
      await send(ack('z9hG4bK-confirmed', confirmed[1]!), port)
      await sleep(100)
      received.splice(0)
      await sleep(1200)
      assert.deepEqual(received.splice(0), [], 'nothing after the ACK')
    } finally {
      restore()
      await server.close()
    }
  })

  test('an unconfirmed source is sent at most its byte budget, however many INVITEs come "from" it (issue 31)', async () => {
    const server = await startSip()
    try {
      const started = Date.now()
      for (let i = 0; i < 100; i++) await send(request('INVITE', { branch: `z9hG4bK-flood-${i}` }), server.address.udp!)
      await sleep(500)
      const got = received.splice(0)
      const bytes = got.reduce((sum, a) => sum + Buffer.byteLength(a), 0)
      const allowed = UNCONFIRMED_BURST_BYTES + UNCONFIRMED_BYTES_PER_S * ((Date.now() - started) / 1000)
      assert.ok(got.length > 0 && got.every((a) => status(a) === 302))
      assert.ok(bytes <= allowed, `${bytes} bytes in ${got.length} answers, at most ${allowed}`)
      assert.ok(got.length < 100, 'the budget was reached')
    } finally {
      await server.close()
    }
  })

  test('the report\'s 30 KB INVITE with 90 Via headers: one 400 echoing only the top Via, not 336 KB (issue 31)', async () => {
    const server = await startSip()
    try {
      const vias = Array.from({ length: 90 }, (_, i) => `Via: SIP/2.0/UDP 127.0.0.1:${client.address().port};branch=z9hG4bK-big${i};x=${'a'.repeat(270)}`)
      const invite = request('INVITE', { branch: 'z9hG4bK-big' }).replace(/Via: [^\r]*/, vias.join('\r\n'))
      assert.ok(Buffer.byteLength(invite) > 29_000)
      await send(invite, server.address.udp!)
      const [refused] = await answers(1)
      assert.equal(status(refused), 400)
      assert.match(refused!, /Warning: 399 kns "90 Via values: an answer echoes at most 10"/)
      assert.equal(refused!.match(/\r\nVia: /g)!.length, 1)
      assert.ok(Buffer.byteLength(refused!) <= 1024, `${Buffer.byteLength(refused!)} bytes`)
      await sleep(700)
      assert.deepEqual(received.splice(0), [], 'not sent again')
      // Fewer Via values but too many bytes of them: the same.
      const long = request('INVITE', { branch: 'z9hG4bK-long' }).replace('Call-ID: ', `Call-ID: ${'c'.repeat(MAX_ECHO_BYTES)}`)
      await send(long, server.address.udp!)
      const [tooLong] = await answers(1)
      assert.equal(status(tooLong), 400)
      assert.ok(Buffer.byteLength(tooLong!) <= MAX_ANSWER_BYTES)
    } finally {
      await server.close()
    }
  })

  test('transactions are keyed by source: another trusted source that knows branch, Call-ID and CSeq cannot CANCEL or ACK the INVITE (issue 31)', async () => {
    const server = await startSip({ trustedSources: ['127.0.0.1', '127.0.0.2'] })
    const other = createSocket('udp4')
    const theirs: string[] = []
    other.on('message', (m) => theirs.push(m.toString()))
    await new Promise<void>((resolve) => other.bind(0, '127.0.0.2', resolve))
    const fromOther = (text: string) => new Promise<void>((resolve) => other.send(Buffer.from(text), server.address.udp!, '127.0.0.1', () => resolve()))
    const restore = slowVerifier(500)
    try {
      const invite = request('INVITE', { branch: 'z9hG4bK-victim', extra: ['Identity: a.b.c;ppt=shaken'] })
      await send(invite, server.address.udp!)
      await sleep(100)
      await fromOther(request('CANCEL', { branch: 'z9hG4bK-victim', cseq: '1 CANCEL' }))
      const [first] = await answers(1)
      assert.equal(status(first), 302, 'the INVITE was not cancelled')
      assert.deepEqual(theirs.map(status), [481])
      await fromOther(ack('z9hG4bK-victim', first!))
      await sleep(100)
      await send(invite, server.address.udp!)
      assert.deepEqual(await answers(1), [first], 'the same transaction (the same To tag): the other source\'s ACK did not end it')
    } finally {
      restore()
      other.close()
      await server.close()
    }
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
