/**
 * Diverted calls (RFC 8946): the shaken PASSporT and one div PASSporT per diversion, given as
 * several Identity headers in any order; each link checked, each check failing alone; chains
 * of 1, 2 and more than the bound; the ATIS-1000082 interface takes the list too.
 */
import { after, before, describe, test } from 'node:test'
import assert from 'node:assert/strict'
import { createPrivateKey, type KeyObject } from 'node:crypto'
import { startHarness, type Harness } from '../helpers.ts'
import { b64json, callerNumber, claims, nowS, randomPhone, shakenHeader, signRaw, type CallerNumber } from '../support/caller.ts'
import { startX5uServer, type X5uServer } from '../support/x5u-server.ts'
import { TEST_RANGE } from '../support/shaken-pki.ts'

let h: Harness
let key: string
let x5u: X5uServer
/** The caller, then the numbers the call goes through. */
let a: CallerNumber, b: CallerNumber, c: CallerNumber, d: CallerNumber

before(async () => {
  x5u = await startX5uServer()
  h = await startHarness({ STI_TRUST_ANCHORS: `${x5u.pki.dir}/root.pem`, X5U_ALLOW_PRIVATE: 'true' }, { x5uTlsCa: x5u.pki.tls.ca })
  key = await h.key({ scopes: ['caller'] })
  ;[a, b, c, d] = [await callerNumber(h), await callerNumber(h), await callerNumber(h), await callerNumber(h)]
})
after(async () => {
  await h?.close()
  await x5u?.close()
})

const digits = (phone: string) => phone.slice(1)
const identity = (jwt: string, ppt = 'shaken') => `${jwt};ppt=${ppt}`

function shaken(to: string, overrides: Record<string, unknown> = {}): string {
  return identity(signRaw(shakenHeader(a.signers[0]!.keyId), claims(a.phone, to, overrides), a.signers[0]!.privateKey))
}

/** A div PASSporT as the diverting provider signs it: orig kept, div the number diverted from, dest the new one. */
function div(from: CallerNumber | string, to: string, options: { signer?: KeyObject; kid?: string | null; x5u?: string; payload?: Record<string, unknown> } = {}): string {
  const fromPhone = typeof from === 'string' ? from : from.phone
  const signer = options.signer ?? (from as CallerNumber).signers[0]!.privateKey
  const kid = options.kid === undefined ? (from as CallerNumber).signers?.[0]?.keyId : options.kid
  const header = { alg: 'ES256', ppt: 'div', typ: 'passport', ...(kid === null || kid === undefined ? {} : { kid }), ...(options.x5u === undefined ? {} : { x5u: options.x5u }) }
  const payload = { dest: { tn: [digits(to)] }, div: { tn: digits(fromPhone) }, iat: nowS(), orig: { tn: digits(a.phone) }, ...options.payload }
  const jwt = signRaw(header, payload, signer)
  return options.x5u === undefined ? identity(jwt, 'div') : `${jwt};info=<${options.x5u}>;alg=ES256;ppt=div`
}

interface Answer {
  success: boolean; verstat: string; trust?: string; div?: Array<{ from: string; to: string[]; trust: string; spc?: string }>
  debug: { reason?: string; steps: Array<{ name: string; ok: boolean; detail?: string }> }
}

async function verify(identityHeaders: string | string[], destTN: string): Promise<Answer> {
  const res = await h.app.inject({ method: 'POST', url: '/numsys/call-signature-verification', headers: { 'x-api-key': key }, payload: { origTN: a.phone, destTN, identity: identityHeaders, debug: true } })
  assert.equal(res.statusCode, 200, res.body)
  return res.json()
}

const codeOf = (answer: Answer) => answer.debug.reason?.split(':')[0]

