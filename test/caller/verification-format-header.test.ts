/**
 * call-signature-verification: checks 1 and 2 failing alone. Every token here is otherwise
 * valid (right number, fresh, signed by the linked key where a signature is needed), so the
 * failing check is the only reason for `success: false`.
 */
import assert from 'node:assert/strict'
import { generateKeyPairSync } from 'node:crypto'
import { after, before, describe, test } from 'node:test'
import { importPKCS8, SignJWT, UnsecuredJWT } from 'jose'
import type { Harness } from '../helpers.ts'
import {
  b64json, callerSetup, claims, expectRejected, expectVerified, randomPhone, shakenHeader, signRaw, verifyCall,
  type CallerNumber, type Signer,
} from '../support/caller.ts'

let h: Harness
let key: string
let num: CallerNumber
let signer: Signer
const dest = randomPhone()

before(async () => { ({ h, key, num, signer } = await callerSetup()) })

after(async () => {
  await h?.close()
})

const body = (jwt: string) => ({ origTN: num.phone, destTN: dest, jwt })
const valid = (header: Record<string, unknown> = shakenHeader(signer.keyId), payload = claims(num.phone, dest)) =>
  signRaw(header, payload, signer.privateKey)

describe('check_jws_format', () => {
  test('not three dot-separated parts', async () => {
    const [h64, p64, s64] = valid().split('.') as [string, string, string]
    for (const jwt of [`${h64}.${p64}`, `${h64}.${p64}.${s64}.${s64}`, `${h64}.${p64}.${s64}.${p64}.${s64}`, h64, '...']) {
      const debug = await expectRejected(h, key, body(jwt), 'MALFORMED_JWT', 'check_jws_format')
      assert.ok(debug.reason!.length < 200)
    }
  })

  test('a part that is empty or not base64url (+ / = padding, spaces, other characters)', async () => {
    const [h64, p64, s64] = valid().split('.') as [string, string, string]
    const swap = (part: string, c: string) => `${part.slice(0, 10)}${c}${part.slice(11)}`
    const cases = [
      `${h64}.${p64}.`, `.${p64}.${s64}`, `${h64}..${s64}`,
      `${h64}=.${p64}.${s64}`, `${h64}.${p64}.${s64}==`, `${swap(h64, '+')}.${p64}.${s64}`, `${h64}.${swap(p64, '/')}.${s64}`,
      `${h64}.${p64} .${s64}`, `${h64}.${p64}.${s64}!`, ` ${h64}.${p64}.${s64}`, `${h64}.${p64}.${s64}\n`, `${h64}.${swap(p64, '\u00e9')}.${s64}`,
    ]
    for (const jwt of cases) await expectRejected(h, key, body(jwt), 'MALFORMED_JWT', 'check_jws_format')
  })

  test('header or payload that is not JSON, or JSON that is not an object', async () => {
    const [h64, p64, s64] = valid().split('.') as [string, string, string]
    const raw = (text: string) => Buffer.from(text).toString('base64url')
    for (const bad of [raw('not json'), raw('{"alg":"ES256"'), b64json([1, 2]), b64json(null), b64json('ES256'), b64json(42), raw('\u00ff\u00fe')]) {
      await expectRejected(h, key, body(`${bad}.${p64}.${s64}`), 'MALFORMED_JWT', 'check_jws_format')
      await expectRejected(h, key, body(`${h64}.${bad}.${s64}`), 'MALFORMED_JWT', 'check_jws_format')
    }
  })

  test('at most 8 KiB: a valid token of exactly 8192 bytes passes, one of 8193 is rejected, one over 16 KiB is a 400', async () => {
    const exactly = (target: number): string => {
      const payload = claims(num.phone, dest)
      for (let x = 0; x < 4; x++) {
        const header = shakenHeader(signer.keyId, { x5u: `https://cert.example/${'a'.repeat(x)}` })
        for (let pad = 5000; pad < 6500; pad++) {
          const p = { ...payload, pad: 'p'.repeat(pad) }
          if (b64json(header).length + b64json(p).length + 2 + 86 === target) return signRaw(header, p, signer.privateKey)
        }
      }
      throw new Error(`no token of ${target} bytes`)
    }
    const at = exactly(8192)
    assert.equal(at.length, 8192)
    await expectVerified(h, key, body(at))
    const over = exactly(8193)
    assert.equal(over.length, 8193)
    const debug = await expectRejected(h, key, body(over), 'MALFORMED_JWT', 'check_jws_format')
    assert.match(debug.reason!, /8192/)
    const huge = await verifyCall(h, key, body(`${over}${'A'.repeat(16384 - over.length + 1)}`))
    assert.equal(huge.statusCode, 400, huge.body)
  })
})

