/**
 * The fake zkLogin prover (test/support/zklogin-prover-stub.ts) through the service's prover
 * client: a proof from a real RS256 id_token becomes a zkLogin signature the strict Sui stub
 * verifies (the issBase64Details computed at every offset the claim can have), and each input
 * the real prover refuses is refused (ProofRefusedError with the reason).
 */
import { after, before, describe, test } from 'node:test'
import assert from 'node:assert/strict'
import { createHmac, generateKeyPairSync, randomBytes, randomUUID, sign, type KeyObject } from 'node:crypto'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { JWK } from 'jose'
import { Ed25519Keypair } from '@mysten/sui/keypairs/ed25519'
import { parseSerializedSignature } from '@mysten/sui/cryptography'
import { toBase64 } from '@mysten/sui/utils'
import {
  genAddressSeed, generateNonce, generateRandomness, getExtendedEphemeralPublicKey, getZkLoginSignature, jwtToAddress,
} from '@mysten/sui/zklogin'
import { requestProof, type ProverRequest } from '../../src/accounts/prover-client.ts'
import { ProofRefusedError, ProverUnavailableError } from '../../src/errors.ts'
import { startSuiGraphqlStub, type SuiGraphqlStub } from '../ledger/sui-graphql-stub.ts'
import { issBase64Details, startZkLoginProverStub, type ZkLoginProverStub } from '../support/zklogin-prover-stub.ts'

const ISS = 'https://kns.test/oidc'
const AUD = 'kns'
const KID = 'kns-key-1'
const MAX_EPOCH = 110
const b64url = (s: string | Buffer) => Buffer.from(s).toString('base64url')

function rsaKey(kid: string): { privateKey: KeyObject; jwk: JWK } {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 })
  return { privateKey, jwk: { ...publicKey.export({ format: 'jwk' }), kid, alg: 'RS256', use: 'sig' } }
}
const provider = rsaKey(KID)
const stranger = rsaKey(KID)

/** An id_token with exactly this payload text, signed RS256 (or as `alg` says) by `key`. */
function idToken(payload: string | Record<string, unknown>, options: { key?: KeyObject; kid?: string; alg?: string; headerPad?: number } = {}): string {
  const header = b64url(JSON.stringify({ alg: options.alg ?? 'RS256', kid: options.kid ?? KID, typ: 'JWT', ...(options.headerPad ? { pad: 'x'.repeat(options.headerPad) } : {}) }))
  const body = b64url(typeof payload === 'string' ? payload : JSON.stringify(payload))
  const data = `${header}.${body}`
  const signature = options.alg === 'HS256'
    ? createHmac('sha256', 'secret').update(data).digest()
    : sign('sha256', Buffer.from(data), options.key ?? provider.privateKey)
  return `${data}.${b64url(signature)}`
}

interface Session { ephemeral: Ed25519Keypair; randomness: string; nonce: string; salt: string; sub: string }
function session(maxEpoch = MAX_EPOCH): Session {
  const ephemeral = new Ed25519Keypair()
  const randomness = generateRandomness()
  return {
    ephemeral, randomness, nonce: generateNonce(ephemeral.getPublicKey(), maxEpoch, randomness),
    salt: BigInt('0x' + randomBytes(16).toString('hex')).toString(), sub: randomUUID(),
  }
}
const claims = (s: Session, extra: Record<string, unknown> = {}) => ({ iss: ISS, aud: AUD, sub: s.sub, nonce: s.nonce, iat: 1, exp: 2, ...extra })
const proverRequest = (s: Session, jwt: string, extra: Partial<ProverRequest> = {}): ProverRequest => ({
  jwt, extendedEphemeralPublicKey: getExtendedEphemeralPublicKey(s.ephemeral.getPublicKey()), maxEpoch: MAX_EPOCH,
  jwtRandomness: s.randomness, salt: s.salt, keyClaimName: 'sub', ...extra,
})

let sui: SuiGraphqlStub
let prover: ZkLoginProverStub
let jwksServer: Server
let servedJwks: { keys: JWK[] } = { keys: [provider.jwk] }
before(async () => {
  sui = await startSuiGraphqlStub()
  sui.world.addZkLoginProvider(ISS, { keys: [provider.jwk] })
  prover = await startZkLoginProverStub({ jwks: () => ({ keys: [provider.jwk] }), issuer: ISS, onProof: (p) => sui.world.acceptZkProof(p) })
  jwksServer = createServer((_req, res) => { res.writeHead(200, { 'content-type': 'application/json' }); res.end(JSON.stringify(servedJwks)) })
  await new Promise<void>((resolve) => jwksServer.listen(0, '127.0.0.1', resolve))
})
after(async () => {
  await prover?.close()
  await sui?.close()
  jwksServer?.closeAllConnections()
  await new Promise((resolve) => jwksServer?.close(resolve))
})

