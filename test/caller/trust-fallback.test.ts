/**
 * CALLER_TRUST=ledger,x5u: a PASSporT without kid whose x5u cannot decide (a placeholder URL,
 * an unreachable or untrusted certificate, or a certificate whose key did not sign) is tried
 * with the ledger keys of origTN, and the answer says which source decided.
 */
import { after, before, describe, test } from 'node:test'
import assert from 'node:assert/strict'
import { startHarness, type Harness } from '../helpers.ts'
import { callerNumber, claims, randomPhone, shakenHeader, signRaw, type CallerNumber } from '../support/caller.ts'
import { startX5uServer, type X5uServer } from '../support/x5u-server.ts'
import { createPrivateKey } from 'node:crypto'

let x5u: X5uServer
let h: Harness
let key: string
let num: CallerNumber
const DEST = '+14155550199'
const PLACEHOLDER = 'https://cert.example/sp.pem'

before(async () => {
  x5u = await startX5uServer()
  h = await startHarness({ STI_TRUST_ANCHORS: `${x5u.pki.dir}/root.pem`, X5U_ALLOW_PRIVATE: 'true', CALLER_TRUST: 'ledger,x5u' }, { x5uTlsCa: x5u.pki.tls.ca })
  key = await h.key({ scopes: ['caller'] })
  num = await callerNumber(h)
})
after(async () => {
  await h?.close()
  await x5u?.close()
})

interface Answer { success: boolean; trust?: string; debug: { reason?: string; steps: Array<{ name: string; ok: boolean; detail?: string }> } }

async function verify(jwt: string, origTN = num.phone, harness = h, apiKey = key): Promise<Answer> {
  const res = await harness.app.inject({ method: 'POST', url: '/numsys/call-signature-verification', headers: { 'x-api-key': apiKey }, payload: { origTN, destTN: DEST, jwt, debug: true } })
  assert.equal(res.statusCode, 200, res.body)
  return res.json()
}

const ledgerSigned = (x5uUrl: string, header: Record<string, unknown> = {}, orig = num.phone) =>
  signRaw(shakenHeader(undefined, { x5u: x5uUrl, ...header }), claims(orig, DEST), num.signers[0]!.privateKey)
const stepNames = (a: Answer) => a.debug.steps.map((s) => `${s.name}:${s.ok ? 'ok' : 'fail'}`)

describe('an x5u that cannot decide hands over to the ledger keys of origTN', () => {
  test('the placeholder x5u key-based signers put there: verified by the ledger, trust ledger', async () => {
    const answer = await verify(ledgerSigned(PLACEHOLDER))
    assert.equal(answer.success, true, answer.debug.reason)
    assert.equal(answer.trust, 'ledger')
    assert.deepEqual(stepNames(answer), ['check_jws_format:ok', 'check_header:ok', 'check_claims:ok', 'fetch_certificate:fail', 'resolve_keys:ok', 'verify_signature:ok'])
    assert.match(answer.debug.steps.find((s) => s.name === 'fetch_certificate')!.detail!, /ledger keys .* tried next/)
  })

  test('an untrusted certificate, and a trusted one whose key did not sign: the ledger decides', async () => {
    const untrusted = await verify(ledgerSigned(x5u.certUrl('untrusted')))
    assert.equal(untrusted.success, true, untrusted.debug.reason)
    assert.equal(untrusted.trust, 'ledger')
    assert.ok(stepNames(untrusted).includes('check_certificate_chain:fail'))
    const otherKey = await verify(ledgerSigned(x5u.certUrl('spc')))
    assert.equal(otherKey.success, true, otherKey.debug.reason)
    assert.equal(otherKey.trust, 'ledger')
    assert.deepEqual(stepNames(otherKey).slice(3), ['fetch_certificate:ok', 'check_certificate_chain:ok', 'check_certificate_policy:ok',
      'check_tn_authorization:ok', 'check_revocation:ok', 'verify_signature:fail', 'resolve_keys:ok', 'verify_signature:ok'])
  })

  test('a certificate that verifies decides alone: trust x5u, the ledger not asked', async () => {
    const jwt = signRaw(shakenHeader(undefined, { x5u: x5u.certUrl('spc') }), claims(num.phone, DEST), createPrivateKey(x5u.pki.leaves.spc.key))
    const answer = await verify(jwt)
    assert.equal(answer.success, true, answer.debug.reason)
    assert.equal(answer.trust, 'x5u')
    assert.ok(!stepNames(answer).some((s) => s.startsWith('resolve_keys')))
  })

  test('neither decides: the x5u\'s failure is reported when the ledger has nothing for the number', async () => {
    const stranger = randomPhone()
    const answer = await verify(ledgerSigned(PLACEHOLDER, {}, stranger), stranger)
    assert.equal(answer.success, false)
    assert.match(answer.debug.reason!, /^X5U_FETCH_FAILED/)
    assert.deepEqual(stepNames(answer).slice(3), ['fetch_certificate:fail', 'resolve_keys:fail'])
  })

  test('neither decides: the number has keys, none signed: the first source\'s failure, both tried', async () => {
    const forged = signRaw(shakenHeader(undefined, { x5u: x5u.certUrl('spc') }), claims(num.phone, DEST), createPrivateKey(x5u.pki.leaves.range.key))
    const answer = await verify(forged)
    assert.equal(answer.success, false)
    assert.match(answer.debug.reason!, /^BAD_SIGNATURE: signature does not verify with the x5u certificate's key/)
    assert.deepEqual(stepNames(answer).slice(-3), ['verify_signature:fail', 'resolve_keys:ok', 'verify_signature:fail'])
  })

  test('a kid names a ledger key: the ledger first, no certificate fetched', async () => {
    const before = x5u.served
    const jwt = signRaw(shakenHeader(num.signers[0]!.keyId, { x5u: x5u.certUrl('spc') }), claims(num.phone, DEST), num.signers[0]!.privateKey)
    const answer = await verify(jwt)
    assert.equal(answer.success, true, answer.debug.reason)
    assert.equal(answer.trust, 'ledger')
    assert.equal(x5u.served, before)
  })

  test('CALLER_TRUST=x5u: no ledger to hand over to, the x5u\'s failure stands', async () => {
    const x5uOnly = await startHarness({ STI_TRUST_ANCHORS: `${x5u.pki.dir}/root.pem`, X5U_ALLOW_PRIVATE: 'true', CALLER_TRUST: 'x5u' }, { x5uTlsCa: x5u.pki.tls.ca })
    try {
      const other = await callerNumber(x5uOnly)
      const jwt = signRaw(shakenHeader(undefined, { x5u: PLACEHOLDER }), claims(other.phone, DEST), other.signers[0]!.privateKey)
      const answer = await verify(jwt, other.phone, x5uOnly, await x5uOnly.key({ scopes: ['caller'] }))
      assert.match(answer.debug.reason!, /^X5U_FETCH_FAILED/)
      assert.ok(!stepNames(answer).some((s) => s.startsWith('resolve_keys')))
    } finally {
      await x5uOnly.close()
    }
  })
})
