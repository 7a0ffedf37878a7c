/**
 * RFC 8224 6.1 for the STI-AS: a signing key signs only with the credentials it is bound to,
 * claiming only its attestation levels, for numbers those credentials (and its own number
 * list) cover; whatever it signs, our own verifier accepts. Tried as an attacker would.
 */
import { after, before, describe, test } from 'node:test'
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { addCredential } from '../../src/caller/shaken/credentials.ts'
import { bindingCoversNumber, parseSigningBinding, type SigningBinding } from '../../src/keys/api-keys.ts'
import { SealedBox } from '../../src/lib/sealed-box.ts'
import { startHarness, type Harness } from '../helpers.ts'
import { assertError } from '../support/kns.ts'
import { TEST_RANGE, type LeafKind } from '../support/shaken-pki.ts'
import { startX5uServer, type X5uServer } from '../support/x5u-server.ts'

let x5u: X5uServer
let h: Harness
let verifier: string
const IN_RANGE = `${BigInt(TEST_RANGE.start) + 50n}`
const OUTSIDE = '19995550000'
const DEST = '14155550199'

before(async () => {
  x5u = await startX5uServer()
  h = await startHarness({ STI_TRUST_ANCHORS: `${x5u.pki.dir}/root.pem`, X5U_ALLOW_PRIVATE: 'true', STI_CRL: 'off' }, { x5uTlsCa: x5u.pki.tls.ca })
  verifier = await h.key({ scopes: ['caller'] })
  const box = new SealedBox(h.service.secret, 'shaken-credentials')
  const add = (name: string, kind: LeafKind, displayName?: string) => addCredential(h.service.db, box,
    { name, keyPem: x5u.pki.leaves[kind].key, chainPem: x5u.pki.leaves[kind].bundle, x5u: x5u.certUrl(kind), ...(displayName === undefined ? {} : { displayName }) },
    { allowPrivate: true, allowHttp: false })
  await add('carrier', 'spc') // SPC 1234: the carrier's numbers
  await add('carrier-two', 'spc') // the same SPC under another name
  await add('delegate', 'range', 'Acme Bank') // 100 numbers from +1 202 555 0100, a branded enterprise
  await add('rival', 'rangeUnderRangeCa') // another carrier's 10 numbers
  h.service.shakenCredentials.invalidate()
})
after(async () => {
  await h?.close()
  await x5u?.close()
})

const bound = (credentials: string[], extra: Partial<SigningBinding> = {}) =>
  h.key({ scopes: ['signing'], signing: { credentials, attest: ['A', 'B', 'C'], numbers: null, ...extra } })

function request(orig: string, overrides: Record<string, unknown> = {}) {
  return { signingRequest: { orig: { tn: orig }, dest: { tn: [DEST] }, attest: 'A', iat: Math.floor(Date.now() / 1000), origid: randomUUID(), ...overrides } }
}
const sign = (key: string, body: unknown) => h.app.inject({ method: 'POST', url: '/stir/v1/signing', headers: { 'x-api-key': key }, payload: body as object })
const identityOf = (res: { json(): unknown }) => (res.json() as { signingResponse: { identity: string } }).signingResponse.identity
const payloadOf = (identity: string) => JSON.parse(Buffer.from(identity.split('.')[1]!, 'base64url').toString()) as Record<string, unknown>

async function verify(origTN: string, destTN: string, identity: string | string[]) {
  const res = await h.app.inject({ method: 'POST', url: '/numsys/call-signature-verification', headers: { 'x-api-key': verifier },
    payload: { origTN: `+${origTN}`, destTN: `+${destTN}`, identity, debug: true } })
  assert.equal(res.statusCode, 200, res.body)
  return res.json() as { success: boolean; rcd?: { nam: string; integrity: boolean }; div?: unknown[]; debug: { reason?: string } }
}

