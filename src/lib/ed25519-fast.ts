import { createPublicKey, verify, type KeyObject } from 'node:crypto'
import { bcs } from '@mysten/sui/bcs'
import { messageWithIntent } from '@mysten/sui/cryptography'
import { blake2b } from '@noble/hashes/blake2.js'

const SPKI_ED25519_PREFIX = Buffer.from('302a300506032b6570032100', 'hex')
const keys = new Map<string, KeyObject>()

/**
 * The digest a Sui wallet signs for a personal message: BLAKE2b-256 over the intent-prefixed,
 * BCS-encoded bytes (what `PublicKey.verifyPersonalMessage` in @mysten/sui computes).
 */
export function personalMessageDigest(message: Uint8Array): Uint8Array {
  return blake2b(messageWithIntent('PersonalMessage', bcs.byteVector().serialize(message).toBytes()), { dkLen: 32 })
}

/**
 * Ed25519 personal-message verification through OpenSSL (node:crypto) instead of the SDK's
 * pure-JavaScript curve: same digest, same verdict for honest signatures, an order of
 * magnitude faster. Prepared public keys are memoised (bounded).
 */
export function verifyEd25519PersonalMessage(message: Uint8Array, publicKey: Uint8Array, signature: Uint8Array): boolean {
  if (publicKey.length !== 32 || signature.length !== 64) return false
  const id = Buffer.from(publicKey).toString('hex')
  let key = keys.get(id)
  if (key === undefined) {
    try {
      key = createPublicKey({ key: Buffer.concat([SPKI_ED25519_PREFIX, publicKey]), format: 'der', type: 'spki' })
    } catch {
      return false
    }
    if (keys.size >= 10_000) keys.clear()
    keys.set(id, key)
  }
  return verify(null, personalMessageDigest(message), key, signature)
}