describe('check_header: alg exactly ES256', () => {
  const payload = () => claims(num.phone, dest)

  test('alg none: unsecured JWT (empty signature) and alg none with a real ES256 signature attached', async () => {
    const unsecured = new UnsecuredJWT(payload()).encode()
    assert.match(unsecured, /\.$/)
    await expectRejected(h, key, body(unsecured), 'MALFORMED_JWT', 'check_jws_format')
    for (const alg of ['none', 'None', 'NONE']) {
      const debug = await expectRejected(h, key, body(valid(shakenHeader(signer.keyId, { alg }))), 'BAD_ALGORITHM', 'check_header')
      assert.match(debug.reason!, /ES256/)
    }
  })

  test('HS256 keyed with the public key PEM (algorithm confusion) is rejected', async () => {
    for (const secret of [signer.publicPem, signer.publicBody]) {
      const jwt = await new SignJWT(payload()).setProtectedHeader({ alg: 'HS256', kid: signer.keyId, typ: 'passport', ppt: 'shaken' })
        .sign(new TextEncoder().encode(secret))
      await expectRejected(h, key, body(jwt), 'BAD_ALGORITHM', 'check_header', [signer])
    }
    for (const alg of ['HS384', 'HS512']) {
      const jwt = await new SignJWT(payload()).setProtectedHeader({ alg, kid: signer.keyId }).sign(new TextEncoder().encode(signer.publicPem))
      await expectRejected(h, key, body(jwt), 'BAD_ALGORITHM', 'check_header')
    }
  })

  test('RS256, PS256, ES384, ES512 and EdDSA tokens signed by jose are rejected', async () => {
    const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ type: 'pkcs8', format: 'pem' }).toString()
    const p384 = generateKeyPairSync('ec', { namedCurve: 'P-384' }).privateKey.export({ type: 'pkcs8', format: 'pem' }).toString()
    const p521 = generateKeyPairSync('ec', { namedCurve: 'P-521' }).privateKey.export({ type: 'pkcs8', format: 'pem' }).toString()
    const ed = generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem' }).toString()
    for (const [alg, pem] of [['RS256', rsa], ['PS256', rsa], ['ES384', p384], ['ES512', p521], ['EdDSA', ed]] as const) {
      const jwt = await new SignJWT(payload()).setProtectedHeader({ alg, kid: signer.keyId, typ: 'passport', ppt: 'shaken' })
        .sign(await importPKCS8(pem, alg))
      const debug = await expectRejected(h, key, body(jwt), 'BAD_ALGORITHM', 'check_header')
      assert.ok(debug.reason!.includes(alg), debug.reason)
    }
  })

  test('alg missing, null, lower-case, with spaces, or not a string (the signature itself is a valid ES256 one)', async () => {
    const header = shakenHeader(signer.keyId)
    delete header.alg
    await expectRejected(h, key, body(valid(header)), 'BAD_ALGORITHM', 'check_header')
    for (const alg of [null, 'es256', 'ES256 ', ' ES256', ['ES256'], { name: 'ES256' }, 256, true]) {
      await expectRejected(h, key, body(valid(shakenHeader(signer.keyId, { alg }))), 'BAD_ALGORITHM', 'check_header')
    }
  })
})

describe('check_header: typ, ppt, crit, kid', () => {
  test('typ other than JWT or passport', async () => {
    for (const typ of ['JWS', 'application/jwt', 'passport+jwt', 'shaken', '', 42, null, ['JWT']]) {
      await expectRejected(h, key, body(valid(shakenHeader(signer.keyId, { typ }))), 'BAD_TYPE', 'check_header')
    }
  })

  test('ppt other than shaken', async () => {
    for (const ppt of ['div', 'rcd', 'SHAKEN', '', 1, null]) {
      await expectRejected(h, key, body(valid(shakenHeader(signer.keyId, { ppt }))), 'BAD_PPT', 'check_header')
    }
  })

  test('crit naming an unknown parameter, empty, not an array, or naming ppt when ppt is absent', async () => {
    const cases: Record<string, unknown>[] = [
      shakenHeader(signer.keyId, { crit: ['exp'] }),
      shakenHeader(signer.keyId, { crit: ['ppt', 'b64'], b64: false }),
      shakenHeader(signer.keyId, { crit: [] }),
      shakenHeader(signer.keyId, { crit: 'ppt' }),
      shakenHeader(signer.keyId, { crit: [1] }),
      { alg: 'ES256', typ: 'passport', kid: signer.keyId, crit: ['ppt'] },
    ]
    for (const header of cases) await expectRejected(h, key, body(valid(header)), 'BAD_CRIT', 'check_header')
  })

  test('kid (or keyid) that is empty, null, not a string, or absurdly long', async () => {
    for (const kid of ['', 42, false, null, ['k'], { id: 'k' }, 'k'.repeat(257)]) {
      await expectRejected(h, key, body(valid(shakenHeader(undefined, { kid }))), 'BAD_KID', 'check_header')
      await expectRejected(h, key, body(valid(shakenHeader(undefined, { keyid: kid }))), 'BAD_KID', 'check_header')
    }
  })
})
