/**
 * call-signature-verification: checks 4 (number -> token -> linked keystores -> unrevoked key)
 * and 5 (ES256 signature, JOSE r||s) failing alone. Each test uses a fresh number and changes
 * its keys before the first verification, so no cached resolution is involved (see
 * cache-invalidation.test.ts for that).
 */
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { linkNumber } from '../../src/identity/numbers.ts'
import type { Harness } from '../helpers.ts'
import {
  b64json, callerNumber, callerSetup, claims, expectRejected, expectVerified, localLedger, newSigner, randomObjectId, randomPhone, shakenHeader,
  signRaw, signRawDer, sleep, type CallerNumber, type Signer,
} from '../support/caller.ts'

let h: Harness
let key: string
let num: CallerNumber
let signer: Signer
const dest = randomPhone()
const NO_KID = { alg: 'ES256', typ: 'passport', ppt: 'shaken' }

before(async () => { ({ h, key, num, signer } = await callerSetup()) })

after(async () => {
  await h?.close()
})

const call = (n: CallerNumber, jwt: string) => ({ origTN: n.phone, destTN: dest, jwt })

describe('verify_signature', () => {
  test('tampered payload: a claim changed after signing', async () => {
    const jwt = signRaw(shakenHeader(signer.keyId), claims(num.phone, dest), signer.privateKey)
    const [h64, , s64] = jwt.split('.')
    for (const payload of [claims(num.phone, dest, { attest: 'B' }), claims(num.phone, dest, { origid: 'forged' })]) {
      await expectRejected(h, key, call(num, `${h64}.${b64json(payload)}.${s64}`), 'BAD_SIGNATURE', 'verify_signature', [signer])
    }
  })

  test('tampered header: typ changed after signing', async () => {
    const jwt = signRaw(shakenHeader(signer.keyId, { typ: 'JWT' }), claims(num.phone, dest), signer.privateKey)
    const [, p64, s64] = jwt.split('.')
    await expectRejected(h, key, call(num, `${b64json(shakenHeader(signer.keyId))}.${p64}.${s64}`), 'BAD_SIGNATURE', 'verify_signature')
  })

  test('tampered signature: one bit of r or of s flipped, r and s swapped, all zeros', async () => {
    const jwt = signRaw(shakenHeader(signer.keyId), claims(num.phone, dest), signer.privateKey)
    const [h64, p64, s64] = jwt.split('.') as [string, string, string]
    const sig = Buffer.from(s64, 'base64url')
    const variants: Buffer[] = []
    for (const index of [0, 31, 32, 63]) {
      const copy = Buffer.from(sig)
      copy[index]! ^= 0x01
      variants.push(copy)
    }
    variants.push(Buffer.concat([sig.subarray(32), sig.subarray(0, 32)]), Buffer.alloc(64))
    for (const v of variants) {
      await expectRejected(h, key, call(num, `${h64}.${p64}.${v.toString('base64url')}`), 'BAD_SIGNATURE', 'verify_signature')
    }
  })

  test('DER-encoded signature (valid, same key) and signatures of the wrong length are rejected as format errors', async () => {
    const der = signRawDer(shakenHeader(signer.keyId), claims(num.phone, dest), signer.privateKey)
    assert.equal(Buffer.from(der.split('.')[2]!, 'base64url')[0], 0x30)
    const debug = await expectRejected(h, key, call(num, der), 'BAD_SIGNATURE_FORMAT', 'verify_signature')
    assert.match(debug.steps.at(-1)!.detail!, /DER/)
    const [h64, p64, s64] = signRaw(shakenHeader(signer.keyId), claims(num.phone, dest), signer.privateKey).split('.') as [string, string, string]
    const sig = Buffer.from(s64, 'base64url')
    for (const bad of [sig.subarray(0, 63), Buffer.concat([sig, Buffer.alloc(1)]), Buffer.concat([Buffer.alloc(1), sig]), Buffer.alloc(1)]) {
      await expectRejected(h, key, call(num, `${h64}.${p64}.${bad.toString('base64url')}`), 'BAD_SIGNATURE_FORMAT', 'verify_signature')
    }
  })

  test('wrong key: signed by an unrelated key, with the linked key ID as kid and without kid', async () => {
    const mallory = newSigner()
    await expectRejected(h, key, call(num, signRaw(shakenHeader(signer.keyId), claims(num.phone, dest), mallory.privateKey)),
      'BAD_SIGNATURE', 'verify_signature', [signer, mallory])
    await expectRejected(h, key, call(num, signRaw(NO_KID, claims(num.phone, dest), mallory.privateKey)), 'BAD_SIGNATURE', 'verify_signature')
  })
})

