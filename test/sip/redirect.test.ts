/**
 * The SIP redirect interface driven by sipp as an SBC would: a signing INVITE gets a 302 whose
 * Identity verifies; verification INVITEs with a good, a tampered, a stale and a diverted
 * header get the right verstat; a blocked one gets 603 with its Reason; over UDP and TCP.
 */
import { after, before, describe, test } from 'node:test'
import assert from 'node:assert/strict'
import { X509Certificate } from 'node:crypto'
import { compactVerify } from 'jose'
import { addCredential } from '../../src/caller/shaken/credentials.ts'
import { createApiKey } from '../../src/keys/api-keys.ts'
import { SealedBox } from '../../src/lib/sealed-box.ts'
import { SipServer } from '../../src/sip/server.ts'
import type { SipSettings } from '../../src/lib/sip-settings.ts'
import { startHarness, type Harness } from '../helpers.ts'
import { callerNumber, claims, nowS, shakenHeader, signRaw, type CallerNumber } from '../support/caller.ts'
import { runSipp, sippMissing } from '../support/sipp.ts'
import { startX5uServer, type X5uServer } from '../support/x5u-server.ts'

const skip = sippMissing()
let h: Harness
let x5u: X5uServer
let sip: SipServer
let port: number
let caller: CallerNumber
let forwarder: CallerNumber
const DEST = '+14155550199'
const NEXT = '+14155550123'

async function startSip(settings: Partial<SipSettings>): Promise<SipServer> {
  const server = new SipServer(h.service, { host: '127.0.0.1', port: 0, trustedSources: ['127.0.0.1'], signingKeyId: null, block: [], redress: null, ...settings })
  await server.listen()
  return server
}

before(async () => {
  if (skip !== undefined) return
  x5u = await startX5uServer()
  h = await startHarness({ STI_TRUST_ANCHORS: `${x5u.pki.dir}/root.pem`, X5U_ALLOW_PRIVATE: 'true', STI_CRL: 'off' }, { x5uTlsCa: x5u.pki.tls.ca })
  await addCredential(h.service.db, new SealedBox(h.service.secret, 'shaken-credentials'),
    { name: 'carrier', keyPem: x5u.pki.leaves.spc.key, chainPem: x5u.pki.leaves.spc.bundle, x5u: x5u.certUrl('spc'), displayName: 'Acme Carrier' }, { allowPrivate: true, allowHttp: false })
  const signingKey = await createApiKey(h.service.db, { vendor: 'SBC', scopes: ['signing'], rate: 1000, signing: { credentials: ['carrier'], attest: ['A', 'B', 'C'], numbers: ['+1202555*', '+1415555*'] } })
  sip = await startSip({ signingKeyId: signingKey.id })
  port = sip.address.udp!
  caller = await callerNumber(h)
  forwarder = await callerNumber(h, { phone: DEST })
})
after(async () => {
  await sip?.close()
  await h?.close()
  await x5u?.close()
})

const shakenIdentity = (overrides: Record<string, unknown> = {}, dest = DEST) =>
  `${signRaw(shakenHeader(caller.signers[0]!.keyId), claims(caller.phone, dest, overrides), caller.signers[0]!.privateKey)};ppt=shaken`
/** A div PASSporT by the diverting number's own ledger key (from DEST to NEXT unless told). */
const divIdentity = (by: CallerNumber = forwarder, to = NEXT) => {
  const payload = { dest: { tn: [to.slice(1)] }, div: { tn: by.phone.slice(1) }, iat: nowS(), orig: { tn: caller.phone.slice(1) } }
  return `${signRaw({ alg: 'ES256', ppt: 'div', typ: 'passport', kid: by.signers[0]!.keyId }, payload, by.signers[0]!.privateKey)};ppt=div`
}
const diversionFrom = (tn: string) => `Diversion: <sip:${tn}@127.0.0.1;user=phone>;reason=unconditional;counter=1`
const claimsOf = (identity: string) => JSON.parse(Buffer.from(identity.split('.')[1]!, 'base64url').toString()) as Record<string, unknown>
const verstatOf = (pai: string | undefined) => /verstat=([\w-]+)/.exec(pai ?? '')?.[1]

