/**
 * ATIS-1000080's certificate rules beyond the chain: the SHAKEN certificate policy in the leaf
 * and intermediates (STI_CERT_POLICY), and CRLs signed as the STI-PA signs its own: by a
 * certificate that is not a CA, trusted explicitly (kns shaken crl-signer add).
 */
import { after, before, describe, test } from 'node:test'
import assert from 'node:assert/strict'
import { createPrivateKey, randomUUID } from 'node:crypto'
import { addCrlSigners, removeCrlSigner } from '../../src/caller/shaken/crl-signers.ts'
import { startHarness, type Harness } from '../helpers.ts'
import { b64json } from '../support/caller.ts'
import { startX5uServer, type X5uServer } from '../support/x5u-server.ts'
import type { LeafKind } from '../support/shaken-pki.ts'
import { sign } from 'node:crypto'

let x5u: X5uServer
const ORIG = '+12025550142'
const DEST = '+14155550199'

before(async () => {
  x5u = await startX5uServer()
})
after(async () => {
  await x5u?.close()
})

function passport(kind: LeafKind): string {
  const header = { alg: 'ES256', ppt: 'shaken', typ: 'passport', x5u: x5u.certUrl(kind) }
  const payload = { attest: 'A', dest: { tn: [DEST.slice(1)] }, iat: Math.floor(Date.now() / 1000), orig: { tn: ORIG.slice(1) }, origid: randomUUID() }
  const input = `${b64json(header)}.${b64json(payload)}`
  return `${input}.${sign('sha256', Buffer.from(input), { key: createPrivateKey(x5u.pki.leaves[kind].key), dsaEncoding: 'ieee-p1363' }).toString('base64url')}`
}

interface Answer { success: boolean; debug: { reason?: string; steps: Array<{ name: string; ok: boolean; detail?: string }> } }

async function withHarness(env: Record<string, string>, run: (verify: (kind: LeafKind) => Promise<Answer>, h: Harness) => Promise<void>): Promise<void> {
  const h = await startHarness({ STI_TRUST_ANCHORS: `${x5u.pki.dir}/root.pem`, X5U_ALLOW_PRIVATE: 'true', CALLER_TRUST: 'x5u', ...env }, { x5uTlsCa: x5u.pki.tls.ca })
  try {
    const key = await h.key({ scopes: ['caller'] })
    await run(async (kind) => {
      const res = await h.app.inject({ method: 'POST', url: '/numsys/call-signature-verification', headers: { 'x-api-key': key }, payload: { origTN: ORIG, destTN: DEST, jwt: passport(kind), debug: true } })
      assert.equal(res.statusCode, 200, res.body)
      return res.json()
    }, h)
  } finally {
    await h.close()
  }
}

const policyStep = (a: Answer) => a.debug.steps.find((s) => s.name === 'check_certificate_policy')

describe('STI_CERT_POLICY', () => {
  test('enforce (the default): a leaf without the policy, with another policy, or under an intermediate without it fails with CERT_POLICY', async () => {
    await withHarness({}, async (verify) => {
      assert.equal((await verify('spc')).success, true)
      for (const kind of ['noPolicy', 'otherPolicy', 'underNoPolicyCa'] as const) {
        const answer = await verify(kind)
        assert.equal(answer.success, false, kind)
        assert.match(answer.debug.reason!, /^CERT_POLICY: /, kind)
        assert.equal(policyStep(answer)?.ok, false)
      }
      assert.match((await verify('otherPolicy')).debug.reason!, /names 1\.3\.6\.1\.4\.1\.99999\.1, not the SHAKEN certificate policy/)
      assert.match((await verify('underNoPolicyCa')).debug.reason!, /Intermediate without policy has no certificatePolicies/)
    })
  })

  test('warn: verified, the step says what is missing; off: not looked at', async () => {
    await withHarness({ STI_CERT_POLICY: 'warn' }, async (verify) => {
      const answer = await verify('noPolicy')
      assert.equal(answer.success, true, answer.debug.reason)
      assert.match(policyStep(answer)!.detail!, /^warning \(STI_CERT_POLICY=warn\): .*no certificatePolicies/)
    })
    await withHarness({ STI_CERT_POLICY: 'off' }, async (verify) => {
      const answer = await verify('otherPolicy')
      assert.equal(answer.success, true, answer.debug.reason)
      assert.equal(policyStep(answer)!.detail, 'not checked (STI_CERT_POLICY=off)')
    })
  })

  test('a value that is none of off, warn, enforce stops the start', async () => {
    await assert.rejects(startHarness({ STI_CERT_POLICY: 'strict' }), /STI_CERT_POLICY/)
  })
})

describe('CRL signers (kns shaken crl-signer)', () => {
  test('STI_CRL=hard with the STI-PA-style CRL: refused until its signer is trusted, then revocation counts; removed, refused again', async () => {
    x5u.crl = 'indirect'
    try {
      await withHarness({ STI_CRL: 'hard' }, async (verify, h) => {
        const before = await verify('spc')
        assert.match(before.debug.reason!, /^CRL_UNAVAILABLE: .*trusted CRL signer/)
        const [signer] = await addCrlSigners(h.service.db, Buffer.from(x5u.pki.crlSigner))
        h.service.certificateTrust.crlSignerSet.invalidate() // what the change signal does in a server
        const trusted = await verify('spc')
        assert.equal(trusted.success, true, trusted.debug.reason)
        assert.match(trusted.debug.steps.find((s) => s.name === 'check_revocation')!.detail!, /^not revoked/)
        assert.match((await verify('revoked')).debug.reason!, /^CERT_REVOKED/)
        await removeCrlSigner(h.service.db, signer!.fingerprint)
        h.service.certificateTrust.crlSignerSet.invalidate()
        assert.match((await verify('spc')).debug.reason!, /^CRL_UNAVAILABLE/)
      })
    } finally {
      x5u.crl = 'direct'
    }
  })

  test('the change signal carries a new CRL signer to a running server', async () => {
    x5u.crl = 'indirect'
    try {
      await withHarness({ STI_CRL: 'hard' }, async (verify, h) => {
        assert.match((await verify('spc')).debug.reason!, /^CRL_UNAVAILABLE/)
        await addCrlSigners(h.service.db, Buffer.from(x5u.pki.crlSigner))
        const deadline = Date.now() + 5000
        let answer = await verify('spc')
        while (!answer.success && Date.now() < deadline) {
          await new Promise((resolve) => setTimeout(resolve, 50))
          answer = await verify('spc')
        }
        assert.equal(answer.success, true, answer.debug.reason)
      })
    } finally {
      x5u.crl = 'direct'
    }
  })
})
