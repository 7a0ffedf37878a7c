/**
 * call-signature-verification: check 3 (claims) failing alone, and the freshness window:
 * iat at most 5 s ahead, not older than CALL_MAX_AGE_S (default 60; 0 turns the age check off).
 * Every token is correctly signed by the number's linked key.
 */
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { verifyCall as runPipeline } from '../../src/caller/verify-call.ts'
import { startHarness, type Harness } from '../helpers.ts'
import {
  callerNumber, callerSetup, claims, expectRejected, expectVerified, nowS, randomPhone, shakenHeader, signRaw, STEPS,
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
const signed = (payload: Record<string, unknown>) => signRaw(shakenHeader(signer.keyId), payload, signer.privateKey)
const without = (payload: Record<string, unknown>, ...names: string[]) => {
  const copy = { ...payload }
  for (const name of names) delete copy[name]
  return copy
}

describe('orig and dest', () => {
  test('orig.tn is another number, missing, not a string, or not a telephone number', async () => {
    const other = randomPhone()
    for (const orig of [{ tn: other }, { tn: other.slice(1) }, {}, { tn: Number(num.phone.slice(1)) }, { tn: [num.phone] }, { tn: `${num.phone}0` }, { tn: `tel:${num.phone}` }, 'x', null]) {
      await expectRejected(h, key, body(signed(claims(num.phone, dest, { orig }))), 'ORIG_MISMATCH', 'check_claims')
    }
    await expectRejected(h, key, body(signed(without(claims(num.phone, dest), 'orig'))), 'ORIG_MISMATCH', 'check_claims')
  })

  test('a correctly signed PASSporT about another call: origTN or destTN of the request differ', async () => {
    const jwt = signed(claims(num.phone, dest))
    await expectRejected(h, key, { origTN: randomPhone(), destTN: dest, jwt }, 'ORIG_MISMATCH', 'check_claims')
    await expectRejected(h, key, { origTN: num.phone, destTN: randomPhone(), jwt }, 'DEST_MISMATCH', 'check_claims')
  })

  test('dest.tn (string or array) that does not contain destTN, or dest missing', async () => {
    const cases = [
      { tn: randomPhone() }, { tn: [randomPhone(), randomPhone()] }, { tn: [] }, {}, { tn: Number(dest.slice(1)) },
      { tn: [[dest]] }, { tn: `${dest},${randomPhone()}` }, { uri: [`sip:${dest}@example.com`] }, null,
    ]
    for (const d of cases) await expectRejected(h, key, body(signed(claims(num.phone, dest, { dest: d }))), 'DEST_MISMATCH', 'check_claims')
    await expectRejected(h, key, body(signed(without(claims(num.phone, dest), 'dest'))), 'DEST_MISMATCH', 'check_claims')
  })
})

describe('attestation and origid', () => {
  test('attestation missing, or not A, B or C, under either name', async () => {
    const base = without(claims(num.phone, dest), 'attest')
    await expectRejected(h, key, body(signed(base)), 'BAD_ATTESTATION', 'check_claims')
    for (const level of ['D', 'a', '', 'AB', 1, null, ['A']]) {
      await expectRejected(h, key, body(signed({ ...base, att: level })), 'BAD_ATTESTATION', 'check_claims')
      await expectRejected(h, key, body(signed({ ...base, attest: level })), 'BAD_ATTESTATION', 'check_claims')
    }
  })

  test('att and attest disagreeing (each valid on its own), or one valid and the other not', async () => {
    const base = without(claims(num.phone, dest), 'attest')
    const debug = await expectRejected(h, key, body(signed({ ...base, att: 'A', attest: 'C' })), 'BAD_ATTESTATION', 'check_claims')
    assert.match(debug.reason!, /disagree/)
    await expectRejected(h, key, body(signed({ ...base, att: 'A', attest: 'X' })), 'BAD_ATTESTATION', 'check_claims')
  })

  test('origid missing, empty or not a string', async () => {
    await expectRejected(h, key, body(signed(without(claims(num.phone, dest), 'origid'))), 'MISSING_ORIGID', 'check_claims')
    for (const origid of ['', 42, null, { id: 'x' }]) {
      await expectRejected(h, key, body(signed(claims(num.phone, dest, { origid }))), 'MISSING_ORIGID', 'check_claims')
    }
  })
})

describe('iat', () => {
  test('iat missing, not a number, or not an integer', async () => {
    await expectRejected(h, key, body(signed(without(claims(num.phone, dest), 'iat'))), 'BAD_IAT', 'check_claims')
    const now = nowS()
    for (const iat of [now + 0.5, String(now), null, [now], now * 1000 + 0.25, Number.MAX_SAFE_INTEGER + 2]) {
      await expectRejected(h, key, body(signed(claims(num.phone, dest, { iat }))), 'BAD_IAT', 'check_claims')
    }
  })

  test('more than 5 s in the future fails; 4 s passes', async () => {
    const debug = await expectRejected(h, key, body(signed(claims(num.phone, dest, { iat: nowS() + 7 }))), 'IAT_IN_FUTURE', 'check_claims')
    assert.match(debug.reason!, /future/)
    await expectRejected(h, key, body(signed(claims(num.phone, dest, { iat: nowS() + 3600 }))), 'IAT_IN_FUTURE', 'check_claims')
    await expectVerified(h, key, body(signed(claims(num.phone, dest, { iat: nowS() + 4 }))))
  })

  test('older than CALL_MAX_AGE_S (default 60) fails at 61 s; very old and epoch 0 too', async () => {
    for (const iat of [nowS() - 61, nowS() - 3600, 0, -5]) {
      await expectRejected(h, key, body(signed(claims(num.phone, dest, { iat }))), 'IAT_TOO_OLD', 'check_claims')
    }
  })

  test('exact boundaries on a fixed clock: +5 s passes, +6 s fails; 60 s old passes, 61 s fails', async () => {
    const now = 1_800_000_000
    const run = (iat: number, maxAgeS = 60) => runPipeline({
      directory: h.service.keyDirectory, origTN: num.phone, destTN: dest, maxAgeS, nowS: now,
      jwt: signed(claims(num.phone, dest, { iat })),
    })
    assert.equal((await run(now + 5)).success, true)
    assert.equal((await run(now + 6)).reason?.split(':')[0], 'IAT_IN_FUTURE')
    assert.equal((await run(now - 60)).success, true)
    const old = await run(now - 61)
    assert.equal(old.reason?.split(':')[0], 'IAT_TOO_OLD')
    assert.deepEqual(old.steps.map((s) => s.name), STEPS.slice(0, 3))
    assert.equal((await run(now - 10, 10)).success, true)
    assert.equal((await run(now - 11, 10)).reason?.split(':')[0], 'IAT_TOO_OLD')
    assert.equal((await run(now - 10 * 365 * 86_400, 0)).success, true, 'maxAgeS 0: no age check')
    assert.equal((await run(now + 6, 0)).reason?.split(':')[0], 'IAT_IN_FUTURE', 'maxAgeS 0 still bounds the future')
  })
})

describe('CALL_MAX_AGE_S from the environment', () => {
  test('CALL_MAX_AGE_S=0 disables the age check (a day-old token passes), the future bound stays', async () => {
    const h0 = await startHarness({ CALL_MAX_AGE_S: '0' })
    try {
      assert.equal(h0.service.config.callMaxAgeS, 0)
      const key0 = await h0.key({ scopes: ['caller'] })
      const n = await callerNumber(h0)
      const s = n.signers[0]!
      const sign = (iat: number) => signRaw(shakenHeader(s.keyId), claims(n.phone, dest, { iat }), s.privateKey)
      await expectVerified(h0, key0, { origTN: n.phone, destTN: dest, jwt: sign(nowS() - 86_400) })
      await expectVerified(h0, key0, { origTN: n.phone, destTN: dest, jwt: sign(nowS() - 61) })
      await expectRejected(h0, key0, { origTN: n.phone, destTN: dest, jwt: sign(nowS() + 7) }, 'IAT_IN_FUTURE', 'check_claims')
    } finally {
      await h0.close()
    }
  })

  test('CALL_MAX_AGE_S=10: 12 s old fails, 8 s old passes', async () => {
    const h10 = await startHarness({ CALL_MAX_AGE_S: '10' })
    try {
      const key10 = await h10.key({ scopes: ['caller'] })
      const n = await callerNumber(h10)
      const s = n.signers[0]!
      const sign = (iat: number) => signRaw(shakenHeader(s.keyId), claims(n.phone, dest, { iat }), s.privateKey)
      const debug = await expectRejected(h10, key10, { origTN: n.phone, destTN: dest, jwt: sign(nowS() - 12) }, 'IAT_TOO_OLD', 'check_claims')
      assert.match(debug.reason!, /max 10 s/)
      await expectVerified(h10, key10, { origTN: n.phone, destTN: dest, jwt: sign(nowS() - 8) })
    } finally {
      await h10.close()
    }
  })
})
