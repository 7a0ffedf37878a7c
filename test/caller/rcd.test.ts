/**
 * Caller names (RFC 9795 rcd with rcdi integrity) in a verified PASSporT: returned only when
 * the PASSporT verifies; a jCard fetched from jcl through the guarded client and checked
 * against its digest; each check failing alone (the call stays verified, its rcd is dropped).
 */
import { after, before, describe, test } from 'node:test'
import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
import { startHarness, type Harness } from '../helpers.ts'
import { callerNumber, claims, shakenHeader, signRaw, type CallerNumber } from '../support/caller.ts'
import { startX5uServer, type X5uServer } from '../support/x5u-server.ts'

let x5u: X5uServer
let h: Harness
let key: string
let num: CallerNumber
const DEST = '+14155550199'
const JCARD = JSON.stringify(['vcard', [['version', {}, 'text', '4.0'], ['fn', {}, 'text', 'Acme Bank'], ['logo', {}, 'uri', 'https://example.com/logo.png']]])
const sri = (alg: 'sha256' | 'sha384', body: string | Buffer) => `${alg}-${createHash(alg).update(body).digest('base64')}`

before(async () => {
  x5u = await startX5uServer()
  x5u.documents.set('/acme.json', JCARD)
  x5u.documents.set('/icon.png', Buffer.from('not really a PNG, bytes all the same'))
  h = await startHarness({ STI_TRUST_ANCHORS: `${x5u.pki.dir}/root.pem`, X5U_ALLOW_PRIVATE: 'true' }, { x5uTlsCa: x5u.pki.tls.ca })
  key = await h.key({ scopes: ['caller'] })
  num = await callerNumber(h)
})
after(async () => {
  await h?.close()
  await x5u?.close()
})

interface Answer {
  success: boolean; rcd?: Record<string, unknown>; rcdFailure?: string
  debug: { reason?: string; steps: Array<{ name: string; ok: boolean; detail?: string }> }
}

async function verify(extra: Record<string, unknown>, options: { tamper?: boolean; harness?: Harness; apiKey?: string } = {}): Promise<Answer> {
  let jwt = signRaw(shakenHeader(num.signers[0]!.keyId), claims(num.phone, DEST, extra), num.signers[0]!.privateKey)
  if (options.tamper === true) jwt = `${jwt.slice(0, -4)}AAAA`
  const res = await (options.harness ?? h).app.inject({ method: 'POST', url: '/numsys/call-signature-verification', headers: { 'x-api-key': options.apiKey ?? key },
    payload: { origTN: num.phone, destTN: DEST, jwt, debug: true } })
  assert.equal(res.statusCode, 200, res.body)
  return res.json()
}

const jcl = () => `${x5u.base}/acme.json`

describe('verified rich call data', () => {
  test('nam alone, with crn and apn: returned as signed, without integrity', async () => {
    const answer = await verify({ rcd: { nam: 'Acme Bank', apn: '+18005550100' }, crn: 'Your card payment' })
    assert.equal(answer.success, true, answer.debug.reason)
    assert.deepEqual(answer.rcd, { nam: 'Acme Bank', crn: 'Your card payment', apn: '+18005550100', integrity: false })
    assert.match(answer.debug.steps.at(-1)!.detail!, /nam "Acme Bank"; no rcdi/)
  })

  test('an inline jCard (jcd) is returned; an rcdi over inline content is accepted as JSON text or as the string\'s bytes', async () => {
    const jcard = JSON.parse(JCARD)
    const answer = await verify({ rcd: { nam: 'Acme Bank', jcd: jcard }, rcdi: { '/nam': sri('sha256', JSON.stringify('Acme Bank')), '/jcd': sri('sha384', JSON.stringify(jcard)) } })
    assert.equal(answer.success, true, answer.debug.reason)
    assert.deepEqual(answer.rcd, { nam: 'Acme Bank', jcard, integrity: true })
    const raw = await verify({ rcd: { nam: 'Acme Bank' }, rcdi: { '/nam': sri('sha256', 'Acme Bank') } })
    assert.equal(raw.rcd?.integrity, true, raw.rcdFailure)
  })

  test('a jCard at jcl: fetched through the guarded client, its digest checked, returned with it', async () => {
    const answer = await verify({ rcd: { nam: 'Acme Bank', jcl: jcl() }, rcdi: { '/jcl': sri('sha256', JCARD) } })
    assert.equal(answer.success, true, answer.debug.reason)
    assert.deepEqual(answer.rcd, { nam: 'Acme Bank', jcard: JSON.parse(JCARD), jcl: jcl(), integrity: true })
  })

  test('integrity only when what is fetched by reference has a digest: a jcl without one is not integrity, even beside another digest', async () => {
    const answer = await verify({ rcd: { nam: 'Acme Bank', jcl: jcl() }, rcdi: { '/nam': sri('sha256', 'Acme Bank') } })
    assert.equal(answer.rcd?.integrity, false, answer.rcdFailure)
    assert.match(answer.debug.steps.at(-1)!.detail!, /integrity false/)
  })

  test('an icon rcdi covers is fetched and checked', async () => {
    const icon = `${x5u.base}/icon.png`
    const good = await verify({ rcd: { nam: 'Acme Bank', icn: icon }, rcdi: { '/icn': sri('sha256', x5u.documents.get('/icon.png') as Buffer) } })
    assert.equal(good.rcd?.integrity, true, good.rcdFailure)
    const bad = await verify({ rcd: { nam: 'Acme Bank', icn: icon }, rcdi: { '/icn': sri('sha256', 'another icon') } })
    assert.match(bad.rcdFailure!, /^RCD_INTEGRITY/)
  })
})

