/**
 * An owner approves with the phone number on the embedded ledger: log in with a code, the
 * salt, the service's prover step (a clear proof), a zkLogin signature, verify_signature (and
 * kns::approve for `event`). Then every statement of the proof, broken one at a time, and the
 * embedded ledger refusing each.
 */
import assert from 'node:assert/strict'
import { generateKeyPairSync } from 'node:crypto'
import { after, before, describe, test } from 'node:test'
import { importJWK, SignJWT, decodeJwt, decodeProtectedHeader, type JWK } from 'jose'
import { Ed25519Keypair } from '@mysten/sui/keypairs/ed25519'
import { genAddressSeed, generateNonce } from '@mysten/sui/zklogin'
import { clearProof } from '../../src/ledger/zklogin/clear-proof.ts'
import { ledgerApproveMessage } from '../../src/ledger/approve.ts'
import { approvalBody, post, randomPhone, register } from '../support/kns.ts'
import { startLoginServer, type LoginServer } from '../support/login.ts'
import { phoneLogin, postJson, type PhoneLogin } from '../support/phone-login.ts'

let server: LoginServer
let key: string

before(async () => {
  server = await startLoginServer()
  key = await server.h.key()
})
after(async () => { await server.close() })

async function approval(phoneNumber: string, method: 'sign' | 'event' = 'sign') {
  const res = await post(server.h, '/numsys/approval-phone', approvalBody({ phoneNumber }, { method }), { 'x-api-key': key })
  assert.equal(res.statusCode, 200, res.body)
  const { approvalNumber } = res.json() as { approvalNumber: string }
  const details = (await server.h.app.inject({ method: 'GET', url: `/numsys/transaction_details?ref=${approvalNumber}` })).json() as { signMessage: string; objectId: string; wallet: string }
  return { approvalNumber, ...details }
}

async function verify(approvalNumber: string, signature: string) {
  return (await post(server.h, '/numsys/verify_signature', { approvalNumber, signature })).json() as { success: boolean; code?: string; error?: string }
}

describe('approving with the phone number on the embedded ledger', () => {
  test('sign: log in with the code, prove, sign; the request is approved by the zkAddress', async () => {
    const user = await register(server.h, randomPhone())
    const request = await approval(user.phoneNumber)
    assert.equal(request.wallet, user.zkAddress, 'the token is owned by the registered zkAddress')
    const login = await phoneLogin(server, user.phoneNumber)
    assert.equal(login.address, user.zkAddress)
    const verdict = await verify(request.approvalNumber, await login.sign(request.signMessage))
    assert.deepEqual(verdict, { success: true })
    const details = (await server.h.app.inject({ method: 'GET', url: `/numsys/transaction_details?ref=${request.approvalNumber}` })).json() as { approved: boolean; wallet: string }
    assert.equal(details.approved, true)
    assert.equal(details.wallet, user.zkAddress)
  })

  test('event: kns::approve signed with the zkLogin key, then verify_transaction', async () => {
    const user = await register(server.h, randomPhone())
    const request = await approval(user.phoneNumber, 'event')
    const login = await phoneLogin(server, user.phoneNumber)
    const signature = await login.sign(ledgerApproveMessage(request.objectId, request.approvalNumber))
    const approved = await postJson(`${server.base}/ledger/v1/approve`, { objectId: request.objectId, ref: request.approvalNumber, signature })
    assert.equal(approved.status, 200, JSON.stringify(approved.body))
    const verdict = (await post(server.h, '/numsys/verify_transaction', { approvalNumber: request.approvalNumber, digest: approved.body.digest })).json()
    assert.deepEqual(verdict, { success: true })
  })

  test('another number\'s login cannot approve', async () => {
    const owner = await register(server.h, randomPhone())
    const other = await register(server.h, randomPhone())
    const request = await approval(owner.phoneNumber)
    const login = await phoneLogin(server, other.phoneNumber)
    const verdict = await verify(request.approvalNumber, await login.sign(request.signMessage))
    assert.equal(verdict.success, false)
    assert.equal(verdict.code, 'WRONG_SIGNER')
  })
})

