/**
 * The Sui GraphQL stub is as strict about zkLogin as Sui (test/ledger/sui-graphql-zklogin.ts):
 * each refusal on its own, next to the same signature (or one differing only in the checked
 * value) going through, so each test fails if its check is taken out.
 */
import { after, before, beforeEach, describe, test } from 'node:test'
import assert from 'node:assert/strict'
import { toBase64 } from '@mysten/sui/utils'
import {
  startSuiGraphqlStub, STUB_ZKLOGIN_JWK, STUB_ZKLOGIN_KID, ZKLOGIN_MAX_EPOCH_UPPER_BOUND_DELTA, type SuiGraphqlStub,
} from './sui-graphql-stub.ts'
import { jwtHeaderBase64, TEST_ISSUER, zkLoginWallet, type ZkLoginWallet, type ZkLoginWalletOptions } from '../support/zklogin.ts'

const VERIFY = `query v($message: Base64!, $signature: Base64!, $author: SuiAddress!) {
  verifySignature(message: $message, signature: $signature, intentScope: PERSONAL_MESSAGE, author: $author) { success }
}`
const MESSAGE = 'approve ref 1234'
const OTHER_ISSUER = 'https://kns.test/oidc'
const jwk = (kid: string) => ({ ...STUB_ZKLOGIN_JWK, kid })

let sui: SuiGraphqlStub
before(async () => { sui = await startSuiGraphqlStub() })
after(async () => { await sui?.close() })
beforeEach(() => { sui.world.setEpoch(100) })

/** What the stub answers to verifySignature: 'ok', or the error's code and message. */
async function verdict(wallet: ZkLoginWallet, signature?: string): Promise<'ok' | { code: unknown; message: string }> {
  const res = await fetch(sui.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      query: VERIFY,
      variables: { message: toBase64(new TextEncoder().encode(MESSAGE)), signature: signature ?? await wallet.signPersonalMessage(MESSAGE), author: wallet.address },
    }),
  })
  assert.equal(res.status, 200)
  const body = await res.json() as { data?: { verifySignature?: { success?: boolean } | null }; errors?: Array<{ message: string; extensions?: { code?: unknown } }> }
  if (body.errors?.length) return { code: body.errors[0]!.extensions?.code, message: body.errors[0]!.message }
  assert.equal(body.data?.verifySignature?.success, true)
  return 'ok'
}

function refused(result: Awaited<ReturnType<typeof verdict>>, message: RegExp): void {
  assert.notEqual(result, 'ok', 'the signature verified')
  if (result === 'ok') return
  assert.equal(result.code, 'BAD_USER_INPUT')
  assert.match(result.message, message)
}

function accepted(options: ZkLoginWalletOptions = {}): ZkLoginWallet {
  const wallet = zkLoginWallet(options)
  sui.world.acceptZkProof(wallet.proof)
  return wallet
}