describe('each rcd check fails alone: the call stays verified, its rcd is not returned', () => {
  const cases: Array<[string, () => Record<string, unknown>, string]> = [
    ['the jCard at jcl changed since it was signed', () => ({ rcd: { nam: 'Acme Bank', jcl: jcl() }, rcdi: { '/jcl': sri('sha256', `${JCARD} `) } }), 'RCD_INTEGRITY'],
    ['jcl unreachable', () => ({ rcd: { nam: 'Acme Bank', jcl: `${x5u.base}/missing.json` } }), 'RCD_FETCH_FAILED'],
    ['jcl not https', () => ({ rcd: { nam: 'Acme Bank', jcl: 'http://example.com/acme.json' } }), 'BAD_RCD'],
    ['jcd and jcl both', () => ({ rcd: { nam: 'Acme Bank', jcl: jcl(), jcd: JSON.parse(JCARD) } }), 'BAD_RCD'],
    ['a jcd that is no jCard', () => ({ rcd: { nam: 'Acme Bank', jcd: { fn: 'Acme' } } }), 'BAD_RCD'],
    ['nam not a string', () => ({ rcd: { nam: 42 } }), 'BAD_RCD'],
    ['nam with a control character', () => ({ rcd: { nam: 'Acme\u0007Bank' } }), 'BAD_RCD'],
    ['rcd without nam', () => ({ rcd: { jcl: jcl() } }), 'BAD_RCD'],
    ['an rcdi pointer to nothing', () => ({ rcd: { nam: 'Acme Bank' }, rcdi: { '/icn': sri('sha256', 'x') } }), 'RCD_INTEGRITY'],
    ['an rcdi digest of the wrong length or algorithm', () => ({ rcd: { nam: 'Acme Bank' }, rcdi: { '/nam': 'md5-AAAA' } }), 'BAD_RCD'],
    ['an inline value that does not match its digest', () => ({ rcd: { nam: 'Acme Bank' }, rcdi: { '/nam': sri('sha256', 'Evil Corp') } }), 'RCD_INTEGRITY'],
  ]
  for (const [name, extra, code] of cases) {
    test(`${name}: ${code}`, async () => {
      const answer = await verify(extra())
      assert.equal(answer.success, true, answer.debug.reason)
      assert.equal(answer.rcd, undefined)
      assert.match(answer.rcdFailure!, new RegExp(`^${code}: `))
      const step = answer.debug.steps.at(-1)!
      assert.deepEqual([step.name, step.ok], ['check_rcd', false])
    })
  }

  test('a PASSporT that does not verify: no rcd, and its jcl is never fetched', async () => {
    const before = x5u.served
    const answer = await verify({ rcd: { nam: 'Acme Bank', jcl: jcl() } }, { tamper: true })
    assert.equal(answer.success, false)
    assert.equal(answer.rcd, undefined)
    assert.equal(answer.rcdFailure, undefined)
    assert.equal(x5u.served, before)
  })

  test('a jcl on a private address is refused by the guarded client (no X5U_ALLOW_PRIVATE)', async () => {
    const strict = await startHarness({})
    try {
      const other = await callerNumber(strict)
      const jwt = signRaw(shakenHeader(other.signers[0]!.keyId), claims(other.phone, DEST, { rcd: { nam: 'Acme Bank', jcl: jcl() } }), other.signers[0]!.privateKey)
      const before = x5u.served
      const res = await strict.app.inject({ method: 'POST', url: '/numsys/call-signature-verification', headers: { 'x-api-key': await strict.key({ scopes: ['caller'] }) },
        payload: { origTN: other.phone, destTN: DEST, jwt } })
      assert.equal(res.json().success, true)
      assert.match(res.json().rcdFailure, /^RCD_FETCH_FAILED: .*loopback, private, link-local or reserved address/)
      assert.equal(x5u.served, before)
    } finally {
      await strict.close()
    }
  })
})
