/**
 * POST /numsys/call-signature-verification, the accepting side: PASSporTs signed by
 * independent implementations (`jose`, the `openssl` command, node:crypto by hand) and by our
 * own signer, and every accepted variant of header and claims seen in the wild.
 */
import assert from 'node:assert/strict'
import { sign as cryptoSign } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { compactVerify, importSPKI, jwtVerify } from 'jose'
import { signPassport } from '../../src/cli/caller-commands.ts'
import type { Harness } from '../helpers.ts'
import {
  ledgerVerdict,
  callerNumber, callerSetup, claims, derToJose, expectRejected, expectVerified, joseSign, localLedger, nowS, opensslKeyPair, opensslSign,
  randomPhone, shakenHeader, signRaw, type CallerNumber, type Signer,
} from '../support/caller.ts'

let h: Harness
let key: string
let num: CallerNumber
let signer: Signer
let dir: string
const dest = randomPhone()

before(async () => {
  ;({ h, key, num, signer } = await callerSetup())
  dir = mkdtempSync(join(tmpdir(), 'kns-caller-'))
})

after(async () => {
  await h?.close()
  rmSync(dir, { recursive: true, force: true })
})

describe('tokens from independent implementations', () => {
  test('jose SignJWT (ES256, kid, typ passport, ppt shaken) verifies', async () => {
    const jwt = await joseSign(signer, claims(num.phone, dest))
    // Sanity: jose accepts its own token with the published public key.
    const verified = await jwtVerify(jwt, await importSPKI(signer.publicPem, 'ES256'))
    assert.equal(verified.protectedHeader.kid, signer.keyId)
    await expectVerified(h, key, { origTN: num.phone, destTN: dest, jwt }, [signer])
  })

  test('jose with typ JWT and no ppt, and with neither typ nor ppt, verifies', async () => {
    const typJwt = await joseSign(signer, claims(num.phone, dest), { typ: 'JWT', ppt: undefined })
    await expectVerified(h, key, { origTN: num.phone, destTN: dest, jwt: typJwt })
    const bare = await joseSign(signer, claims(num.phone, dest), { typ: undefined, ppt: undefined })
    assert.deepEqual(Object.keys(JSON.parse(Buffer.from(bare.split('.')[0]!, 'base64url').toString())).sort(), ['alg', 'kid'])
    await expectVerified(h, key, { origTN: num.phone, destTN: dest, jwt: bare })
  })

  test('a hand-made node:crypto token is a valid JWS for jose too, and verifies', async () => {
    const jwt = signRaw(shakenHeader(signer.keyId), claims(num.phone, dest), signer.privateKey)
    await compactVerify(jwt, await importSPKI(signer.publicPem, 'ES256'))
    await expectVerified(h, key, { origTN: num.phone, destTN: dest, jwt })
  })

  test('openssl: key made and input signed by the openssl command; r||s from its DER verifies, the DER itself is rejected', async () => {
    const made = opensslKeyPair(dir, 'operator')
    const ledger = localLedger(h)
    const { objectId, keyId } = await ledger.keystores.create({ name: 'OpenSSL Telecom', creator: num.tokenId, publicKey: made.publicPem })
    assert.equal(keyId, made.keyId, 'default key ID = first 32 hex of SHA-256 over the PEM body')
    const other = await callerNumber(h, { keystores: 0 })
    await ledger.keystores.link(other.tokenId, objectId)

    const header = shakenHeader(made.keyId)
    const { input, der } = opensslSign(made.keyPath, header, claims(other.phone, dest))
    assert.equal(der[0], 0x30, 'openssl gives a DER SEQUENCE')
    const jose = derToJose(der)
    assert.equal(jose.length, 64)
    await expectVerified(h, key, { origTN: other.phone, destTN: dest, jwt: `${input}.${jose.toString('base64url')}` })
    const debug = await expectRejected(h, key, { origTN: other.phone, destTN: dest, jwt: `${input}.${der.toString('base64url')}` },
      'BAD_SIGNATURE_FORMAT', 'verify_signature')
    assert.match(debug.reason!, /DER/)
  })

  test('our own signer (kns passport sign) verifies, with and without kid', async () => {
    const withKid = signPassport({ orig: num.phone, dest, privateKeyPem: signer.privatePem, kid: signer.keyId })
    await expectVerified(h, key, { origTN: num.phone, destTN: dest, jwt: withKid })
    const withoutKid = signPassport({ orig: num.phone, dest, privateKeyPem: signer.privatePem })
    const debug = await expectVerified(h, key, { origTN: num.phone, destTN: dest, jwt: withoutKid })
    assert.equal(debug.steps[1]!.detail, 'no kid')
  })
})