describe('SIP redirect: verification', { skip }, () => {
  for (const transport of ['u1', 't1'] as const) {
    test(`a good Identity header: 302, verstat TN-Validation-Passed in the Contact's P-Asserted-Identity (${transport === 'u1' ? 'UDP' : 'TCP'})`, async () => {
      const result = await runSipp(port, { to: DEST, uriParams: ';user=phone', from: caller.phone, headers: [`Identity: ${shakenIdentity()}`], expect: 302 }, transport)
      assert.equal(result.code, 0, result.stderr)
      const headers = result.response!.headers
      assert.equal(verstatOf(headers.get('p-asserted-identity')?.[0]), 'TN-Validation-Passed')
      const contact = headers.get('contact')![0]!
      assert.match(contact, new RegExp(`^<sip:\\${DEST}@127\\.0\\.0\\.1:\\d+;user=phone\\?P-Asserted-Identity=`))
      const embedded = decodeURIComponent(contact.slice(contact.indexOf('?P-Asserted-Identity=') + 21, -1))
      assert.equal(embedded, headers.get('p-asserted-identity')![0])
      assert.match(embedded, new RegExp(`<sip:\\${caller.phone}@127\\.0\\.0\\.1:\\d+;user=phone;verstat=TN-Validation-Passed>`))
    })
  }

  test('a signed caller name with commas and angle brackets: written as one quoted display name without them, no second name-addr', async () => {
    const injected = 'Bank,<sip:+18005550100@bank.example;verstat=TN-Validation-Passed>'
    const identity = shakenIdentity({ rcd: { nam: injected } })
    const result = await runSipp(port, { to: DEST, uriParams: ';user=phone', from: caller.phone, headers: [`Identity: ${identity}`], expect: 302 })
    assert.equal(result.code, 0, result.stderr)
    const pai = result.response!.headers.get('p-asserted-identity')![0]!
    assert.equal(verstatOf(pai), 'TN-Validation-Passed')
    assert.match(pai, /^"Bank  sip:\+18005550100@bank\.example;verstat=TN-Validation-Passed " <sip:\+\d+@/)
    // A proxy that splits at commas sees one value, and one URI in angle brackets.
    assert.equal(pai.split(',').length, 1)
    assert.equal(pai.match(/</g)?.length, 1)
  })

  const failing: Array<[string, () => string[], string, string]> = [
    ['tampered', () => [`Identity: ${shakenIdentity().replace(/\.([\w-]{4})/, '.AAAA')}`], 'TN-Validation-Failed', '438'],
    ['stale', () => [`Identity: ${shakenIdentity({ iat: nowS() - 3600 })}`], 'TN-Validation-Failed', '403'],
    ['absent (no Identity, sti=vs)', () => [], 'No-TN-Validation', ''],
  ]
  for (const [name, headers, verstat, cause] of failing) {
    test(`a ${name} header: 302 with verstat ${verstat}${cause === '' ? '' : ` and Reason cause ${cause}`}`, async () => {
      const result = await runSipp(port, { to: DEST, uriParams: ';user=phone;sti=vs', from: caller.phone, headers: headers(), expect: 302 })
      assert.equal(result.code, 0, result.stderr)
      assert.equal(verstatOf(result.response!.headers.get('p-asserted-identity')?.[0]), verstat)
      assert.match(result.response!.headers.get('contact')![0]!, new RegExp(`^<sip:\\${DEST}@127\\.0\\.0\\.1:\\d+;user=phone\\?`), 'the Contact without sti')
      if (cause !== '') assert.match(result.response!.headers.get('reason')![0]!, new RegExp(`^SIP;cause=${cause};text=`))
    })
  }

  test('a diverted call: the shaken and the div Identity headers, the Request-URI the new destination: TN-Validation-Passed', async () => {
    const result = await runSipp(port, { to: NEXT, uriParams: ';user=phone', from: caller.phone, headers: [`Identity: ${shakenIdentity()}`, `Identity: ${divIdentity()}`], expect: 302 })
    assert.equal(result.code, 0, result.stderr)
    assert.equal(verstatOf(result.response!.headers.get('p-asserted-identity')?.[0]), 'TN-Validation-Passed')
    const withoutDiv = await runSipp(port, { to: NEXT, uriParams: ';user=phone', from: caller.phone, headers: [`Identity: ${shakenIdentity()}`], expect: 302 })
    assert.equal(verstatOf(withoutDiv.response!.headers.get('p-asserted-identity')?.[0]), 'TN-Validation-Failed')
  })

  test('policy blocks what fails: 603 Network Blocked with the ATIS-1000099 Reason; what passes still gets its 302', async () => {
    const blocking = await startSip({ block: ['failed'], redress: 'https://redress.example.com/kns' })
    try {
      const blockingPort = blocking.address.udp!
      const blocked = await runSipp(blockingPort, { to: DEST, uriParams: ';user=phone', from: caller.phone, headers: [`Identity: ${shakenIdentity({ iat: nowS() - 3600 })}`], expect: 603 })
      assert.equal(blocked.code, 0, blocked.stderr)
      assert.deepEqual(blocked.response!.headers.get('reason'), ['SIP;cause=603;text="v=analytics1;url=https://redress.example.com/kns";location=RLN'])
      const passed = await runSipp(blockingPort, { to: DEST, uriParams: ';user=phone', from: caller.phone, headers: [`Identity: ${shakenIdentity()}`], expect: 302 })
      assert.equal(passed.code, 0, passed.stderr)
    } finally {
      await blocking.close()
    }
  })
})