describe('resolve_keys', () => {
  test('kid naming no key, or a key of a keystore that is not linked to this number', async () => {
    await expectRejected(h, key, call(num, signRaw(shakenHeader('no-such-key'), claims(num.phone, dest), signer.privateKey)),
      'KEY_NOT_FOUND', 'resolve_keys')
    // The key exists, in a keystore linked to another number only.
    const other = await callerNumber(h)
    const foreign = other.signers[0]!
    const debug = await expectRejected(h, key, call(num, signRaw(shakenHeader(foreign.keyId), claims(num.phone, dest), foreign.privateKey)),
      'KEY_NOT_FOUND', 'resolve_keys', [foreign, signer])
    assert.ok(debug.reason!.includes(foreign.keyId), 'the reason names the key ID')
    // Even unlinked, that keystore's key does not verify for this number without kid either.
    await expectRejected(h, key, call(num, signRaw(NO_KID, claims(num.phone, dest), foreign.privateKey)), 'BAD_SIGNATURE', 'verify_signature')
  })

  test('revoked key: with kid not found; without kid not tried; the only key revoked leaves no key', async () => {
    const n = await callerNumber(h)
    const [s] = n.signers as [Signer]
    const keystores = localLedger(h).keystores
    const spare = newSigner()
    await keystores.addKey(n.keystoreIds[0]!, spare.publicPem)
    await keystores.revokeKey(n.keystoreIds[0]!, s.keyId)
    await expectRejected(h, key, call(n, signRaw(shakenHeader(s.keyId), claims(n.phone, dest), s.privateKey)), 'KEY_NOT_FOUND', 'resolve_keys')
    const debug = await expectRejected(h, key, call(n, signRaw(NO_KID, claims(n.phone, dest), s.privateKey)), 'BAD_SIGNATURE', 'verify_signature')
    assert.equal(debug.steps[3]!.detail, `1 candidate key(s): ${spare.keyId}`)
    await expectVerified(h, key, call(n, signRaw(shakenHeader(spare.keyId), claims(n.phone, dest), spare.privateKey)))

    const lone = await callerNumber(h)
    await keystores.revokeKey(lone.keystoreIds[0]!, lone.signers[0]!.keyId)
    const none = await expectRejected(h, key, call(lone, signRaw(NO_KID, claims(lone.phone, dest), lone.signers[0]!.privateKey)),
      'KEY_NOT_FOUND', 'resolve_keys')
    assert.match(none.reason!, /no unrevoked key/)
  })

  test('unlinked keystore: the only one -> NO_REGISTRY; one of two -> its key is not found', async () => {
    const keystores = localLedger(h).keystores
    const single = await callerNumber(h)
    assert.equal(await keystores.unlink(single.tokenId, single.keystoreIds[0]!), true)
    await expectRejected(h, key, call(single, signRaw(shakenHeader(single.signers[0]!.keyId), claims(single.phone, dest), single.signers[0]!.privateKey)),
      'NO_REGISTRY', 'resolve_keys')
    const pair = await callerNumber(h, { keystores: 2 })
    await keystores.unlink(pair.tokenId, pair.keystoreIds[0]!)
    const [first, second] = pair.signers as [Signer, Signer]
    await expectRejected(h, key, call(pair, signRaw(shakenHeader(first.keyId), claims(pair.phone, dest), first.privateKey)), 'KEY_NOT_FOUND', 'resolve_keys')
    await expectVerified(h, key, call(pair, signRaw(shakenHeader(second.keyId), claims(pair.phone, dest), second.privateKey)))
  })

  test('a number without a token -> NO_TOKEN; with a token but no registry -> NO_REGISTRY', async () => {
    const phone = randomPhone()
    const jwt = signRaw(shakenHeader(signer.keyId), claims(phone, dest), signer.privateKey)
    await expectRejected(h, key, { origTN: phone, destTN: dest, jwt }, 'NO_TOKEN', 'resolve_keys')
    const bare = await callerNumber(h, { keystores: 0 })
    await expectRejected(h, key, call(bare, signRaw(shakenHeader(signer.keyId), claims(bare.phone, dest), signer.privateKey)), 'NO_REGISTRY', 'resolve_keys')
  })

  test('a number moved to another token no longer uses the keystores of the old one', async () => {
    const n = await callerNumber(h)
    const newToken = await localLedger(h).mintToken(randomObjectId())
    await linkNumber(h.service.db, n.phone, newToken.objectId, 'linked')
    await expectRejected(h, key, call(n, signRaw(shakenHeader(n.signers[0]!.keyId), claims(n.phone, dest), n.signers[0]!.privateKey)),
      'NO_REGISTRY', 'resolve_keys')
  })

  test('a linked keystore that holds a key with a custom key ID: kid must match that ID', async () => {
    const n = await callerNumber(h)
    const custom = newSigner()
    await localLedger(h).keystores.addKey(n.keystoreIds[0]!, custom.publicPem, 'carrier-2026:k1')
    await expectVerified(h, key, call(n, signRaw(shakenHeader('carrier-2026:k1'), claims(n.phone, dest), custom.privateKey)))
    await expectRejected(h, key, call(n, signRaw(shakenHeader(custom.keyId), claims(n.phone, dest), custom.privateKey)), 'KEY_NOT_FOUND', 'resolve_keys')
  })
})