/** The signed message verified by the Sui stub for `author`: true, or the stub's error message. */
async function suiVerifies(signature: string, author: string, message: string): Promise<true | string> {
  const res = await fetch(sui.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      query: 'query v($m: Base64!, $s: Base64!, $a: SuiAddress!) { verifySignature(message: $m, signature: $s, intentScope: PERSONAL_MESSAGE, author: $a) { success } }',
      variables: { m: toBase64(new TextEncoder().encode(message)), s: signature, a: author },
    }),
  })
  const body = await res.json() as { data?: { verifySignature?: { success?: boolean } }; errors?: Array<{ message: string }> }
  return body.data?.verifySignature?.success === true ? true : body.errors?.[0]?.message ?? 'no verdict'
}

/** Prove `jwt` for session `s`, sign `message` with the session's key: the zkLogin signature and its author. */
async function proveAndSign(s: Session, jwt: string, message = 'approve 42'): Promise<{ signature: string; address: string }> {
  const proof = await requestProof(prover.url, proverRequest(s, jwt), { timeoutMs: 5000 })
  const { signature: userSignature } = await s.ephemeral.signPersonalMessage(new TextEncoder().encode(message))
  const signature = getZkLoginSignature({
    inputs: { ...proof, addressSeed: genAddressSeed(BigInt(s.salt), 'sub', s.sub, AUD).toString() },
    maxEpoch: String(MAX_EPOCH),
    userSignature,
  })
  const parsed = parseSerializedSignature(signature)
  assert.equal(parsed.signatureScheme === 'ZkLogin' ? parsed.zkLogin.iss : null, ISS, 'the SDK decodes the iss slice')
  return { signature, address: jwtToAddress(jwt, s.salt, false) }
}

describe('the fake prover: proofs Sui accepts', () => {
  test('a real id_token -> proof -> zkLogin signature that the Sui stub verifies, for the address jwtToAddress gives', async () => {
    const s = session()
    const jwt = idToken(claims(s))
    const { signature, address } = await proveAndSign(s, jwt)
    assert.equal(await suiVerifies(signature, address, 'approve 42'), true)
    assert.equal(await suiVerifies(signature, jwtToAddress(jwt, s.salt, true), 'approve 42'), true, 'the legacy derivation of the same proof')
    const proof = prover.proofs.at(-1)!
    assert.deepEqual({ iss: proof.iss, kid: proof.kid, maxEpoch: proof.maxEpoch }, { iss: ISS, kid: KID, maxEpoch: MAX_EPOCH })
    assert.equal(proof.ephemeralAddress, s.ephemeral.toSuiAddress())
  })

  // The claim at byte offsets 1, 7, 8, 9 (so at every indexMod4), and last in the payload (followed by '}').
  for (const [name, indexMod4, payload] of [
    ['iss first (byte 1)', 1, (s: Session) => `{"iss":"${ISS}","aud":"${AUD}","sub":"${s.sub}","nonce":"${s.nonce}"}`],
    ['iss at byte 7', 1, (s: Session) => `{"a":0,"iss":"${ISS}","aud":"${AUD}","sub":"${s.sub}","nonce":"${s.nonce}"}`],
    ['iss at byte 8', 2, (s: Session) => `{"ab":0,"iss":"${ISS}","aud":"${AUD}","sub":"${s.sub}","nonce":"${s.nonce}"}`],
    ['iss at byte 9', 0, (s: Session) => `{"abc":0,"iss":"${ISS}","aud":"${AUD}","sub":"${s.sub}","nonce":"${s.nonce}"}`],
    ['iss last, before }', 0, (s: Session) => `{"aud":"${AUD}","sub":"${s.sub}","nonce":"${s.nonce}","iss":"${ISS}"}`],
  ] as const) {
    test(`issBase64Details: ${name} (indexMod4 ${indexMod4}), decoded by the SDK and accepted by the Sui stub`, async () => {
      const s = session()
      const jwt = idToken(payload(s))
      const details = issBase64Details(jwt.split('.')[1]!)
      assert.equal(details.indexMod4, indexMod4)
      assert.equal(jwt.split('.')[1]!.indexOf(details.value) % 4, details.indexMod4)
      const { signature, address } = await proveAndSign(s, jwt)
      assert.equal(await suiVerifies(signature, address, 'approve 42'), true)
    })
  }

  test('the JWKS from a URL, read on every request: a key taken out of it is refused at once', async () => {
    const url = `http://127.0.0.1:${(jwksServer.address() as AddressInfo).port}/jwks`
    const fromUrl = await startZkLoginProverStub({ jwks: url })
    try {
      const s = session()
      const jwt = idToken(claims(s))
      await requestProof(fromUrl.url, proverRequest(s, jwt), { timeoutMs: 5000 })
      servedJwks = { keys: [rsaKey('another').jwk] }
      const err = await requestProof(fromUrl.url, proverRequest(s, jwt), { timeoutMs: 5000 }).catch((e: unknown) => e)
      assert.ok(err instanceof ProofRefusedError)
      assert.match(err.message, /no key "kns-key-1"/)
    } finally {
      servedJwks = { keys: [provider.jwk] }
      await fromUrl.close()
    }
  })

  test('an injected fault is an outage for the client', async () => {
    prover.fault({ status: 503 })
    try {
      const s = session()
      const err = await requestProof(prover.url, proverRequest(s, idToken(claims(s))), { timeoutMs: 5000 }).catch((e: unknown) => e)
      assert.ok(err instanceof ProverUnavailableError)
    } finally {
      prover.fault(null)
    }
  })
})

