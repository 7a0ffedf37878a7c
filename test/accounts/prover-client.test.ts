/**
 * The zkLogin prover client (src/accounts/prover-client.ts) against a local HTTP server that
 * plays the prover: what it sends, and how each kind of answer comes back (a proof, a refusal,
 * an outage), with the token and the salt in no error.
 */
import { after, before, beforeEach, describe, test } from 'node:test'
import assert from 'node:assert/strict'
import { randomBytes, randomUUID } from 'node:crypto'
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { Ed25519Keypair } from '@mysten/sui/keypairs/ed25519'
import { getExtendedEphemeralPublicKey } from '@mysten/sui/zklogin'
import { requestProof, MAX_PROVER_ANSWER_BYTES, type ProverRequest, type ZkLoginProof } from '../../src/accounts/prover-client.ts'
import { KnsError, ProofRefusedError, ProverUnavailableError } from '../../src/errors.ts'
import { issBase64Details } from '../support/zklogin-prover-stub.ts'

const b64url = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url')
const header = b64url({ alg: 'RS256', kid: 'kid-1', typ: 'JWT' })
const payload = b64url({ iss: 'https://kns.test/oidc', aud: 'kns', sub: randomUUID(), nonce: 'x'.repeat(27), iat: 1 })
const jwt = `${header}.${payload}.${randomBytes(256).toString('base64url')}`
const request: ProverRequest = {
  jwt,
  extendedEphemeralPublicKey: getExtendedEphemeralPublicKey(new Ed25519Keypair().getPublicKey()),
  maxEpoch: 110,
  jwtRandomness: BigInt('0x' + randomBytes(16).toString('hex')).toString(),
  salt: BigInt('0x' + randomBytes(16).toString('hex')).toString(),
  keyClaimName: 'sub',
}
const field = () => BigInt('0x' + randomBytes(31).toString('hex')).toString()
const goodProof = (): ZkLoginProof => ({
  proofPoints: { a: [field(), field(), '1'], b: [[field(), field()], [field(), field()], ['1', '0']], c: [field(), field(), '1'] },
  issBase64Details: issBase64Details(payload),
  headerBase64: header,
})

type Handler = (req: IncomingMessage, body: string, res: ServerResponse) => void
let handler: Handler
let server: Server
let base: string
const hits: string[] = []