describe('debug output', () => {
  test('names key IDs only, never key material: candidates listed, the keys themselves absent', async () => {
    const n = await callerNumber(h, { keystores: 3 })
    const mallory = newSigner()
    const debug = await expectRejected(h, key, call(n, signRaw(NO_KID, claims(n.phone, dest), mallory.privateKey)), 'BAD_SIGNATURE', 'verify_signature',
      [...n.signers, mallory])
    for (const s of n.signers) assert.ok(debug.steps[3]!.detail!.includes(s.keyId))
    const text = JSON.stringify(debug)
    for (const s of [...n.signers, mallory]) {
      assert.ok(!text.includes(s.publicBody) && !text.includes(s.publicPem) && !text.includes(s.privatePem))
    }
  })
})

describe('without kid: at most 16 keys are tried', () => {
  /** A number whose first linked keystore holds `decoys` keys, and a second keystore (linked later) the signing key. */
  async function numberWithDecoys(decoys: number): Promise<{ n: CallerNumber; target: Signer; all: Signer[] }> {
    const ledger = localLedger(h)
    const n = await callerNumber(h, { keystores: 0 })
    const all = Array.from({ length: decoys }, () => newSigner())
    const { objectId: first } = await ledger.keystores.create({ name: 'Decoys', creator: randomObjectId(), publicKey: all[0]!.publicPem })
    for (const s of all.slice(1)) await ledger.keystores.addKey(first, s.publicPem)
    const target = newSigner()
    const { objectId: second } = await ledger.keystores.create({ name: 'Signer', creator: randomObjectId(), publicKey: target.publicPem })
    await ledger.keystores.link(n.tokenId, first)
    await sleep(3)
    await ledger.keystores.link(n.tokenId, second)
    return { n, target, all: [...all, target] }
  }

  test('the signing key as the 16th candidate verifies', async () => {
    const { n, target, all } = await numberWithDecoys(15)
    const debug = await expectVerified(h, key, call(n, signRaw(NO_KID, claims(n.phone, dest), target.privateKey)), all)
    assert.match(debug.steps[3]!.detail!, /^16 candidate key\(s\)/)
    assert.equal(debug.steps[4]!.detail, `verified with key ${target.keyId}`)
  })

  test('as the 17th it is never tried (BAD_SIGNATURE); with its kid it is found', async () => {
    const { n, target, all } = await numberWithDecoys(16)
    const debug = await expectRejected(h, key, call(n, signRaw(NO_KID, claims(n.phone, dest), target.privateKey)), 'BAD_SIGNATURE', 'verify_signature', all)
    assert.match(debug.steps[3]!.detail!, /^16 candidate key\(s\)/)
    assert.ok(!debug.steps[3]!.detail!.includes(target.keyId))
    await expectVerified(h, key, call(n, signRaw(shakenHeader(target.keyId), claims(n.phone, dest), target.privateKey)), all)
  })
})