describe('accepted variants', () => {
  const sign = (payload: Record<string, unknown>, header: Record<string, unknown> = shakenHeader(signer.keyId)) =>
    signRaw(header, payload, signer.privateKey)

  test('dest.tn as a string and as an array (destTN anywhere in it) both pass', async () => {
    await expectVerified(h, key, { origTN: num.phone, destTN: dest, jwt: sign(claims(num.phone, dest, { dest: { tn: dest } })) })
    const many = { dest: { tn: [randomPhone(), dest.slice(1), randomPhone()] } }
    await expectVerified(h, key, { origTN: num.phone, destTN: dest, jwt: sign(claims(num.phone, dest, many)) })
  })

  test('numbers with and without + on both sides, in every combination', async () => {
    const bare = (tn: string) => tn.slice(1)
    for (const origReq of [num.phone, bare(num.phone)]) {
      for (const origTok of [num.phone, bare(num.phone)]) {
        for (const destReq of [dest, bare(dest)]) {
          for (const destTok of [dest, bare(dest)]) {
            const jwt = sign(claims(origTok, destTok, { dest: { tn: destTok } }))
            const res = await h.app.inject({
              method: 'POST', url: '/numsys/call-signature-verification', headers: { 'x-api-key': key },
              payload: { origTN: origReq, destTN: destReq, jwt },
            })
            assert.deepEqual(ledgerVerdict(res.json()), { success: true }, `${origReq} ${origTok} ${destReq} ${destTok}: ${res.body}`)
          }
        }
      }
    }
  })

  test('att instead of attest; both present and equal; attestations A, B and C', async () => {
    const base = claims(num.phone, dest)
    delete base.attest
    for (const level of ['A', 'B', 'C']) {
      await expectVerified(h, key, { origTN: num.phone, destTN: dest, jwt: sign({ ...base, att: level }) })
      await expectVerified(h, key, { origTN: num.phone, destTN: dest, jwt: sign({ ...base, attest: level }) })
    }
    const debug = await expectVerified(h, key, { origTN: num.phone, destTN: dest, jwt: sign({ ...base, att: 'B', attest: 'B' }) })
    assert.equal(debug.steps[2]!.detail, 'attestation B')
  })

  test('typ JWT / jwt / passport / absent; ppt absent; crit ["ppt"] with ppt present', async () => {
    for (const typ of ['JWT', 'jwt', 'passport', undefined]) {
      const header = shakenHeader(signer.keyId, { typ })
      if (typ === undefined) delete header.typ
      await expectVerified(h, key, { origTN: num.phone, destTN: dest, jwt: sign(claims(num.phone, dest), header) })
    }
    await expectVerified(h, key, { origTN: num.phone, destTN: dest, jwt: sign(claims(num.phone, dest), { alg: 'ES256', kid: signer.keyId }) })
    await expectVerified(h, key, { origTN: num.phone, destTN: dest, jwt: sign(claims(num.phone, dest), shakenHeader(signer.keyId, { crit: ['ppt'] })) })
  })

  test('the SHAKEN x5u header and extra claims are ignored', async () => {
    const header = shakenHeader(signer.keyId, { x5u: 'https://cert.example/sp.pem' })
    await expectVerified(h, key, { origTN: num.phone, destTN: dest, jwt: sign(claims(num.phone, dest, { div: { tn: '1' }, extra: 1 }), header) })
  })

  test('keyid header is an alias of kid', async () => {
    const debug = await expectVerified(h, key, {
      origTN: num.phone, destTN: dest, jwt: sign(claims(num.phone, dest), { alg: 'ES256', typ: 'passport', ppt: 'shaken', keyid: signer.keyId }),
    })
    assert.equal(debug.steps[1]!.detail, `kid ${signer.keyId}`)
    assert.equal(debug.steps[4]!.detail, `verified with key ${signer.keyId}`)
  })

  test('iat 4 s in the future and 58 s old both pass (default CALL_MAX_AGE_S 60)', async () => {
    await expectVerified(h, key, { origTN: num.phone, destTN: dest, jwt: sign(claims(num.phone, dest, { iat: nowS() + 4 })) })
    await expectVerified(h, key, { origTN: num.phone, destTN: dest, jwt: sign(claims(num.phone, dest, { iat: nowS() - 58 })) })
  })

  test('without kid, the signing key is found among the keys of several linked keystores', async () => {
    const three = await callerNumber(h, { keystores: 3 })
    const second = three.signers[1]!
    const header = { alg: 'ES256', typ: 'passport', ppt: 'shaken' }
    const debug = await expectVerified(h, key, {
      origTN: three.phone, destTN: dest, jwt: signRaw(header, claims(three.phone, dest), second.privateKey),
    }, three.signers)
    assert.match(debug.steps[3]!.detail!, /^3 candidate key\(s\)/)
    assert.equal(debug.steps[4]!.detail, `verified with key ${second.keyId}`)
    // With kid only that key is a candidate.
    const named = await expectVerified(h, key, {
      origTN: three.phone, destTN: dest, jwt: signRaw({ ...header, kid: second.keyId }, claims(three.phone, dest), second.privateKey),
    })
    assert.equal(named.steps[3]!.detail, `1 candidate key(s): ${second.keyId}`)
  })

  test('the signature covers header.payload exactly as received (pretty-printed JSON, unusual key order)', async () => {
    const payload = Object.fromEntries(Object.entries(claims(num.phone, dest)).reverse())
    const header = { ppt: 'shaken', kid: signer.keyId, typ: 'passport', alg: 'ES256' }
    const input = `${Buffer.from(JSON.stringify(header, null, 2)).toString('base64url')}.${Buffer.from(JSON.stringify(payload, null, 1)).toString('base64url')}`
    const signature = cryptoSign('sha256', Buffer.from(input), { key: signer.privateKey, dsaEncoding: 'ieee-p1363' })
    await expectVerified(h, key, { origTN: num.phone, destTN: dest, jwt: `${input}.${signature.toString('base64url')}` })
  })
})