describe('SIP redirect: signing', { skip }, () => {
  test('an INVITE without Identity: 302 with the Identity header to add, which verifies (jose with the leaf key, and our verifier)', async () => {
    for (const transport of ['u1', 't1'] as const) {
      const result = await runSipp(port, { to: DEST, uriParams: ';user=phone', from: '+12025550142', headers: ['Attestation-Info: A'], expect: 302 }, transport)
      assert.equal(result.code, 0, result.stderr)
      const identity = result.response!.headers.get('identity')![0]!
      assert.match(identity, /;info=<https:\/\/127\.0\.0\.1:\d+\/certs\/spc\.pem>;alg=ES256;ppt=shaken$/)
      const { payload } = await compactVerify(identity.split(';')[0]!, new X509Certificate(x5u.pki.leaves.spc.cert).publicKey)
      const claimsSigned = JSON.parse(new TextDecoder().decode(payload)) as Record<string, unknown>
      assert.deepEqual([claimsSigned.orig, claimsSigned.dest, claimsSigned.attest, claimsSigned.rcd], [{ tn: '12025550142' }, { tn: ['14155550199'] }, 'A', { nam: 'Acme Carrier' }])
      const verified = await h.service.callVerifier.verify({ origTN: '+12025550142', destTN: DEST, jwt: '', identity })
      assert.equal(verified.success, true, verified.reason)
      assert.equal(result.response!.headers.get('contact')![0], `<sip:${DEST}@127.0.0.1:${port};user=phone>`)
    }
  })

  test('a diverted call (Identity and Diversion): the diverting provider\'s div PASSporT, which extends the chain a verifier accepts', async () => {
    const shaken = shakenIdentity()
    const result = await runSipp(port, { to: NEXT, uriParams: ';user=phone;sti=as', from: caller.phone, headers: [`Identity: ${shaken}`, diversionFrom(DEST)], expect: 302 })
    assert.equal(result.code, 0, result.stderr)
    const div = result.response!.headers.get('identity')![0]!
    assert.match(div, /;ppt=div$/)
    assert.deepEqual([claimsOf(div).orig, claimsOf(div).div, claimsOf(div).dest], [{ tn: caller.phone.slice(1) }, { tn: DEST.slice(1) }, { tn: [NEXT.slice(1)] }])
    assert.equal(result.response!.headers.get('contact')![0], `<sip:${NEXT}@127.0.0.1:${port};user=phone>`, 'the Contact without sti')
    const downstream = await h.service.callVerifier.verify({ origTN: caller.phone, destTN: NEXT, jwt: '', identity: [shaken, div] })
    assert.equal(downstream.success, true, downstream.reason)
    assert.deepEqual(downstream.div?.map((d) => [d.from, d.to, d.trust]), [[DEST, [NEXT], 'x5u']])
  })

  test('diverted a second time: the call\'s chain (shaken and div) verifies to the diverting number, and the new div extends it', async () => {
    const THIRD = '+14155550155'
    const identities = [shakenIdentity(), divIdentity()]
    const result = await runSipp(port, { to: THIRD, uriParams: ';user=phone;sti=as', from: caller.phone,
      headers: [...identities.map((i) => `Identity: ${i}`), diversionFrom(NEXT)], expect: 302 })
    assert.equal(result.code, 0, result.stderr)
    const div = result.response!.headers.get('identity')![0]!
    assert.deepEqual(claimsOf(div).div, { tn: NEXT.slice(1) })
    const downstream = await h.service.callVerifier.verify({ origTN: caller.phone, destTN: THIRD, jwt: '', identity: [...identities, div] })
    assert.equal(downstream.success, true, downstream.reason)
    assert.deepEqual(downstream.div?.map((d) => d.from), [DEST, NEXT])
  })

  test('a div that no verifier would accept is not made: a number diverting the call twice or two from one step (482), more diversions than verifiers check (483)', async () => {
    // DEST -> NEXT -> DEST, then DEST diverts again: a loop.
    const next = await callerNumber(h, { phone: NEXT })
    const looped = [shakenIdentity(), divIdentity(forwarder, NEXT), divIdentity(next, DEST)]
    const loop = await runSipp(port, { to: '+14155550155', uriParams: ';user=phone;sti=as', from: caller.phone,
      headers: [...looped.map((i) => `Identity: ${i}`), diversionFrom(DEST)], expect: 482 })
    assert.equal(loop.code, 0, loop.stderr)
    assert.match(loop.response!.headers.get('warning')![0]!, /a div PASSporT from \+14155550199 would not verify: .*not one chain/)
    // The shaken PASSporT went to DEST and NEXT at once, DEST diverted to NEXT: NEXT diverting
    // too would be a second diversion from one step of the call.
    const forked = [shakenIdentity({ dest: { tn: [DEST.slice(1), NEXT.slice(1)] } }), divIdentity(forwarder, NEXT)]
    const sameStep = await runSipp(port, { to: '+14155550155', uriParams: ';user=phone;sti=as', from: caller.phone,
      headers: [...forked.map((i) => `Identity: ${i}`), diversionFrom(NEXT)], expect: 482 })
    assert.equal(sameStep.code, 0, sameStep.stderr)
    assert.match(sameStep.response!.headers.get('warning')![0]!, /divert from the same step/)
    // Five diversions already (DEST -> 1 -> 2 -> 3 -> 4 -> 5), and 5 diverts once more.
    const hops = ['+14155550161', '+14155550162', '+14155550163', '+14155550164', '+14155550165']
    const numbers = [forwarder, ...await Promise.all(hops.slice(0, 4).map((phone) => callerNumber(h, { phone })))]
    const chain = [shakenIdentity(), ...numbers.map((by, i) => divIdentity(by, hops[i]!))]
    const many = await runSipp(port, { to: '+14155550170', uriParams: ';user=phone;sti=as', from: caller.phone,
      headers: [...chain.map((i) => `Identity: ${i}`), diversionFrom(hops[4]!)], expect: 483 })
    assert.equal(many.code, 0, many.stderr)
    assert.match(many.response!.headers.get('warning')![0]!, /diverted 5 times already/)
  })

  test('a diverted call told by History-Info (RFC 7044) instead of Diversion: the same div PASSporT', async () => {
    const result = await runSipp(port, { to: NEXT, uriParams: ';user=phone;sti=as', from: caller.phone,
      headers: [`Identity: ${shakenIdentity()}`, `History-Info: <sip:${DEST}@127.0.0.1;user=phone>;index=1, <sip:${NEXT}@127.0.0.1;user=phone;cause=302>;index=1.1`], expect: 302 })
    assert.equal(result.code, 0, result.stderr)
    const div = result.response!.headers.get('identity')![0]!
    assert.deepEqual(JSON.parse(Buffer.from(div.split('.')[1]!, 'base64url').toString()).div, { tn: DEST.slice(1) })
  })

  test('a diverted call whose Identity does not verify gets no div PASSporT: the verifier\'s RFC 8224 response and reason instead', async () => {
    const diversion = diversionFrom(DEST)
    const cases: Array<[string, string, number, RegExp]> = [
      ['tampered', shakenIdentity().replace(/\.([\w-]{4})/, '.AAAA'), 438, /does not verify, so no div PASSporT: (MALFORMED_JWT|BAD_SIGNATURE)/],
      ['stale', shakenIdentity({ iat: nowS() - 3600 }), 403, /IAT_TOO_OLD/],
      // Signed for the caller, but not to the number that diverts it: the chain does not reach the Diversion.
      ['to another number', shakenIdentity({}, '+14155550177'), 438, /DEST_MISMATCH/],
    ]
    for (const [name, identity, status, why] of cases) {
      const result = await runSipp(port, { to: NEXT, uriParams: ';user=phone;sti=as', from: caller.phone, headers: [`Identity: ${identity}`, diversion], expect: status })
      assert.equal(result.code, 0, `${name}: ${result.stderr}`)
      assert.equal(result.response!.headers.get('identity'), undefined, name)
      assert.match(result.response!.headers.get('warning')![0]!, why, name)
    }
    // Another caller's PASSporT under this caller's P-Asserted-Identity.
    const other = await runSipp(port, { to: NEXT, uriParams: ';user=phone;sti=as', from: '+12025550142', headers: [`Identity: ${shakenIdentity()}`, diversion], expect: 438 })
    assert.equal(other.code, 0, other.stderr)
    assert.match(other.response!.headers.get('warning')![0]!, /ORIG_MISMATCH/)
  })

  test('a Diversion to the number the call goes to, or to one the call\'s PASSporT listed (the destination did not change): 302 with no div PASSporT (RFC 8946)', async () => {
    const result = await runSipp(port, { to: DEST, uriParams: ';user=phone;sti=as', from: caller.phone,
      headers: [`Identity: ${shakenIdentity()}`, `Diversion: <sip:${DEST}@127.0.0.1;user=phone>;reason=unconditional;counter=1`], expect: 302 })
    assert.equal(result.code, 0, result.stderr)
    assert.equal(result.response!.headers.get('identity'), undefined)
    assert.equal(result.response!.headers.get('contact')![0], `<sip:${DEST}@127.0.0.1:${port};user=phone>`)
    assert.match(result.response!.headers.get('warning')![0]!, /the destination did not change/)
    // The call's PASSporT went to DEST and NEXT at once: DEST sending it on to NEXT changes nothing.
    const listed = await runSipp(port, { to: NEXT, uriParams: ';user=phone;sti=as', from: caller.phone,
      headers: [`Identity: ${shakenIdentity({ dest: { tn: [DEST.slice(1), NEXT.slice(1)] } })}`, diversionFrom(DEST)], expect: 302 })
    assert.equal(listed.code, 0, listed.stderr)
    assert.equal(listed.response!.headers.get('identity'), undefined)
    assert.match(listed.response!.headers.get('warning')![0]!, /the destination did not change/)
  })

  test('the mode is the URI parameter sti (any case), never a user part that has the same text; the Contact drops only the parameter', async () => {
    // Without Identity an INVITE is signed unless told: STI=VS (upper case) asks verification.
    const result = await runSipp(port, { to: `${DEST};sti=as`, uriParams: ';user=phone;STI=VS;x=1', from: '+12025550142', expect: 302 })
    assert.equal(result.code, 0, result.stderr)
    assert.equal(result.response!.headers.get('identity'), undefined)
    assert.equal(verstatOf(result.response!.headers.get('p-asserted-identity')?.[0]), 'No-TN-Validation')
    assert.match(result.response!.headers.get('contact')![0]!, new RegExp(`^<sip:\\${DEST};sti=as@127\\.0\\.0\\.1:${port};user=phone;x=1\\?P-Asserted-Identity=`))
  })

  test('without Attestation-Info the claim is C, the least', async () => {
    const result = await runSipp(port, { to: DEST, uriParams: ';user=phone', from: '+12025550142', expect: 302 })
    assert.equal(result.code, 0, result.stderr)
    assert.equal(JSON.parse(Buffer.from(result.response!.headers.get('identity')![0]!.split('.')[1]!, 'base64url').toString()).attest, 'C')
  })

  test('refused with a reason: a number the signing key may not sign for (403), an attestation that is no level (400)', async () => {
    const outside = await runSipp(port, { to: DEST, uriParams: ';user=phone', from: '+19995550000', expect: 403 })
    assert.equal(outside.code, 0, outside.stderr)
    assert.match(outside.response!.headers.get('warning')![0]!, /^399 kns "this API key may not sign for \+19995550000"$/)
    const badAttest = await runSipp(port, { to: DEST, uriParams: ';user=phone', from: '+12025550142', headers: ['Attestation-Info: Z'], expect: 400 })
    assert.equal(badAttest.code, 0, badAttest.stderr)
  })

  test('without SIP_SIGNING_KEY nothing is signed', async () => {
    const unsigned = await startSip({})
    try {
      const result = await runSipp(unsigned.address.udp!, { to: DEST, uriParams: ';user=phone', from: '+12025550142', expect: 403 })
      assert.equal(result.code, 0, result.stderr)
      assert.match(result.response!.headers.get('warning')![0]!, /signs nothing/)
    } finally {
      await unsigned.close()
    }
  })
})