before(async () => {
  server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (chunk: Buffer) => chunks.push(chunk))
    req.on('end', () => {
      hits.push(req.url ?? '')
      handler(req, Buffer.concat(chunks).toString('utf8'), res)
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
})
after(async () => {
  server.closeAllConnections()
  await new Promise((resolve) => server.close(resolve))
})
beforeEach(() => { hits.length = 0 })

const json = (res: ServerResponse, status: number, body: unknown) => {
  res.writeHead(status, { 'content-type': 'application/json' })
  res.end(typeof body === 'string' ? body : JSON.stringify(body))
}

/** The error requestProof rejects with, checked to carry neither the token (nor a part of it) nor the salt. */
async function failure(options: { timeoutMs?: number; signal?: AbortSignal; url?: string } = {}): Promise<KnsError> {
  const err = await requestProof(options.url ?? `${base}/v1`, request, { timeoutMs: options.timeoutMs ?? 2000, ...(options.signal ? { signal: options.signal } : {}) })
    .then(() => assert.fail('expected a rejection'), (e: unknown) => e)
  assert.ok(err instanceof KnsError, String(err))
  const everything = `${err.message} ${JSON.stringify(err)} ${String(err.cause ?? '')} ${err.stack ?? ''}`
  for (const secret of [jwt, header, payload, jwt.split('.')[2]!, request.salt, request.jwtRandomness]) {
    assert.ok(!everything.includes(secret), `the error carries a secret: ${err.message}`)
  }
  return err
}

describe('requestProof: a proof', () => {
  test('POSTs the six fields as JSON to the URL as given, and returns the validated proof', async () => {
    const proof = goodProof()
    let seen: { method?: string; type?: string; body?: unknown } = {}
    handler = (req, body, res) => {
      seen = { method: req.method, type: req.headers['content-type'], body: JSON.parse(body) }
      json(res, 200, { ...proof, extra: 'ignored' })
    }
    const answer = await requestProof(`${base}/v1`, request, { timeoutMs: 2000 })
    assert.deepEqual(answer, proof)
    assert.deepEqual(hits, ['/v1'])
    assert.equal(seen.method, 'POST')
    assert.match(seen.type ?? '', /^application\/json/)
    assert.deepEqual(seen.body, { ...request })
    assert.equal(typeof (seen.body as { maxEpoch: unknown }).maxEpoch, 'number')
  })
})

describe('requestProof: the prover says no (4xx)', () => {
  test('400: ProofRefusedError (422 PROOF_REFUSED) with the prover\'s message, the token, its parts and the salt cut out', async () => {
    handler = (_req, _body, res) => json(res, 400, {
      error: `Invalid nonce in ${jwt} (payload ${payload}, decoded ${Buffer.from(payload, 'base64url').toString()}) salt=${request.salt}\u0000\n${'x'.repeat(400)}`,
    })
    const err = await failure()
    assert.ok(err instanceof ProofRefusedError)
    assert.equal(err.code, 'PROOF_REFUSED')
    assert.equal(err.status, 422)
    assert.match(err.message, /^the zkLogin prover refused the inputs \(HTTP 400\): Invalid nonce in \[redacted\]/)
    assert.doesNotMatch(err.message, /[\u0000-\u001f]/)
    assert.ok(err.message.length < 300, err.message)
  })

  test('a plain-text 4xx is refused with its text; a JWT-shaped string it echoes is cut out too', async () => {
    const other = `${b64url({ alg: 'RS256' })}.${b64url({ sub: 'someone' })}.${randomBytes(64).toString('base64url')}`
    handler = (_req, _body, res) => { res.writeHead(422, { 'content-type': 'text/plain' }); res.end(`bad token ${other}`) }
    const err = await failure()
    assert.ok(err instanceof ProofRefusedError)
    assert.equal(err.message, 'the zkLogin prover refused the inputs (HTTP 422): bad token [redacted]')
  })

  for (const status of [401, 403, 404, 405, 408, 429]) {
    test(`${status} says nothing about the inputs: ProverUnavailableError, not a refusal`, async () => {
      handler = (_req, _body, res) => json(res, status, { error: 'no' })
      const err = await failure()
      assert.ok(err instanceof ProverUnavailableError, err.message)
      assert.equal(err.status, 503)
    })
  }
})

describe('requestProof: the prover cannot be asked', () => {
  test('500: ProverUnavailableError (503 PROVER_UNAVAILABLE)', async () => {
    handler = (_req, _body, res) => json(res, 500, { error: 'prover crashed' })
    const err = await failure()
    assert.ok(err instanceof ProverUnavailableError)
    assert.equal(err.code, 'PROVER_UNAVAILABLE')
    assert.match(err.message, /HTTP 500: prover crashed/)
  })

  test('no answer within the deadline (headers never come): ProverUnavailableError at the deadline', async () => {
    handler = () => { /* never answers */ }
    const started = Date.now()
    const err = await failure({ timeoutMs: 300 })
    assert.ok(err instanceof ProverUnavailableError)
    assert.match(err.message, /did not answer within 300 ms/)
    assert.ok(Date.now() - started < 2000)
  })

  test('an answer whose body stalls: the deadline covers the body too', async () => {
    handler = (_req, _body, res) => { res.writeHead(200, { 'content-type': 'application/json' }); res.write('{"proofPoints":') }
    const err = await failure({ timeoutMs: 300 })
    assert.ok(err instanceof ProverUnavailableError)
    assert.match(err.message, /did not answer within 300 ms/)
  })

  test(`a body over ${MAX_PROVER_ANSWER_BYTES} bytes: ProverUnavailableError, the rest not read`, async () => {
    handler = (_req, _body, res) => json(res, 200, { ...goodProof(), padding: 'x'.repeat(MAX_PROVER_ANSWER_BYTES) })
    const err = await failure()
    assert.ok(err instanceof ProverUnavailableError)
    assert.match(err.message, /over 65536 bytes/)
  })

  for (const status of [301, 302, 307, 308]) {
    test(`a redirect (${status}) is not followed: ProverUnavailableError, the target never asked`, async () => {
      handler = (req, _body, res) => {
        if (req.url === '/moved') return json(res, 200, goodProof())
        res.writeHead(status, { location: '/moved' }).end()
      }
      const err = await failure()
      assert.ok(err instanceof ProverUnavailableError)
      assert.match(err.message, /redirect .* not followed/)
      assert.deepEqual(hits, ['/v1'])
    })
  }

  test('nothing listening: ProverUnavailableError naming the network error, not the URL', async () => {
    const closed = createServer()
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve))
    const port = (closed.address() as AddressInfo).port
    await new Promise((resolve) => closed.close(resolve))
    const err = await failure({ url: `http://127.0.0.1:${port}/v1?key=secret-key` })
    assert.ok(err instanceof ProverUnavailableError)
    assert.match(err.message, /could not be reached \(ECONNREFUSED\)/)
    assert.doesNotMatch(err.message, /secret-key|127\.0\.0\.1/)
  })

  test('the caller\'s own abort rejects with the caller\'s reason, not as the prover\'s fault', async () => {
    handler = () => { /* never answers */ }
    const controller = new AbortController()
    const reason = new Error('client went away')
    setTimeout(() => controller.abort(reason), 50)
    const err = await requestProof(`${base}/v1`, request, { timeoutMs: 5000, signal: controller.signal }).catch((e: unknown) => e)
    assert.equal(err, reason)
  })
})

