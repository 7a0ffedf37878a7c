/**
 * zkLogin wallets for tests against the Sui GraphQL stub: real ephemeral Ed25519 signatures
 * wrapped in real zkLogin serialized signatures; the Groth16 proof (which needs an OpenID
 * provider and the proving service) is random points the stub is told to accept, bound like a
 * real proof to the address seed, the ephemeral key and the max epoch.
 */
import { randomBytes } from 'node:crypto'
import { Ed25519Keypair } from '@mysten/sui/keypairs/ed25519'
import { computeZkLoginAddressFromSeed, getZkLoginSignature } from '@mysten/sui/zklogin'
import type { StubZkProof } from '../ledger/sui-graphql-stub.ts'

export const TEST_ISSUER = 'https://accounts.google.com'

export interface ZkLoginWallet {
  /** The address of the current (padded) derivation. */
  address: string
  /** The legacy (unpadded) derivation of the same proof: differs when the seed has a leading zero byte. */
  legacyAddress: string
  /** What the stub must accept as a valid proof for this wallet. */
  proof: StubZkProof
  signPersonalMessage(text: string): Promise<string>
}

const field = () => BigInt('0x' + randomBytes(31).toString('hex')).toString()

/** A fresh wallet; its seed is below 2^248, so its two address derivations differ. */
export function zkLoginWallet(options: { maxEpoch?: number } = {}): ZkLoginWallet {
  const seed = BigInt('0x00' + randomBytes(31).toString('hex'))
  const ephemeral = new Ed25519Keypair()
  const maxEpoch = options.maxEpoch ?? 1000
  const proofPoints = { a: [field(), field(), '1'], b: [[field(), field()], [field(), field()], ['1', '0']], c: [field(), field(), '1'] }
  const proof: StubZkProof = { proofPoints, addressSeed: seed.toString(), ephemeralAddress: ephemeral.toSuiAddress(), maxEpoch }
  return {
    address: computeZkLoginAddressFromSeed(seed, TEST_ISSUER, false),
    legacyAddress: computeZkLoginAddressFromSeed(seed, TEST_ISSUER, true),
    proof,
    async signPersonalMessage(text) {
      const { signature: userSignature } = await ephemeral.signPersonalMessage(new TextEncoder().encode(text))
      return getZkLoginSignature({
        inputs: {
          proofPoints,
          issBase64Details: { value: Buffer.from(`"iss":"${TEST_ISSUER}",`).toString('base64url'), indexMod4: 0 },
          headerBase64: 'eyJhbGciOiJSUzI1NiJ9',
          addressSeed: seed.toString(),
        },
        maxEpoch: String(maxEpoch),
        userSignature,
      })
    },
  }
}
