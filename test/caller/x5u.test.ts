/**
 * Caller verification with SHAKEN certificates (x5u): a test PKI made by openssl, served over
 * https on loopback with its own TLS root, PASSporTs signed by jose. Every check failing alone.
 */
import { after, before, describe, test } from 'node:test'
import assert from 'node:assert/strict'
import { createPrivateKey, randomUUID, sign, type KeyObject } from 'node:crypto'
import { createServer, type Server } from 'node:https'
import type { AddressInfo } from 'node:net'
import { CompactSign } from 'jose'
import { addTrustAnchors } from '../../src/caller/shaken/trust-anchors.ts'
import { startHarness, type Harness } from '../helpers.ts'
import { makeShakenPki, TEST_RANGE, TEST_SPC, type LeafKind, type ShakenPki } from '../support/shaken-pki.ts'

let pki: ShakenPki
let server: Server
let base: string
let h: Harness
let key: string
let served = 0
let crlAvailable = true

const ORIG = '+12025550142'
const DEST = '+14155550199'

before(async () => {
  // The CRL's URL must be known before the certificates name it: a port chosen first.
  server = createServer({ key: '', cert: '' })
  const port = await new Promise<number>((resolve) => {
    const probe = createServer()
    probe.listen(0, '127.0.0.1', () => { const p = (probe.address() as AddressInfo).port; probe.close(() => resolve(p)) })
  })
  base = `https://127.0.0.1:${port}`
  pki = makeShakenPki({ crlUrl: `${base}/crl.der` })
  server = createServer({ key: pki.tls.key, cert: pki.tls.cert }, (req, res) => {
    served++
    const url = (req.url ?? '').split('?')[0]!
    const cert = /^\/certs\/(\w+)\.pem$/.exec(url)
    const redirect = /^\/redirect\/(\d)\/(\w+)$/.exec(url)
    if (cert && cert[1]! in pki.leaves) return void res.writeHead(200, { 'content-type': 'application/x-pem-file', 'cache-control': 'max-age=600' }).end(pki.leaves[cert[1] as LeafKind].bundle)
    if (redirect) {
      const hops = Number(redirect[1])
      return void res.writeHead(302, { location: hops <= 1 ? `/certs/${redirect[2]}.pem` : `/redirect/${hops - 1}/${redirect[2]}` }).end()
    }
    if (url === '/crl.der') return crlAvailable ? void res.writeHead(200, { 'content-type': 'application/pkix-crl' }).end(pki.crl) : void res.writeHead(503).end()
    if (url === '/garbage.pem') return void res.writeHead(200).end('-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydA==\n-----END CERTIFICATE-----\n')
    if (url === '/huge.pem') return void res.writeHead(200).end(Buffer.alloc(200 * 1024, 65))
    res.writeHead(404).end()
  })
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve))
  h = await startHarness({ STI_TRUST_ANCHORS: `${pki.dir}/root.pem`, X5U_ALLOW_PRIVATE: 'true' }, { x5uTlsCa: pki.tls.ca })
  key = await h.key({ scopes: ['caller'] })
})
after(async () => {
  await h?.close()
  server?.closeAllConnections()
  await new Promise((resolve) => server?.close(resolve))
  pki?.cleanup()
})

async function passport(signer: KeyObject | string, x5u: string, claims: Record<string, unknown> = {}, header: Record<string, unknown> = {}): Promise<string> {
  const privateKey = typeof signer === 'string' ? createPrivateKey(signer) : signer
  const payload = { attest: 'A', dest: { tn: [DEST.slice(1)] }, iat: Math.floor(Date.now() / 1000), orig: { tn: ORIG.slice(1) }, origid: randomUUID(), ...claims }
  const protectedHeader = { alg: 'ES256', typ: 'passport', ppt: 'shaken', x5u, ...header }
  if (privateKey.asymmetricKeyDetails?.namedCurve !== 'prime256v1') {
    // jose will not sign ES256 with another curve; a forger would: signed by hand.
    const input = `${Buffer.from(JSON.stringify(protectedHeader)).toString('base64url')}.${Buffer.from(JSON.stringify(payload)).toString('base64url')}`
    return `${input}.${sign('sha256', Buffer.from(input), { key: privateKey, dsaEncoding: 'ieee-p1363' }).toString('base64url')}`
  }
  return new CompactSign(new TextEncoder().encode(JSON.stringify(payload))).setProtectedHeader(protectedHeader).sign(privateKey)
}

async function verify(jwt: string, origTN = ORIG, harness = h, apiKey = key): Promise<Record<string, unknown> & { debug: { reason?: string; steps: Array<{ name: string; ok: boolean; detail?: string }> } }> {
  const res = await harness.app.inject({ method: 'POST', url: '/numsys/call-signature-verification', headers: { 'x-api-key': apiKey }, payload: { origTN, destTN: DEST, jwt, debug: true } })
  assert.equal(res.statusCode, 200, res.body)
  return res.json()
}

