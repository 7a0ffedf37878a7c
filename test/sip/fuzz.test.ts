/**
 * The SIP side of the fuzz suite: requests made from a valid INVITE by fast-check (fields
 * dropped, doubled, cut, replaced by random text or bytes; several Identity headers, div and
 * rcd PASSporTs, garbage in them), parsed and sent over UDP: the parser throws nothing but
 * SipParseError, the server never answers 5xx, never crashes, and still answers afterwards.
 * Half the INVITEs ask for signing (`sti=as`) of a server that signs, so a diverted call's
 * verification before its div PASSporT is fuzzed too.
 */
import { after, before, test } from 'node:test'
import assert from 'node:assert/strict'
import { createSocket, type Socket } from 'node:dgram'
import fc from 'fast-check'
import { addCredential } from '../../src/caller/shaken/credentials.ts'
import { createApiKey } from '../../src/keys/api-keys.ts'
import { SealedBox } from '../../src/lib/sealed-box.ts'
import { parseRequest, SipParseError } from '../../src/sip/message.ts'
import { SipServer } from '../../src/sip/server.ts'
import { startHarness, type Harness } from '../helpers.ts'
import { b64json, callerNumber, claims, nowS, shakenHeader, signRaw } from '../support/caller.ts'
import { replayParameters } from '../support/fuzz-seed.ts'
import { startX5uServer, type X5uServer } from '../support/x5u-server.ts'

let h: Harness
let x5u: X5uServer
let sip: SipServer
let client: Socket
const answers: string[] = []
let template: string[]

before(async () => {
  x5u = await startX5uServer()
  h = await startHarness({ STI_TRUST_ANCHORS: `${x5u.pki.dir}/root.pem`, X5U_ALLOW_PRIVATE: 'true', STI_CRL: 'off' }, { x5uTlsCa: x5u.pki.tls.ca })
  await addCredential(h.service.db, new SealedBox(h.service.secret, 'shaken-credentials'),
    { name: 'carrier', keyPem: x5u.pki.leaves.spc.key, chainPem: x5u.pki.leaves.spc.bundle, x5u: x5u.certUrl('spc') }, { allowPrivate: true, allowHttp: false })
  const signing = await createApiKey(h.service.db, { vendor: 'SBC', scopes: ['signing'], rate: 1000, signing: { credentials: ['carrier'], attest: ['A', 'B', 'C'], numbers: ['+1*', '+44*'] } })
  sip = new SipServer(h.service, { host: '127.0.0.1', port: 0, trustedSources: ['127.0.0.1'], signingKeyId: signing.id, block: [], redress: null })
  await sip.listen()
  client = createSocket('udp4')
  client.on('message', (m) => answers.push(m.toString('latin1')))
  await new Promise<void>((resolve) => client.bind(0, '127.0.0.1', resolve))
  const a = await callerNumber(h)
  const shaken = signRaw(shakenHeader(a.signers[0]!.keyId), claims(a.phone, '+14155550199', { rcd: { nam: 'Acme', jcl: 'https://127.0.0.1:1/x.json' } }), a.signers[0]!.privateKey)
  const div = `${b64json({ alg: 'ES256', ppt: 'div', typ: 'passport', kid: 'k' })}.${b64json({ dest: { tn: ['14155550123'] }, div: { tn: '14155550199' }, iat: nowS(), orig: { tn: a.phone.slice(1) } })}.AAAA`
  template = [
    'INVITE sip:+14155550123@127.0.0.1;user=phone SIP/2.0',
    `Via: SIP/2.0/UDP 127.0.0.1:${client.address().port};rport;branch=z9hG4bK-fuzz`,
    `From: "Caller" <sip:${a.phone}@127.0.0.1;user=phone>;tag=1`,
    'To: <sip:+14155550123@127.0.0.1>',
    'Call-ID: fuzz-1',
    'CSeq: 1 INVITE',
    'Max-Forwards: 70',
    `P-Asserted-Identity: <sip:${a.phone}@127.0.0.1;user=phone>, <tel:${a.phone}>`,
    `Identity: ${shaken};info=<https://127.0.0.1:1/x.pem>;alg=ES256;ppt=shaken`,
    `Identity: ${div};ppt=div`,
    'Diversion: <sip:+14155550199@127.0.0.1>;reason=unconditional;counter=1',
    'Attestation-Info: A',
    'Content-Length: 0',
  ]
})
after(async () => {
  client?.close()
  await sip?.close()
  await h?.close()
  await x5u?.close()
})