describe('the attack of the report: signing what the key is not authoritative for', () => {
  test('a key bound to a one-range credential cannot sign 19995550000 with attestation A, by default or naming it', async () => {
    const key = await bound(['delegate'])
    assertError(await sign(key, request(OUTSIDE)), 403, 'FORBIDDEN', 'signingRequest.orig.tn')
    assertError(await sign(key, request(OUTSIDE, { credential: 'delegate' })), 403, 'FORBIDDEN', 'signingRequest.orig.tn')
    const inside = await sign(key, request(IN_RANGE))
    assert.equal(inside.statusCode, 200, inside.body)
  })

  test('nor under another carrier\'s credential: a credential the key is not bound to is refused, existing or not', async () => {
    const key = await bound(['delegate'])
    assertError(await sign(key, request(IN_RANGE, { credential: 'carrier' })), 403, 'FORBIDDEN', 'signingRequest.credential')
    assertError(await sign(key, request(IN_RANGE, { credential: 'no-such' })), 403, 'FORBIDDEN', 'signingRequest.credential')
  })

  test('a signing key bound to no credential signs nothing', async () => {
    const unbound = await h.key({ scopes: ['signing'] })
    const res = await sign(unbound, request(IN_RANGE))
    assertError(res, 403, 'FORBIDDEN')
    assert.match(res.json().message, /signs nothing/)
  })

  test('whatever a key signs, our verifier accepts: no header it issues fails with 437 (TN_NOT_AUTHORIZED)', async () => {
    const key = await bound(['carrier', 'delegate', 'rival'])
    const numbers = [IN_RANGE, `${BigInt(TEST_RANGE.start) + 40n}`, `${BigInt(TEST_RANGE.start) + 99n}`, `${BigInt(TEST_RANGE.start) + 100n}`, OUTSIDE]
    for (const orig of numbers) {
      for (const credential of ['delegate', 'rival']) {
        const res = await sign(key, request(orig, { credential }))
        if (res.statusCode !== 200) {
          assertError(res, 403, 'FORBIDDEN')
          continue
        }
        const answer = await verify(orig, DEST, identityOf(res))
        assert.equal(answer.success, true, `${credential} signed ${orig}: ${answer.debug.reason}`)
      }
    }
  })
})

describe('what a key is bound to', () => {
  test('attestation levels: a key for C only cannot claim A or B', async () => {
    const key = await bound(['carrier'], { attest: ['C'] })
    assertError(await sign(key, request('12025550142')), 403, 'FORBIDDEN', 'signingRequest.attest')
    assertError(await sign(key, request('12025550142', { attest: 'B' })), 403, 'FORBIDDEN', 'signingRequest.attest')
    const c = await sign(key, request('12025550142', { attest: 'C' }))
    assert.equal(c.statusCode, 200, c.body)
    assert.equal(payloadOf(identityOf(c)).attest, 'C')
  })

  test('numbers: an SPC credential covers the carrier\'s numbers; the key\'s own list narrows them', async () => {
    const key = await bound(['carrier'], { numbers: ['+1202555*', '+14155550100'] })
    assert.equal((await sign(key, request('12025550142'))).statusCode, 200)
    assert.equal((await sign(key, request('14155550100'))).statusCode, 200)
    assertError(await sign(key, request('14155550101')), 403, 'FORBIDDEN', 'signingRequest.orig.tn')
  })

  test('numbers: +1202555* covers the numbers that extend the prefix, not +1202555 itself (issue 31)', async () => {
    const key = await bound(['carrier'], { numbers: ['+1202555*'] })
    assert.equal((await sign(key, request('12025550142'))).statusCode, 200)
    assert.equal((await sign(key, request('12025551'))).statusCode, 200, 'one digit more')
    assertError(await sign(key, request('1202555')), 403, 'FORBIDDEN', 'signingRequest.orig.tn')
    const binding = parseSigningBinding({ credentials: 'carrier', numbers: '+1202555*,+14155550100' })
    assert.equal(bindingCoversNumber(binding, '1202555'), false)
    assert.equal(bindingCoversNumber(binding, '120255'), false)
    assert.equal(bindingCoversNumber(binding, '12025550'), true)
    assert.equal(bindingCoversNumber(binding, '14155550100'), true)
    // A 15-digit prefix: no E.164 number extends it, so it is refused rather than matching nothing.
    assert.throws(() => parseSigningBinding({ credentials: 'carrier', numbers: '+120255501420000*' }), /not an E.164 number or a prefix/)
    assert.doesNotThrow(() => parseSigningBinding({ credentials: 'carrier', numbers: '+12025550142000*' }))
  })

  test('without credential named: the TN-listing credential before the SPC one; two alike: name one', async () => {
    const key = await bound(['carrier', 'delegate'])
    const inRange = await sign(key, request(IN_RANGE))
    assert.match(identityOf(inRange), new RegExp(`info=<${x5u.certUrl('range').replace(/[.]/g, '\\.')}>`))
    const elsewhere = await sign(key, request('14155550100'))
    assert.match(identityOf(elsewhere), /certs\/spc\.pem/)
    const twoSpc = await bound(['carrier', 'carrier-two'])
    assertError(await sign(twoSpc, request('14155550100')), 400, 'INVALID_REQUEST', 'signingRequest.credential')
    assert.equal((await sign(twoSpc, request('14155550100', { credential: 'carrier-two' }))).statusCode, 200)
  })
})