const codeOf = (answer: { debug: { reason?: string } }) => answer.debug.reason?.split(':')[0]

describe('x5u: the certificate trust source', () => {
  test('an SPC certificate chaining to the anchor: verified, trust x5u, SPC and subject reported', async () => {
    const answer = await verify(await passport(pki.leaves.spc.key, `${base}/certs/spc.pem`))
    assert.equal(answer.success, true, answer.debug.reason)
    assert.equal(answer.trust, 'x5u')
    assert.equal(answer.attestation, 'A')
    assert.equal(answer.spc, TEST_SPC)
    assert.match(String(answer.subject), /CN=SHAKEN spc/)
    assert.deepEqual(answer.debug.steps.map((s) => s.name), ['check_jws_format', 'check_header', 'check_claims', 'fetch_certificate',
      'check_certificate_chain', 'check_certificate_policy', 'check_tn_authorization', 'check_revocation', 'verify_signature'])
    assert.match(answer.debug.steps.find((s) => s.name === 'check_revocation')!.detail!, /not revoked/)
  })

  test('a delegate certificate (TN range): the calling number inside passes, outside fails', async () => {
    assert.equal((await verify(await passport(pki.leaves.range.key, `${base}/certs/range.pem`))).success, true)
    const outside = `+${BigInt(TEST_RANGE.start) + BigInt(TEST_RANGE.count)}`
    const answer = await verify(await passport(pki.leaves.range.key, `${base}/certs/range.pem`, { orig: { tn: outside.slice(1) } }), outside)
    assert.equal(codeOf(answer), 'TN_NOT_AUTHORIZED')
  })

  const failures: Array<[LeafKind, string]> = [
    ['noTnAuth', 'TN_NOT_AUTHORIZED'], ['badTnAuth', 'TN_NOT_AUTHORIZED'], ['expired', 'CERT_EXPIRED'], ['wrongCurve', 'CERT_KEY_UNSUITABLE'],
    ['caTrue', 'CERT_KEY_UNSUITABLE'], ['noDigitalSignature', 'CERT_KEY_UNSUITABLE'], ['untrusted', 'CERT_UNTRUSTED'], ['revoked', 'CERT_REVOKED'],
    ['pastPathLen', 'CERT_UNTRUSTED'], ['spcUnderRangeCa', 'CERT_UNTRUSTED'],
  ]
  for (const [kind, code] of failures) {
    test(`a ${kind} leaf fails with ${code}, at its own step`, async () => {
      const answer = await verify(await passport(pki.leaves[kind].key, `${base}/certs/${kind}.pem`))
      assert.equal(answer.success, false)
      assert.equal(codeOf(answer), code, answer.debug.reason)
    })
  }

  test('a delegate certificate within its CA\'s TN range passes (RFC 9060)', async () => {
    const answer = await verify(await passport(pki.leaves.rangeUnderRangeCa.key, `${base}/certs/rangeUnderRangeCa.pem`))
    assert.equal(answer.success, true, answer.debug.reason)
  })

  test('a signature by another key than the certificate\'s: BAD_SIGNATURE', async () => {
    const answer = await verify(await passport(pki.leaves.range.key, `${base}/certs/spc.pem`))
    assert.equal(codeOf(answer), 'BAD_SIGNATURE')
  })

  test('x5u that cannot be had: 404, unreachable, not a certificate, too large, too many redirects', async () => {
    const sign = (url: string) => passport(pki.leaves.spc.key, url)
    assert.equal(codeOf(await verify(await sign(`${base}/certs/missing.pem`))), 'X5U_FETCH_FAILED')
    assert.equal(codeOf(await verify(await sign('https://127.0.0.1:1/cert.pem'))), 'X5U_FETCH_FAILED')
    assert.equal(codeOf(await verify(await sign(`${base}/garbage.pem`))), 'CERT_INVALID')
    assert.equal(codeOf(await verify(await sign(`${base}/huge.pem`))), 'X5U_FETCH_FAILED')
    assert.equal((await verify(await sign(`${base}/redirect/2/spc`))).success, true, 'two redirects are followed')
    assert.equal(codeOf(await verify(await sign(`${base}/redirect/3/spc`))), 'X5U_FETCH_FAILED')
    assert.equal(codeOf(await verify(await sign(`http://127.0.0.1:1/cert.pem`))), 'X5U_NOT_ALLOWED', 'http without X5U_ALLOW_HTTP')
  })

  test('1 000 concurrent verifications naming one cold x5u: one fetch', async () => {
    const url = `${base}/certs/spc.pem?cold=${randomUUID()}`
    const before = h.service.certificateTrust.certificates.fetches
    const jwt = await passport(pki.leaves.spc.key, url)
    // The service's verifier, not HTTP: 1 000 requests at once from one client are more than
    // admission lets in (64 in flight, the rest shed as a standing queue), and this is about the fetch.
    const verdicts = await Promise.all(Array.from({ length: 1000 }, () => h.service.callVerifier.verify({ origTN: ORIG, destTN: DEST, jwt })))
    const failed = verdicts.find((v) => !v.success)
    assert.equal(failed, undefined, JSON.stringify(failed))
    assert.equal(h.service.certificateTrust.certificates.fetches - before, 1)
  })
})