describe('the fake prover refuses what the real one refuses', () => {
  const cases: Array<[string, (s: Session) => ProverRequest, RegExp]> = [
    ['a kid the JWKS does not hold', (s) => proverRequest(s, idToken(claims(s), { kid: 'unknown' })), /no key "unknown"/],
    ['a signature by another key under the same kid', (s) => proverRequest(s, idToken(claims(s), { key: stranger.privateKey })), /signature does not verify/],
    ['a token not signed RS256', (s) => proverRequest(s, idToken(claims(s), { alg: 'HS256' })), /RS256/],
    ['a token of another issuer', (s) => proverRequest(s, idToken(claims(s, { iss: 'https://evil.example' }))), /not served by this prover/],
    ['the nonce of another max epoch', (s) => proverRequest(s, idToken(claims(s)), { maxEpoch: MAX_EPOCH + 1 }), /nonce/],
    ['the nonce of another ephemeral key', (s) => proverRequest(s, idToken(claims(s)), {
      extendedEphemeralPublicKey: getExtendedEphemeralPublicKey(new Ed25519Keypair().getPublicKey()),
    }), /nonce/],
    ['the nonce of another randomness', (s) => proverRequest(s, idToken(claims(s)), { jwtRandomness: generateRandomness() }), /nonce/],
    ['a key claim other than sub', (s) => ({ ...proverRequest(s, idToken(claims(s))), keyClaimName: 'email' as 'sub' }), /keyClaimName/],
    ['a sub of 116 characters', (s) => proverRequest(s, idToken(claims(s, { sub: 'u'.repeat(116) }))), /sub claim is longer than 115/],
    ['an aud array', (s) => proverRequest(s, idToken(claims(s, { aud: [AUD] }))), /aud claim must be one string/],
    ['an aud of 146 characters', (s) => proverRequest(s, idToken(claims(s, { aud: 'a'.repeat(146) }))), /aud claim is longer than 145/],
    ['a sub JSON escapes', (s) => proverRequest(s, idToken(claims(s, { sub: 'a"b' }))), /sub claim contains a character JSON escapes/],
    ['a claim written with an escape', (s) => proverRequest(s, idToken(`{"iss":"${ISS}","aud":"${AUD}","sub":"a\\/b","nonce":"${s.nonce}"}`)), /sub claim is not written/],
    ['a claim written with a space', (s) => proverRequest(s, idToken(`{"iss":"${ISS}","aud": "${AUD}","sub":"${s.sub}","nonce":"${s.nonce}"}`)), /aud claim is not written/],
    ['a header over 279 characters', (s) => proverRequest(s, idToken(claims(s), { headerPad: 200 })), /header is longer than 279/],
    ['a token too long for the circuit', (s) => proverRequest(s, idToken(claims(s, { pad: 'p'.repeat(1400) }))), /too long for the circuit/],
    ['a salt that is not a decimal number', (s) => proverRequest(s, idToken(claims(s)), { salt: '0x1234' }), /salt must be a decimal/],
    ['an ephemeral key that is not a Sui public key', (s) => proverRequest(s, idToken(claims(s)), { extendedEphemeralPublicKey: 'AAAA' }), /extendedEphemeralPublicKey/],
  ]
  for (const [name, build, reason] of cases) {
    test(name, async () => {
      const s = session()
      const err = await requestProof(prover.url, build(s), { timeoutMs: 5000 }).catch((e: unknown) => e)
      assert.ok(err instanceof ProofRefusedError, String(err))
      assert.match(err.message, reason)
      assert.match(prover.refusals.at(-1) ?? '', reason)
    })
  }

  test('the limits themselves pass: a sub of 115 and an aud of 145 characters', async () => {
    const s = { ...session(), sub: 'u'.repeat(115) }
    const jwt = idToken(claims(s, { aud: 'a'.repeat(145) }))
    const proof = await requestProof(prover.url, proverRequest(s, jwt), { timeoutMs: 5000 })
    assert.equal(proof.headerBase64, jwt.split('.')[0])
  })
})