describe('a diverted call verifies link by link', () => {
  test('the forwarded call a single-PASSporT verifier fails (DEST_MISMATCH) verifies with its div PASSporT', async () => {
    assert.equal(codeOf(await verify(shaken(b.phone), c.phone)), 'DEST_MISMATCH')
    const answer = await verify([shaken(b.phone), div(b, c.phone)], c.phone)
    assert.equal(answer.success, true, answer.debug.reason)
    assert.equal(answer.verstat, 'TN-Validation-Passed')
    assert.deepEqual(answer.div, [{ from: b.phone, to: [c.phone], trust: 'ledger' }])
    const names = answer.debug.steps.map((s) => s.name)
    assert.deepEqual(names.slice(0, 2), ['parse_identity_header', 'check_diversion_chain'])
    assert.ok(names.includes('div[1].verify_signature'))
    assert.match(answer.debug.steps[1]!.detail!, new RegExp(`\\${a.phone} -> \\${b.phone} -> \\${c.phone}`))
  })

  test('two diversions, the headers in any order: reported in the order the call took them', async () => {
    const answer = await verify([div(c, d.phone), shaken(b.phone), div(b, c.phone)], d.phone)
    assert.equal(answer.success, true, answer.debug.reason)
    assert.deepEqual(answer.div!.map((l) => [l.from, l.to]), [[b.phone, [c.phone]], [c.phone, [d.phone]]])
  })

  test('a diverting provider vouched for by its certificate: TNAuthList covering the diverting number, or not', async () => {
    const covered = `+${BigInt(TEST_RANGE.start) + 5n}`
    const leaf = createPrivateKey(x5u.pki.leaves.range.key)
    const good = await verify([shaken(covered), div(covered, c.phone, { signer: leaf, kid: null, x5u: x5u.certUrl('range') })], c.phone)
    assert.equal(good.success, true, good.debug.reason)
    assert.equal(good.div![0]!.trust, 'x5u')
    const outside = randomPhone()
    const bad = await verify([shaken(outside), div(outside, c.phone, { signer: leaf, kid: null, x5u: x5u.certUrl('range') })], c.phone)
    assert.equal(codeOf(bad), 'TN_NOT_AUTHORIZED')
    assert.match(bad.debug.reason!, /div 1 \(from \+\d+\): the leaf's TNAuthList does not cover/)
  })

  test('at most 5 diversions: a chain of 6 is refused before any signature is checked', async () => {
    const hops = [b.phone, ...Array.from({ length: 6 }, () => randomPhone())]
    const links = hops.slice(0, 6).map((from, i) => div(from, hops[i + 1]!, { signer: a.signers[0]!.privateKey, kid: null }))
    const answer = await verify([shaken(b.phone), ...links], hops[6]!)
    assert.equal(codeOf(answer), 'DIV_TOO_MANY')
    assert.equal(answer.debug.steps.length, 1, 'refused at the parse: 7 Identity headers')
  })
})

describe('each check of a diversion fails alone', () => {
  const cases: Array<[string, () => { headers: string[]; dest: string }, string]> = [
    ['signed by another key than the diverting number\'s', () => ({ headers: [shaken(b.phone), div(b, c.phone, { signer: c.signers[0]!.privateKey, kid: null })], dest: c.phone }), 'BAD_SIGNATURE'],
    ['naming a key of another number', () => ({ headers: [shaken(b.phone), div(b, c.phone, { signer: c.signers[0]!.privateKey, kid: c.signers[0]!.keyId })], dest: c.phone }), 'KEY_NOT_FOUND'],
    ['another caller in orig', () => ({ headers: [shaken(b.phone), div(b, c.phone, { payload: { orig: { tn: digits(d.phone) } } })], dest: c.phone }), 'ORIG_MISMATCH'],
    ['diverting from a number the call was not sent to', () => ({ headers: [shaken(b.phone), div(d, c.phone)], dest: c.phone }), 'DIV_CHAIN_BROKEN'],
    ['the last dest is not the called number', () => ({ headers: [shaken(b.phone), div(b, c.phone)], dest: d.phone }), 'DEST_MISMATCH'],
    ['stale', () => ({ headers: [shaken(b.phone), div(b, c.phone, { payload: { iat: nowS() - 3600 } })], dest: c.phone }), 'IAT_TOO_OLD'],
    ['no div claim', () => ({ headers: [shaken(b.phone), div(b, c.phone, { payload: { div: undefined } })], dest: c.phone }), 'BAD_DIV'],
    ['two diversions from the same number', () => ({ headers: [shaken(b.phone), div(b, c.phone), div(b, d.phone)], dest: c.phone }), 'DIV_CHAIN_BROKEN'],
    ['a loop back through the same number', () => ({ headers: [shaken(b.phone), div(b, c.phone), div(c, b.phone), div(b, d.phone)], dest: d.phone }), 'DIV_CHAIN_BROKEN'],
    ['two shaken PASSporTs', () => ({ headers: [shaken(b.phone), shaken(c.phone)], dest: c.phone }), 'DIV_CHAIN_BROKEN'],
    ['a div PASSporT alone', () => ({ headers: [div(b, c.phone)], dest: c.phone }), 'BAD_PPT'],
    ['tampered after signing', () => {
      const [h64, , s64] = div(b, c.phone).split(';')[0]!.split('.')
      const forged = b64json({ dest: { tn: [digits(d.phone)] }, div: { tn: digits(b.phone) }, iat: nowS(), orig: { tn: digits(a.phone) } })
      return { headers: [shaken(b.phone), `${h64}.${forged}.${s64};ppt=div`], dest: d.phone }
    }, 'BAD_SIGNATURE'],
    ['its Identity header says another ppt', () => ({ headers: [shaken(b.phone), div(b, c.phone).replace(';ppt=div', ';ppt=shaken')], dest: c.phone }), 'BAD_IDENTITY_HEADER'],
    ['the shaken PASSporT itself forged', () => ({ headers: [signRaw(shakenHeader(a.signers[0]!.keyId), claims(a.phone, b.phone), d.signers[0]!.privateKey), div(b, c.phone)], dest: c.phone }), 'BAD_SIGNATURE'],
  ]
  for (const [name, make, code] of cases) {
    test(`${name}: ${code}`, async () => {
      const { headers, dest } = make()
      const answer = await verify(headers, dest)
      assert.equal(answer.success, false)
      assert.equal(codeOf(answer), code, answer.debug.reason)
      // A lone div PASSporT is no SHAKEN PASSporT: nothing was validated (ATIS-1000074).
      assert.equal(answer.verstat, code === 'BAD_PPT' ? 'No-TN-Validation' : 'TN-Validation-Failed')
      assert.equal(answer.div, undefined)
    })
  }
})

describe('ATIS-1000082 verification takes several Identity headers', () => {
  test('identity as a list: verstat passed for the forwarded call, failed when a link is forged', async () => {
    const ask = (identityValue: string[]) => h.app.inject({
      method: 'POST', url: '/stir/v1/verification', headers: { 'x-api-key': key },
      payload: { verificationRequest: { from: { tn: digits(a.phone) }, to: { tn: [digits(c.phone)] }, time: nowS(), identity: identityValue } },
    })
    const good = await ask([shaken(b.phone), div(b, c.phone)])
    assert.equal(good.statusCode, 200, good.body)
    assert.deepEqual(good.json(), { verificationResponse: { verstat: 'TN-Validation-Passed' } })
    const bad = await ask([shaken(b.phone), div(b, c.phone, { signer: d.signers[0]!.privateKey, kid: null })])
    assert.deepEqual(bad.json(), { verificationResponse: { verstat: 'TN-Validation-Failed', reasoncode: 438, reasontext: 'Invalid Identity Header' } })
    const tooMany = await ask(Array.from({ length: 11 }, () => shaken(b.phone)))
    assert.equal(tooMany.statusCode, 400)
  })
})