describe('trust order, anchors in the database, revocation modes', () => {
  test('CALLER_TRUST=ledger: x5u is never fetched; the ledger decides alone', async () => {
    const ledgerOnly = await startHarness({ CALLER_TRUST: 'ledger', STI_TRUST_ANCHORS: `${pki.dir}/root.pem`, X5U_ALLOW_PRIVATE: 'true' }, { x5uTlsCa: pki.tls.ca })
    try {
      const before = served
      const answer = await verify(await passport(pki.leaves.spc.key, `${base}/certs/spc.pem`), ORIG, ledgerOnly, await ledgerOnly.key({ scopes: ['caller'] }))
      assert.equal(codeOf(answer), 'NO_TOKEN')
      assert.equal(served, before)
    } finally {
      await ledgerOnly.close()
    }
  })

  test('anchors kept in the database (kns shaken trust add) count at once; STI_CRL=hard needs a CRL', async () => {
    const other = await startHarness({ X5U_ALLOW_PRIVATE: 'true', STI_CRL: 'hard' }, { x5uTlsCa: pki.tls.ca })
    try {
      const apiKey = await other.key({ scopes: ['caller'] })
      const jwt = await passport(pki.leaves.spc.key, `${base}/certs/spc.pem`)
      assert.equal(codeOf(await verify(jwt, ORIG, other, apiKey)), 'CERT_UNTRUSTED')
      await addTrustAnchors(other.service.db, Buffer.from(pki.root))
      other.service.certificateTrust.anchors.invalidate() // what the change signal does in a server
      assert.equal((await verify(jwt, ORIG, other, apiKey)).success, true)
      crlAvailable = false
      const fresh = await startHarness({ X5U_ALLOW_PRIVATE: 'true', STI_CRL: 'hard', STI_TRUST_ANCHORS: `${pki.dir}/root.pem` }, { x5uTlsCa: pki.tls.ca })
      try {
        assert.equal(codeOf(await verify(jwt, ORIG, fresh, await fresh.key({ scopes: ['caller'] }))), 'CRL_UNAVAILABLE')
      } finally {
        await fresh.close()
      }
    } finally {
      crlAvailable = true
      await other.close()
    }
  })
})

describe('SSRF: x5u is attacker-controlled', () => {
  test('loopback, private, metadata and a name resolving to loopback are refused without a connection', async () => {
    const strict = await startHarness({ STI_TRUST_ANCHORS: `${pki.dir}/root.pem` })
    try {
      const apiKey = await strict.key({ scopes: ['caller'] })
      const before = served
      for (const url of [`${base}/certs/spc.pem`, 'https://10.0.0.1/cert.pem', 'https://169.254.169.254/latest/meta-data', `https://localhost:${new URL(base).port}/certs/spc.pem`]) {
        const answer = await verify(await passport(pki.leaves.spc.key, url), ORIG, strict, apiKey)
        assert.equal(codeOf(answer), 'X5U_NOT_ALLOWED', `${url}: ${answer.debug.reason}`)
        // A name's resolution is never told to the caller: only that the address is not allowed.
        if (url.includes('localhost')) assert.doesNotMatch(JSON.stringify(answer), /127\.0\.0\.1|::1/)
      }
      assert.equal(served, before, 'no request reached the server')
    } finally {
      await strict.close()
    }
  })
})

