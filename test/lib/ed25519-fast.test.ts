import { test } from 'node:test'
import assert from 'node:assert/strict'
import { Ed25519Keypair } from '@mysten/sui/keypairs/ed25519'
import { parseSerializedSignature } from '@mysten/sui/cryptography'
import { verifyPersonalMessageSignature } from '@mysten/sui/verify'
import { verifyEd25519PersonalMessage } from '../../src/lib/ed25519-fast.ts'

function parts(signature: string) {
  const parsed = parseSerializedSignature(signature)
  if (parsed.signatureScheme !== 'ED25519') throw new Error('expected Ed25519')
  return { publicKey: parsed.publicKey, signature: parsed.signature }
}

test('agrees with the SDK on valid personal-message signatures', async () => {
  for (let i = 0; i < 20; i++) {
    const keypair = new Ed25519Keypair()
    const message = new TextEncoder().encode(`KNS approval request ${i}\n${'é'.repeat(i * 13)}`)
    const { signature } = await keypair.signPersonalMessage(message)
    const sdk = await verifyPersonalMessageSignature(message, signature)
    assert.equal(sdk.toSuiAddress(), keypair.toSuiAddress())
    const { publicKey, signature: raw } = parts(signature)
    assert.equal(verifyEd25519PersonalMessage(message, publicKey, raw), true)
  }
})

test('rejects a tampered message, a flipped signature bit, another key and wrong sizes', async () => {
  const keypair = new Ed25519Keypair()
  const message = new TextEncoder().encode('Approval number: 0123456789abcdef01234567')
  const { publicKey, signature } = parts((await keypair.signPersonalMessage(message)).signature)
  const tampered = new TextEncoder().encode('Approval number: 0123456789abcdef01234568')
  assert.equal(verifyEd25519PersonalMessage(tampered, publicKey, signature), false)
  const flipped = Uint8Array.from(signature)
  flipped[10]! ^= 1
  assert.equal(verifyEd25519PersonalMessage(message, publicKey, flipped), false)
  const other = new Ed25519Keypair().getPublicKey().toRawBytes()
  assert.equal(verifyEd25519PersonalMessage(message, other, signature), false)
  assert.equal(verifyEd25519PersonalMessage(message, publicKey.subarray(1), signature), false)
  assert.equal(verifyEd25519PersonalMessage(message, publicKey, signature.subarray(1)), false)
  // a transaction-intent signature over the same bytes is not a personal-message signature
  const txSig = parts((await keypair.signTransaction(message)).signature)
  assert.equal(verifyEd25519PersonalMessage(message, publicKey, txSig.signature), false)
})