describe('div PASSporTs and caller names', () => {
  test('a diverting provider signs a div PASSporT for the number it diverts from; the forwarded call verifies', async () => {
    const originating = await bound(['carrier'])
    const diverting = await bound(['delegate'])
    const shaken = identityOf(await sign(originating, request('14155550100', { dest: { tn: [IN_RANGE] } })))
    const res = await sign(diverting, { signingRequest: { ppt: 'div', orig: { tn: '14155550100' }, div: { tn: IN_RANGE }, dest: { tn: ['14155550123'] }, iat: Math.floor(Date.now() / 1000), identity: shaken } })
    assert.equal(res.statusCode, 200, res.body)
    const div = identityOf(res)
    assert.match(div, /;ppt=div$/)
    assert.deepEqual(Object.keys(payloadOf(div)), ['dest', 'div', 'iat', 'orig'])
    const answer = await verify('14155550100', '14155550123', [div, shaken])
    assert.equal(answer.success, true, answer.debug.reason)
    assert.equal(answer.div!.length, 1)
  })

  test('div: the credential must cover the diverting number; div needs ppt div and div.tn', async () => {
    const diverting = await bound(['delegate'])
    const body = (over: Record<string, unknown>) => ({ signingRequest: { ppt: 'div', orig: { tn: '14155550100' }, div: { tn: OUTSIDE }, dest: { tn: ['14155550123'] }, iat: Math.floor(Date.now() / 1000), identity: 'a.b.c', ...over } })
    assertError(await sign(diverting, body({})), 403, 'FORBIDDEN', 'signingRequest.div.tn')
    assertError(await sign(diverting, body({ div: undefined })), 400, 'INVALID_REQUEST', 'signingRequest.div')
    assertError(await sign(diverting, body({ ppt: undefined, attest: 'A', origid: randomUUID(), div: { tn: IN_RANGE } })), 400, 'INVALID_REQUEST', 'signingRequest.div')
    assertError(await sign(diverting, request(IN_RANGE, { attest: undefined })), 400, 'INVALID_REQUEST', 'signingRequest.attest')
    assertError(await sign(diverting, request(IN_RANGE, { identity: 'a.b.c' })), 400, 'INVALID_REQUEST', 'signingRequest.identity')
  })

  test('div over HTTP follows the SIP rule: only on top of the call\'s own Identity, verified from orig to div.tn (issue 31)', async () => {
    const originating = await bound(['carrier'])
    const diverting = await bound(['delegate'])
    const shaken = identityOf(await sign(originating, request('14155550100', { dest: { tn: [IN_RANGE] } })))
    const div = (over: Record<string, unknown>) => sign(diverting, { signingRequest: { ppt: 'div', orig: { tn: '14155550100' }, div: { tn: IN_RANGE }, dest: { tn: ['14155550123'] }, iat: Math.floor(Date.now() / 1000), ...over } })
    // The report's case: a div for any orig without the call's Identity. Refused, nothing signed.
    const without = await div({})
    assertError(without, 400, 'INVALID_REQUEST', 'signingRequest.identity')
    assert.match(without.json().message, /verified Identity/)
    // A call from another number, or to another destination than the diverting one, or tampered: 403.
    assertError(await div({ orig: { tn: '14155550101' }, identity: shaken }), 403, 'FORBIDDEN', 'signingRequest.identity')
    const elsewhere = identityOf(await sign(originating, request('14155550100', { dest: { tn: [DEST] } })))
    assertError(await div({ identity: elsewhere }), 403, 'FORBIDDEN', 'signingRequest.identity')
    assertError(await div({ identity: shaken.replace(/\.([\w-]{4})/, '.AAAA') }), 403, 'FORBIDDEN', 'signingRequest.identity')
    assertError(await div({ identity: 'not a header' }), 403, 'FORBIDDEN', 'signingRequest.identity')
    // The destination did not change (the diverting number itself, or one the call already listed): 400.
    assertError(await div({ identity: shaken, dest: { tn: [IN_RANGE] } }), 400, 'INVALID_REQUEST', 'signingRequest.dest')
    const listed = identityOf(await sign(originating, request('14155550100', { dest: { tn: [IN_RANGE, '14155550123'] } })))
    assertError(await div({ identity: listed }), 400, 'INVALID_REQUEST', 'signingRequest.dest')
    // The same call, its Identity given as a list: signed, and the chain verifies.
    const ok = await div({ identity: [shaken] })
    assert.equal(ok.statusCode, 200, ok.body)
    const answer = await verify('14155550100', '14155550123', [identityOf(ok), shaken])
    assert.equal(answer.success, true, answer.debug.reason)
  })

  test('a credential configured with a display name signs it as rcd nam; the verifier returns it', async () => {
    const key = await bound(['delegate'])
    const identity = identityOf(await sign(key, request(IN_RANGE)))
    assert.deepEqual(payloadOf(identity).rcd, { nam: 'Acme Bank' })
    const answer = await verify(IN_RANGE, DEST, identity)
    assert.equal(answer.success, true, answer.debug.reason)
    assert.deepEqual(answer.rcd, { nam: 'Acme Bank', integrity: false })
    const plain = identityOf(await sign(await bound(['carrier']), request('12025550142')))
    assert.equal(payloadOf(plain).rcd, undefined)
    // With B or C the signer does not vouch the caller may use the number: no name beside it.
    const partial = identityOf(await sign(key, request(IN_RANGE, { attest: 'B' })))
    assert.equal(payloadOf(partial).rcd, undefined)
  })

  test('an expired credential signs nothing, named or chosen', async () => {
    await addCredential(h.service.db, new SealedBox(h.service.secret, 'shaken-credentials'),
      { name: 'old', keyPem: x5u.pki.leaves.expired.key, chainPem: x5u.pki.leaves.expired.bundle, x5u: x5u.certUrl('expired') }, { allowPrivate: true, allowHttp: false })
    h.service.shakenCredentials.invalidate()
    const key = await bound(['old'])
    const named = await sign(key, request('12025550142', { credential: 'old' }))
    assertError(named, 403, 'FORBIDDEN', 'signingRequest.credential')
    assert.match(named.json().message, /has expired/)
    assertError(await sign(key, request('12025550142')), 403, 'FORBIDDEN', 'signingRequest.orig.tn')
  })
})