describe('SIP-shaped input and output', () => {
  const identityOf = (jwt: string, params: string) => `${jwt}${params}`

  async function call(payload: Record<string, unknown>, harness = h, apiKey = key) {
    return harness.app.inject({ method: 'POST', url: '/numsys/call-signature-verification', headers: { 'x-api-key': apiKey }, payload: { origTN: ORIG, destTN: DEST, ...payload } })
  }

  test('the Identity header verbatim: verified, TN-Validation-Passed; info, alg and ppt must agree with the PASSporT', async () => {
    const x5u = `${base}/certs/spc.pem`
    const jwt = await passport(pki.leaves.spc.key, x5u)
    const ok = await call({ identity: identityOf(jwt, `;info=<${x5u}>;alg=ES256;ppt="shaken";x-extension`) })
    assert.equal(ok.statusCode, 200, ok.body)
    assert.equal(ok.json().success, true)
    assert.equal(ok.json().verstat, 'TN-Validation-Passed')
    assert.equal(ok.json().sipReason, undefined)
    const otherInfo = await call({ identity: identityOf(jwt, `;info=<${base}/certs/range.pem>;alg=ES256;ppt=shaken`), debug: true })
    assert.equal(otherInfo.json().sipReason, '436 Bad Identity Info')
    assert.match(otherInfo.json().debug.reason, /^IDENTITY_INFO_MISMATCH/)
    const badAlg = await call({ identity: identityOf(jwt, `;info=<${x5u}>;alg=RS256`), debug: true })
    assert.equal(badAlg.json().sipReason, '438 Invalid Identity Header')
    assert.match(badAlg.json().debug.reason, /^BAD_IDENTITY_HEADER/)
    assert.equal((await call({ identity: identityOf(jwt, ';info=no-brackets') })).json().sipReason, '438 Invalid Identity Header')
  })

  test('exactly one of jwt and identity', async () => {
    const jwt = await passport(pki.leaves.spc.key, `${base}/certs/spc.pem`)
    assert.equal((await call({ jwt, identity: jwt })).statusCode, 400)
    assert.equal((await call({})).statusCode, 400)
  })

  test('verstat and the RFC 8224 reason of each kind of failure', async () => {
    const x5u = `${base}/certs/spc.pem`
    const stale = await call({ jwt: await passport(pki.leaves.spc.key, x5u, { iat: Math.floor(Date.now() / 1000) - 3600 }) })
    assert.deepEqual([stale.json().verstat, stale.json().sipReason], ['TN-Validation-Failed', '403 Stale Date'])
    const untrusted = await call({ jwt: await passport(pki.leaves.untrusted.key, `${base}/certs/untrusted.pem`) })
    assert.deepEqual([untrusted.json().verstat, untrusted.json().sipReason], ['TN-Validation-Failed', '437 Unsupported Credential'])
    const missing = await call({ jwt: await passport(pki.leaves.spc.key, `${base}/certs/missing.pem`) })
    assert.equal(missing.json().sipReason, '436 Bad Identity Info')
    const forged = await call({ jwt: await passport(pki.leaves.range.key, x5u) })
    assert.equal(forged.json().sipReason, '438 Invalid Identity Header')
    const x5uOnly = await startHarness({ CALLER_TRUST: 'x5u' })
    try {
      const noX5u = await passport(pki.leaves.spc.key, x5u, {}, { x5u: undefined, kid: 'some-key' })
      const answer = await call({ jwt: noX5u }, x5uOnly, await x5uOnly.key({ scopes: ['caller'] }))
      assert.deepEqual([answer.json().verstat, answer.json().sipReason], ['No-TN-Validation', '437 Unsupported Credential'])
    } finally {
      await x5uOnly.close()
    }
  })

  test('POST /stir/v1/verification (ATIS-1000082): verificationRequest -> verificationResponse', async () => {
    const x5u = `${base}/certs/spc.pem`
    const identity = `${await passport(pki.leaves.spc.key, x5u)};info=<${x5u}>;alg=ES256;ppt=shaken`
    const now = Math.floor(Date.now() / 1000)
    const ask = (request: Record<string, unknown>, apiKey = key) =>
      h.app.inject({ method: 'POST', url: '/stir/v1/verification', headers: { 'x-api-key': apiKey }, payload: { verificationRequest: request } })
    const passed = await ask({ from: { tn: ORIG.slice(1) }, to: { tn: [DEST.slice(1)] }, time: now, identity })
    assert.equal(passed.statusCode, 200, passed.body)
    assert.deepEqual(passed.json(), { verificationResponse: { verstat: 'TN-Validation-Passed' } })
    const failed = await ask({ from: { tn: '12025550199' }, to: { tn: [DEST.slice(1)] }, time: now, identity })
    assert.deepEqual(failed.json(), { verificationResponse: { verstat: 'TN-Validation-Failed', reasoncode: 438, reasontext: 'Invalid Identity Header' } })
    assert.equal((await ask({ from: { tn: ORIG }, to: { tn: [DEST] }, time: now - 3600, identity })).statusCode, 400, 'time far from the clock')
    assert.equal((await ask({ from: { tn: ORIG }, to: { tn: [] }, time: now, identity })).statusCode, 400)
    const noScope = await h.key({ scopes: ['approvals'] })
    assert.equal((await ask({ from: { tn: ORIG }, to: { tn: [DEST] }, time: now, identity }, noScope)).statusCode, 403)
  })
})