describe('requestProof: a malformed proof is the prover\'s fault (ProverUnavailableError)', () => {
  const cases: Array<[string, (p: ZkLoginProof) => unknown]> = [
    ['not JSON', () => '{"proofPoints": '],
    ['an array', () => []],
    ['a with 2 items', (p) => ({ ...p, proofPoints: { ...p.proofPoints, a: p.proofPoints.a.slice(0, 2) } })],
    ['c with 4 items', (p) => ({ ...p, proofPoints: { ...p.proofPoints, c: [...p.proofPoints.c, '1'] } })],
    ['b with 2 pairs', (p) => ({ ...p, proofPoints: { ...p.proofPoints, b: p.proofPoints.b.slice(1) } })],
    ['a pair of 3 in b', (p) => ({ ...p, proofPoints: { ...p.proofPoints, b: [['1', '2', '3'], ...p.proofPoints.b.slice(1)] } })],
    ['a hex number', (p) => ({ ...p, proofPoints: { ...p.proofPoints, a: ['0x1f', '2', '1'] } })],
    ['a number, not a string', (p) => ({ ...p, proofPoints: { ...p.proofPoints, c: [1, '2', '1'] } })],
    ['a leading zero', (p) => ({ ...p, proofPoints: { ...p.proofPoints, a: ['01', '2', '1'] } })],
    ['a value past the field', (p) => ({ ...p, proofPoints: { ...p.proofPoints, a: ['9'.repeat(77), '2', '1'] } })],
    ['indexMod4 4', (p) => ({ ...p, issBase64Details: { ...p.issBase64Details, indexMod4: 4 } })],
    ['indexMod4 not an integer', (p) => ({ ...p, issBase64Details: { ...p.issBase64Details, indexMod4: 1.5 } })],
    ['indexMod4 off by one', (p) => ({ ...p, issBase64Details: { ...p.issBase64Details, indexMod4: (p.issBase64Details.indexMod4 + 1) % 4 } })],
    ['an iss slice not of this token', (p) => ({ ...p, issBase64Details: { value: b64url('"iss":"https://evil.example",').slice(0, 20), indexMod4: 0 } })],
    ['an iss slice of the token that is not the iss claim', (p) => ({ ...p, issBase64Details: { value: payload.slice(40, 60), indexMod4: 0 } })],
    ['no issBase64Details', (p) => ({ proofPoints: p.proofPoints, headerBase64: p.headerBase64 })],
    ['a header that is not Base64URL', (p) => ({ ...p, headerBase64: `${header}=` })],
    ['a header over 279 characters', (p) => ({ ...p, headerBase64: 'e'.repeat(280) })],
    ['the header of another token', (p) => ({ ...p, headerBase64: b64url({ alg: 'RS256', kid: 'kid-2', typ: 'JWT' }) })],
  ]
  for (const [name, mutate] of cases) {
    test(name, async () => {
      handler = (_req, _body, res) => json(res, 200, mutate(goodProof()) as object)
      const err = await failure()
      assert.ok(err instanceof ProverUnavailableError, err.message)
      assert.match(err.message, /malformed proof/)
    })
  }
})