describe('zkLogin on the Sui GraphQL stub', () => {
  test('the default provider (Google, the stub\'s kid) and a registered proof: verifies', async () => {
    assert.equal(await verdict(accepted()), 'ok')
  })

  test('an issuer the chain holds no keys for: refused; once its keys are added, the same signature verifies', async () => {
    const wallet = accepted({ iss: OTHER_ISSUER, kid: 'kns-1' })
    refused(await verdict(wallet), new RegExp(`^Verification failed: JWK not found \\(${OTHER_ISSUER} - kns-1\\): ${OTHER_ISSUER} is not an OpenID provider`))
    sui.world.addZkLoginProvider(OTHER_ISSUER, { keys: [jwk('kns-1')] })
    assert.equal(await verdict(wallet), 'ok')
  })

  test('a header naming a kid the chain does not hold for the issuer: refused; once the key is added, verifies', async () => {
    const wallet = accepted({ kid: 'google-next' })
    refused(await verdict(wallet), /^Verification failed: JWK not found \(https:\/\/accounts\.google\.com - google-next\)$/)
    sui.world.addZkLoginProvider(TEST_ISSUER, { keys: [jwk('google-next')] })
    assert.equal(await verdict(wallet), 'ok')
  })

  test('a kid of another issuer does not count: keys are held per (iss, kid)', async () => {
    sui.world.addZkLoginProvider(OTHER_ISSUER, { keys: [jwk('only-kns')] })
    const wallet = accepted({ kid: 'only-kns' })
    refused(await verdict(wallet), /^Verification failed: JWK not found \(https:\/\/accounts\.google\.com - only-kns\)$/)
  })

  test('a key rotated out (removeZkLoginJwk): what verified stops verifying', async () => {
    sui.world.addZkLoginProvider(TEST_ISSUER, { keys: [jwk('rotating')] })
    const wallet = accepted({ kid: 'rotating' })
    assert.equal(await verdict(wallet), 'ok')
    sui.world.removeZkLoginJwk(TEST_ISSUER, 'rotating')
    refused(await verdict(wallet), /^Verification failed: JWK not found \(https:\/\/accounts\.google\.com - rotating\)$/)
  })

  test('a max epoch that has passed: refused; in its last epoch it still verifies', async () => {
    const wallet = accepted({ maxEpoch: 100 })
    assert.equal(await verdict(wallet), 'ok')
    sui.world.setEpoch(101)
    refused(await verdict(wallet), /^Verification failed: ZKLogin expired at epoch 100, current epoch 101$/)
  })

  test(`a max epoch more than ${ZKLOGIN_MAX_EPOCH_UPPER_BOUND_DELTA} epochs ahead: refused; exactly ${ZKLOGIN_MAX_EPOCH_UPPER_BOUND_DELTA} ahead verifies`, async () => {
    assert.equal(ZKLOGIN_MAX_EPOCH_UPPER_BOUND_DELTA, 30)
    assert.equal(await verdict(accepted({ maxEpoch: 130 })), 'ok')
    refused(await verdict(accepted({ maxEpoch: 131 })), /^Verification failed: ZKLogin max epoch too large 131, current epoch 100, max accepted: 130$/)
    // The bound moves with the chain: the same signature verifies once the epoch has advanced.
    const later = accepted({ maxEpoch: 140 })
    refused(await verdict(later), /max epoch too large/)
    sui.world.setEpoch(110)
    assert.equal(await verdict(later), 'ok')
  })

  test('proof points nobody registered: refused; registered, the same signature verifies', async () => {
    const wallet = zkLoginWallet()
    const signature = await wallet.signPersonalMessage(MESSAGE)
    refused(await verdict(wallet, signature), /^Verification failed: Groth16 proof verify failed$/)
    sui.world.acceptZkProof(wallet.proof)
    assert.equal(await verdict(wallet, signature), 'ok')
  })

  const others: Record<'iss' | 'kid' | 'addressSeed' | 'ephemeralAddress' | 'maxEpoch', (p: ZkLoginWallet['proof']) => unknown> = {
    iss: () => OTHER_ISSUER,
    kid: () => 'another-kid',
    addressSeed: (p) => (BigInt(p.addressSeed) + 1n).toString(),
    ephemeralAddress: () => zkLoginWallet().proof.ephemeralAddress,
    maxEpoch: (p) => p.maxEpoch + 1,
  }
  for (const [name, other] of Object.entries(others)) {
    test(`proof points registered for another ${name}: refused; registered for this one, verifies`, async () => {
      const wallet = zkLoginWallet()
      const signature = await wallet.signPersonalMessage(MESSAGE)
      sui.world.acceptZkProof({ ...wallet.proof, [name]: other(wallet.proof) })
      refused(await verdict(wallet, signature), /^Verification failed: Groth16 proof verify failed$/)
      sui.world.acceptZkProof(wallet.proof)
      assert.equal(await verdict(wallet, signature), 'ok')
    })
  }

  for (const [name, headerBase64] of [
    ['a header without kid', Buffer.from(JSON.stringify({ alg: 'RS256', typ: 'JWT' })).toString('base64url')],
    ['a header of another algorithm', jwtHeaderBase64(STUB_ZKLOGIN_KID, 'ES256')],
    ['a header that is not JSON', Buffer.from('not json').toString('base64url')],
  ] as const) {
    test(`${name}: the signature does not parse (as Sui's JWTHeader refuses it)`, async () => {
      refused(await verdict(accepted({ headerBase64 })), /^Cannot parse signature$/)
      assert.equal(await verdict(accepted({ headerBase64: jwtHeaderBase64(STUB_ZKLOGIN_KID) })), 'ok')
    })
  }

  test('addZkLoginProvider takes only keys Sui would hold (RSA, e AQAB, alg RS256, a kid)', () => {
    assert.throws(() => sui.world.addZkLoginProvider(OTHER_ISSUER, { keys: [{ kty: 'EC', crv: 'P-256', x: 'x', y: 'y', kid: 'ec', alg: 'ES256' }] }), /would not accept/)
    assert.throws(() => sui.world.addZkLoginProvider(OTHER_ISSUER, { keys: [{ ...STUB_ZKLOGIN_JWK, alg: undefined }] }), /would not accept/)
    assert.throws(() => sui.world.addZkLoginProvider(OTHER_ISSUER, { keys: [{ ...STUB_ZKLOGIN_JWK, kid: undefined }] }), /would not accept/)
  })
})