describe('the embedded ledger refuses what the proof would not prove', () => {
  let user: Awaited<ReturnType<typeof register>>
  let login: PhoneLogin
  let request: Awaited<ReturnType<typeof approval>>

  before(async () => {
    user = await register(server.h, randomPhone())
    login = await phoneLogin(server, user.phoneNumber)
  })
  // A fresh request for each case, so one refusal cannot hide behind another's state.
  const fresh = async () => { request = await approval(user.phoneNumber) }

  async function refused(signature: string, step: RegExp) {
    const verdict = await verify(request.approvalNumber, signature)
    assert.equal(verdict.success, false, 'refused')
    assert.equal(verdict.code, 'INVALID_SIGNATURE')
    assert.match(verdict.error ?? '', step)
  }

  /** A token like the provider's, signed by `jwk` (the provider's own private key unless given). */
  async function token(claims: Record<string, unknown>, options: { jwk?: JWK; kid?: string } = {}) {
    const jwk = options.jwk ?? ((await server.h.service.accounts.keys.forProvider())[0] as JWK)
    const original = decodeJwt(login.idToken)
    return new SignJWT({ ...original, ...claims }).setProtectedHeader({ alg: 'RS256', kid: options.kid ?? jwk.kid!, typ: 'JWT' })
      .sign(await importJWK(jwk, 'RS256'))
  }

  const proofFor = (jwt: string, salt = login.salt, randomness = login.randomness) => clearProof({ jwt, salt, randomness })

  test('the unbroken signature passes (the cases below each break one thing)', async () => {
    await fresh()
    assert.deepEqual(await verify(request.approvalNumber, await login.sign(request.signMessage)), { success: true })
  })

  test('an issuer the ledger does not list', async () => {
    await fresh()
    const jwt = await token({ iss: 'https://accounts.google.com' })
    await refused(await login.sign(request.signMessage, { proof: proofFor(jwt) }), /check_issuer: .*not a listed/)
  })

  test('a kid the provider does not publish', async () => {
    await fresh()
    const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 })
    const jwt = await token({}, { jwk: { ...privateKey.export({ format: 'jwk' }) as JWK, kid: 'not-published' } })
    await refused(await login.sign(request.signMessage, { proof: proofFor(jwt) }), /check_jwk: kid not-published/)
  })

  test('a token signed by another key under the provider\'s kid', async () => {
    await fresh()
    const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 })
    const kid = decodeProtectedHeader(login.idToken).kid!
    const jwt = await token({}, { jwk: privateKey.export({ format: 'jwk' }) as JWK, kid })
    await refused(await login.sign(request.signMessage, { proof: proofFor(jwt) }), /check_token_signature/)
  })

  test('an address seed from another salt', async () => {
    await fresh()
    const claims = decodeJwt(login.idToken)
    const seed = genAddressSeed(BigInt(login.salt) + 1n, 'sub', claims.sub!, claims.aud as string).toString()
    await refused(await login.sign(request.signMessage, { addressSeed: seed }), /check_address_seed/)
  })

  test('a proof whose salt is not the one behind the address seed', async () => {
    await fresh()
    await refused(await login.sign(request.signMessage, { proof: proofFor(login.idToken, String(BigInt(login.salt) + 1n)) }), /check_address_seed/)
  })

  test('an ephemeral key the token\'s nonce was not made for', async () => {
    await fresh()
    await refused(await login.sign(request.signMessage, { ephemeral: new Ed25519Keypair() }), /check_nonce/)
  })

  test('another max epoch than the nonce commits to', async () => {
    await fresh()
    await refused(await login.sign(request.signMessage, { maxEpoch: login.maxEpoch + 1 }), /check_nonce/)
  })

  test('a max epoch that has passed', async () => {
    await fresh()
    const epoch = await server.h.service.ledger.currentEpoch()
    const ephemeral = new Ed25519Keypair()
    const nonce = generateNonce(ephemeral.getPublicKey(), epoch - 1, login.randomness)
    const jwt = await token({ nonce })
    const signature = await login.sign(request.signMessage, { proof: proofFor(jwt), maxEpoch: epoch - 1, ephemeral })
    await refused(signature, /check_max_epoch: max epoch \d+ has passed/)
  })

  test('a max epoch too far ahead', async () => {
    await fresh()
    const epoch = await server.h.service.ledger.currentEpoch()
    const ephemeral = new Ed25519Keypair()
    const nonce = generateNonce(ephemeral.getPublicKey(), epoch + 31, login.randomness)
    const jwt = await token({ nonce })
    await refused(await login.sign(request.signMessage, { proof: proofFor(jwt), maxEpoch: epoch + 31, ephemeral }), /check_max_epoch: .*ahead/)
  })

  test('an ephemeral signature over another message', async () => {
    await fresh()
    await refused(await login.sign(`${request.signMessage} (altered)`), /check_ephemeral_signature/)
  })

  test('a Groth16 proof (which the embedded ledger cannot verify) is not taken on trust', async () => {
    await fresh()
    const points = { a: ['1', '2', '1'], b: [['1', '2'], ['3', '4'], ['1', '0']], c: ['1', '2', '1'] }
    await refused(await login.sign(request.signMessage, { proof: { ...login.proof, proofPoints: points } }), /parse_zklogin_signature: a Groth16 proof/)
  })

  test('the prover step refuses a passed max epoch, another key claim, and a nonce that does not match', async () => {
    const epoch = await server.h.service.ledger.currentEpoch()
    const base = { jwt: login.idToken, extendedEphemeralPublicKey: login.ephemeral.getPublicKey().toSuiPublicKey(), maxEpoch: login.maxEpoch, jwtRandomness: login.randomness, salt: login.salt, keyClaimName: 'sub' }
    for (const [change, field] of [[{ maxEpoch: epoch - 1 }, 'jwt'], [{ keyClaimName: 'email' }, 'keyClaimName'], [{ jwtRandomness: '12345' }, 'jwt'],
      [{ extendedEphemeralPublicKey: new Ed25519Keypair().getPublicKey().toSuiPublicKey() }, 'jwt']] as const) {
      const res = await postJson(`${server.base}/zklogin/v1/prove`, { ...base, ...change })
      assert.equal(res.status, 422, JSON.stringify(change))
      assert.equal(res.body.code, 'PROOF_REFUSED')
      assert.equal(res.body.field, field, JSON.stringify(res.body))
    }
    // A nonce made for a max epoch that has passed, or one too far ahead: the max-epoch step itself refuses.
    for (const maxEpoch of [epoch - 1, epoch + 31]) {
      const stale = await phoneLogin(server, user.phoneNumber, { maxEpoch, prove: false })
      const res = await postJson(`${server.base}/zklogin/v1/prove`, {
        ...base, jwt: stale.idToken, extendedEphemeralPublicKey: stale.ephemeral.getPublicKey().toSuiPublicKey(), maxEpoch, jwtRandomness: stale.randomness,
      })
      assert.equal(res.status, 422, `max epoch ${maxEpoch} (current ${epoch})`)
      assert.equal(res.body.field, 'maxEpoch', JSON.stringify(res.body))
      assert.match(String(res.body.error), maxEpoch < epoch ? /has passed/ : /at most 30 epochs ahead/)
    }
    const forged = await postJson(`${server.base}/zklogin/v1/prove`, { ...base, jwt: `${login.idToken.slice(0, -4)}AAAA` })
    assert.equal(forged.status, 400)
    assert.equal(forged.body.code, 'INVALID_ID_TOKEN')
  })
})
