/**
 * STI-AS: the operator's credential (kns shaken credential add), POST /stir/v1/signing, the
 * chain served for x5u; a signed Identity header verified by our own verifier and by jose.
 */
import { after, before, describe, test } from 'node:test'
import assert from 'node:assert/strict'
import { randomUUID, X509Certificate } from 'node:crypto'
import { createServer, type Server } from 'node:https'
import type { AddressInfo } from 'node:net'
import { compactVerify } from 'jose'
import { addCredential } from '../../src/caller/shaken/credentials.ts'
import { SealedBox } from '../../src/lib/sealed-box.ts'
import { startHarness, type Harness } from '../helpers.ts'
import { assertError } from '../support/kns.ts'
import { makeShakenPki, TEST_SPC, type ShakenPki } from '../support/shaken-pki.ts'

let pki: ShakenPki
let server: Server
let x5u: string
let h: Harness
let signer: string
let verifier: string

before(async () => {
  pki = makeShakenPki({ crlUrl: 'https://127.0.0.1:1/crl.der' })
  // The x5u host: an https server publishing the credential's chain, as the operator would.
  server = createServer({ key: pki.tls.key, cert: pki.tls.cert }, (req, res) => {
    if (req.url === '/shaken/spc.pem') return void res.writeHead(200, { 'cache-control': 'max-age=600' }).end(pki.leaves.spc.bundle)
    res.writeHead(404).end()
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  x5u = `https://127.0.0.1:${(server.address() as AddressInfo).port}/shaken/spc.pem`
  h = await startHarness({ STI_TRUST_ANCHORS: `${pki.dir}/root.pem`, X5U_ALLOW_PRIVATE: 'true', STI_CRL: 'off' }, { x5uTlsCa: pki.tls.ca })
  signer = await h.key({ scopes: ['signing'], vendor: 'Carrier SBC', signing: { credentials: ['carrier'], attest: ['A', 'B', 'C'], numbers: null } })
  verifier = await h.key({ scopes: ['caller'], vendor: 'Carrier SBC' })
})
after(async () => {
  await h?.close()
  server?.closeAllConnections()
  await new Promise((resolve) => server?.close(resolve))
  pki?.cleanup()
})

const box = () => new SealedBox(h.service.secret, 'shaken-credentials')
const signingRequest = (overrides: Record<string, unknown> = {}) => ({
  signingRequest: { orig: { tn: '12025550142' }, dest: { tn: ['14155550199'] }, attest: 'A', iat: Math.floor(Date.now() / 1000), origid: randomUUID(), ...overrides },
})
const sign = (body: unknown, key = signer) => h.app.inject({ method: 'POST', url: '/stir/v1/signing', headers: { 'x-api-key': key }, payload: body as object })

describe('signing credentials', () => {
  test('refused: a key that is not the certificate\'s, not P-256, a leaf without TNAuthList, an http or private x5u', async () => {
    const add = (over: Partial<{ name: string; keyPem: string; chainPem: string; x5u: string }>) =>
      addCredential(h.service.db, box(), { name: 'carrier', keyPem: pki.leaves.spc.key, chainPem: pki.leaves.spc.bundle, x5u: 'https://certs.carrier.example/spc.pem', ...over })
    await assert.rejects(add({ keyPem: pki.leaves.range.key }), /not the key of the first certificate/)
    await assert.rejects(add({ keyPem: pki.leaves.wrongCurve.key, chainPem: pki.leaves.wrongCurve.bundle }), /not EC P-256/)
    await assert.rejects(add({ keyPem: pki.leaves.noTnAuth.key, chainPem: pki.leaves.noTnAuth.bundle }), /no readable TNAuthList/)
    await assert.rejects(add({ x5u: 'http://certs.carrier.example/spc.pem' }), /x5u: only https/)
    await assert.rejects(add({ x5u: 'https://10.1.2.3/spc.pem' }), /x5u: 10\.1\.2\.3/)
    await assert.rejects(add({ name: 'Bad Name' }), /name/)
  })

  test('before any credential: 404; the key is stored sealed', async () => {
    assertError(await sign(signingRequest()), 404, 'NOT_FOUND')
    await addCredential(h.service.db, box(), { name: 'carrier', keyPem: pki.leaves.spc.key, chainPem: pki.leaves.spc.bundle, x5u }, { allowPrivate: true, allowHttp: false })
    h.service.shakenCredentials.invalidate() // what the change signal does in a server
    const row = await h.service.db.get<{ key_sealed: string }>('SELECT key_sealed FROM shaken_credentials WHERE name = $1', ['carrier'])
    const keyBody = pki.leaves.spc.key.split('\n').find((l) => l.length > 40)!
    assert.ok(!row!.key_sealed.includes(keyBody.slice(0, 20)) && !row!.key_sealed.includes('PRIVATE KEY'))
  })
})

describe('POST /stir/v1/signing', () => {
  test('signs: the Identity header verifies with jose (the leaf key) and with our verifier (x5u, SPC), both shapes', async () => {
    const answer = await sign(signingRequest())
    assert.equal(answer.statusCode, 200, answer.body)
    const identity = answer.json().signingResponse.identity as string
    assert.match(identity, new RegExp(`^[\\w-]+\\.[\\w-]+\\.[\\w-]+;info=<${x5u.replace(/[.?]/g, '\\$&')}>;alg=ES256;ppt=shaken$`))
    const jws = identity.split(';')[0]!
    const { payload, protectedHeader } = await compactVerify(jws, new X509Certificate(pki.leaves.spc.cert).publicKey)
    assert.deepEqual(protectedHeader, { alg: 'ES256', ppt: 'shaken', typ: 'passport', x5u })
    const claims = JSON.parse(new TextDecoder().decode(payload)) as Record<string, unknown>
    assert.deepEqual(Object.keys(claims), ['attest', 'dest', 'iat', 'orig', 'origid'], 'lexicographic order')
    const verified = await h.app.inject({ method: 'POST', url: '/numsys/call-signature-verification', headers: { 'x-api-key': verifier },
      payload: { origTN: '+12025550142', destTN: '+14155550199', identity } })
    assert.equal(verified.json().success, true, verified.body)
    assert.equal(verified.json().trust, 'x5u')
    assert.equal(verified.json().spc, TEST_SPC)
    const atis = await h.app.inject({ method: 'POST', url: '/stir/v1/verification', headers: { 'x-api-key': verifier },
      payload: { verificationRequest: { from: { tn: '12025550142' }, to: { tn: ['14155550199'] }, time: Math.floor(Date.now() / 1000), identity } } })
    assert.deepEqual(atis.json(), { verificationResponse: { verstat: 'TN-Validation-Passed' } })
  })

  test('refused: without the signing scope, an iat far from now, a malformed origid, an unknown credential', async () => {
    assertError(await sign(signingRequest(), verifier), 403, 'FORBIDDEN')
    assertError(await sign(signingRequest({ iat: Math.floor(Date.now() / 1000) - 3600 })), 400, 'INVALID_REQUEST')
  })

  test('iat: never one our own verifier refuses (issue 31): at most 5 s ahead (IAT_IN_FUTURE), no older than CALL_MAX_AGE_S (IAT_TOO_OLD)', async () => {
    const now = Math.floor(Date.now() / 1000)
    for (const ahead of [6, 60, 299]) assertError(await sign(signingRequest({ iat: now + ahead })), 400, 'INVALID_REQUEST', 'signingRequest.iat')
    assertError(await sign(signingRequest({ iat: now - 120 })), 400, 'INVALID_REQUEST', 'signingRequest.iat')
    // Within the bounds: what is signed verifies, at the edges too.
    for (const iat of [now + 4, now - 50]) {
      const answer = await sign(signingRequest({ iat }))
      assert.equal(answer.statusCode, 200, answer.body)
      const verified = await h.app.inject({ method: 'POST', url: '/numsys/call-signature-verification', headers: { 'x-api-key': verifier },
        payload: { origTN: '+12025550142', destTN: '+14155550199', identity: answer.json().signingResponse.identity } })
      assert.equal(verified.json().success, true, `iat ${iat - now}: ${verified.body}`)
    }
    assertError(await sign(signingRequest({ origid: 'not-a-uuid' })), 400, 'INVALID_REQUEST')
    // Not bound to this key: refused whether it exists or not (the answer does not tell).
    assertError(await sign(signingRequest({ credential: 'nope' })), 403, 'FORBIDDEN')
  })

  test('GET /shaken/certs/<name>.pem serves the public chain, cacheable; nothing else', async () => {
    const res = await h.app.inject({ method: 'GET', url: '/shaken/certs/carrier.pem' })
    assert.equal(res.statusCode, 200)
    assert.equal(res.headers['content-type'], 'application/x-pem-file')
    assert.match(String(res.headers['cache-control']), /max-age=3600/)
    assert.equal(res.body, new X509Certificate(pki.leaves.spc.cert).toString() + new X509Certificate(pki.intermediate).toString())
    assert.doesNotMatch(res.body, /PRIVATE/)
    assert.equal((await h.app.inject({ method: 'GET', url: '/shaken/certs/other.pem' })).statusCode, 404)
    assert.equal((await h.app.inject({ method: 'GET', url: '/shaken/certs/carrier.key' })).statusCode, 400)
  })
})