const line = fc.oneof(
  fc.string({ maxLength: 80 }),
  fc.constantFrom('Identity: ', 'Identity: a.b.c', 'Via: SIP/2.0/UDP', 'Content-Length: 99999', 'Content-Length: -1', 'y: x.y.z;ppt=div',
    'From: <sip:@>', 'To: "unterminated <sip:x@y>', 'CSeq: 1', 'P-Asserted-Identity: <tel:+1-415-555-0199;verstat=x>', ' folded continuation'),
  fc.uint8Array({ maxLength: 40 }).map((b) => Buffer.from(b).toString('latin1')),
)
const mutation = fc.oneof(
  fc.record({ kind: fc.constant('drop' as const), at: fc.nat() }),
  fc.record({ kind: fc.constant('double' as const), at: fc.nat() }),
  fc.record({ kind: fc.constant('replace' as const), at: fc.nat(), text: line }),
  fc.record({ kind: fc.constant('insert' as const), at: fc.nat(), text: line }),
  fc.record({ kind: fc.constant('cut' as const), at: fc.nat(), keep: fc.nat({ max: 200 }) }),
)

function mutate(lines: string[], mutations: Array<{ kind: string; at: number; text?: string; keep?: number }>): string {
  const out = [...lines]
  for (const m of mutations) {
    const i = m.at % Math.max(out.length, 1)
    if (m.kind === 'drop') out.splice(i, 1)
    else if (m.kind === 'double') out.splice(i, 0, out[i] ?? '')
    else if (m.kind === 'replace') out[i] = m.text!
    else if (m.kind === 'insert') out.splice(i, 0, m.text!)
    else out[i] = (out[i] ?? '').slice(0, m.keep)
  }
  return `${out.join('\r\n')}\r\n\r\n`
}

/**
 * An INVITE answered and ACKed with our To tag: the client's address is confirmed, so the
 * server's budget for unconfirmed UDP sources (src/sip/sources.ts) hides none of its answers.
 */
async function confirmSource(port: number): Promise<void> {
  const invite = `${template.slice(0, 7).join('\r\n').replace('z9hG4bK-fuzz', 'z9hG4bK-confirm')}\r\nContent-Length: 0\r\n\r\n`
  await new Promise<void>((resolve) => client.send(Buffer.from(invite), port, '127.0.0.1', () => resolve()))
  const deadline = Date.now() + 5000
  while (!answers.some((a) => /^SIP\/2\.0 [2-6]/.test(a)) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10))
  const final = answers.find((a) => /^SIP\/2\.0 [2-6]/.test(a))!
  const to = /\r\nTo: ([^\r]*)/.exec(final)![1]!
  const ack = invite.replace('INVITE sip', 'ACK sip').replace('1 INVITE', '1 ACK').replace(/\r\nTo: [^\r]*/, `\r\nTo: ${to}`)
  await new Promise<void>((resolve) => client.send(Buffer.from(ack), port, '127.0.0.1', () => resolve()))
  await new Promise((resolve) => setTimeout(resolve, 100))
  answers.length = 0
}

test('mutated INVITEs: the parser throws only SipParseError; the server never answers 5xx and keeps answering', { timeout: 120_000 }, async () => {
  const port = sip.address.udp!
  await confirmSource(port)
  let sent = 0
  const signing = [template[0]!.replace(';user=phone SIP', ';user=phone;sti=as SIP'), ...template.slice(1)]
  await fc.assert(fc.asyncProperty(fc.array(mutation, { minLength: 1, maxLength: 4 }), fc.nat(), fc.boolean(), async (mutations, n, sign) => {
    const text = mutate(sign ? signing : template, mutations).replace('branch=z9hG4bK-fuzz', `branch=z9hG4bK-fuzz-${n}-${sent}`)
    const bytes = Buffer.from(text, 'latin1')
    try {
      parseRequest(bytes)
    } catch (err) {
      assert.ok(err instanceof SipParseError, `parseRequest threw ${String(err)} for ${JSON.stringify(text.slice(0, 300))}`)
    }
    sent++
    await new Promise<void>((resolve) => client.send(bytes, port, '127.0.0.1', () => resolve()))
  }), { numRuns: 400, ...replayParameters() })
  await new Promise((resolve) => setTimeout(resolve, 1500))
  // Every answer reached the client (a confirmed source has no byte budget): most INVITEs parse.
  assert.ok(answers.filter((a) => !a.startsWith('SIP/2.0 1')).length >= 100, `${answers.length} answers`)
  const serverErrors = answers.filter((a) => /^SIP\/2\.0 5\d\d/.test(a) && !a.startsWith('SIP/2.0 503'))
  assert.deepEqual(serverErrors.map((a) => a.split('\r\n')[0]), [])
  answers.length = 0
  const options = template.slice(0, 7).join('\r\n').replace('INVITE sip', 'OPTIONS sip').replace('1 INVITE', '1 OPTIONS').replace('z9hG4bK-fuzz', 'z9hG4bK-after')
  await new Promise<void>((resolve) => client.send(Buffer.from(`${options}\r\nContent-Length: 0\r\n\r\n`), port, '127.0.0.1', () => resolve()))
  const deadline = Date.now() + 2000
  while (!answers.some((a) => a.startsWith('SIP/2.0 200')) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10))
  assert.ok(answers.some((a) => a.startsWith('SIP/2.0 200')), 'the server still answers')
})
