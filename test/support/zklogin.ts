/**
 * zkLogin wallets for tests against the Sui GraphQL stub: real ephemeral Ed25519 signatures
 * wrapped in real zkLogin serialized signatures; the Groth16 proof (which needs an OpenID
 * provider and the proving service) is random points the stub is told to accept, bound like a
 * real proof to the issuer, the kid of the provider's key, the address seed, the ephemeral key
 * and the max epoch. By default the wallet is Google's (TEST_ISSUER) with the kid the stub
 * holds from the start (TEST_KID); the JWT header it carries names that kid.
 * For proofs made from a real token of a provider of your own: zklogin-prover-stub.ts.
 */
import { randomBytes } from 'node:crypto'
import { Ed25519Keypair } from '@mysten/sui/keypairs/ed25519'
import { computeZkLoginAddressFromSeed, getZkLoginSignature } from '@mysten/sui/zklogin'
import { STUB_ZKLOGIN_ISSUER, STUB_ZKLOGIN_KID, type StubZkProof } from '../ledger/sui-graphql-zklogin.ts'

export const TEST_ISSUER = STUB_ZKLOGIN_ISSUER
export const TEST_KID = STUB_ZKLOGIN_KID
/** The stub's epoch at start (100) + 10: well within Sui's window of 30 epochs ahead. */
export const TEST_MAX_EPOCH = 110

export interface ZkLoginWallet {
  /** The address of the current (padded) derivation. */
  address: string
  /** The legacy (unpadded) derivation of the same proof: differs when the seed has a leading zero byte. */
  legacyAddress: string
  /** What the stub must accept as a valid proof for this wallet. */
  proof: StubZkProof
  signPersonalMessage(text: string): Promise<string>
}

export interface ZkLoginWalletOptions {
  maxEpoch?: number
  /** The issuer (default TEST_ISSUER): in the address and the signature's `iss` slice. */
  iss?: string
  /** The kid its JWT header names (default TEST_KID). */
  kid?: string
  /** The JWT header as sent (Base64URL), to send a malformed one; default RS256 with `kid`. */
  headerBase64?: string
}

const field = () => BigInt('0x' + randomBytes(31).toString('hex')).toString()

/** The header of an RS256 JWT naming `kid`, as a zkLogin signature carries it. */
export function jwtHeaderBase64(kid: string, alg = 'RS256'): string {
  return Buffer.from(JSON.stringify({ alg, kid, typ: 'JWT' })).toString('base64url')
}

/** A fresh wallet; its seed is below 2^248, so its two address derivations differ. */
export function zkLoginWallet(options: ZkLoginWalletOptions = {}): ZkLoginWallet {
  const seed = BigInt('0x00' + randomBytes(31).toString('hex'))
  const ephemeral = new Ed25519Keypair()
  const maxEpoch = options.maxEpoch ?? TEST_MAX_EPOCH
  const iss = options.iss ?? TEST_ISSUER
  const kid = options.kid ?? TEST_KID
  const proofPoints = { a: [field(), field(), '1'], b: [[field(), field()], [field(), field()], ['1', '0']], c: [field(), field(), '1'] }
  const proof: StubZkProof = { proofPoints, addressSeed: seed.toString(), ephemeralAddress: ephemeral.toSuiAddress(), maxEpoch, iss, kid }
  return {
    address: computeZkLoginAddressFromSeed(seed, iss, false),
    legacyAddress: computeZkLoginAddressFromSeed(seed, iss, true),
    proof,
    async signPersonalMessage(text) {
      const { signature: userSignature } = await ephemeral.signPersonalMessage(new TextEncoder().encode(text))
      return getZkLoginSignature({
        inputs: {
          proofPoints,
          // The claim at the start of a payload slice (index 0): tightly packed as Sui decodes it.
          issBase64Details: { value: Buffer.from(`"iss":${JSON.stringify(iss)},`).toString('base64url'), indexMod4: 0 },
          headerBase64: options.headerBase64 ?? jwtHeaderBase64(kid),
          addressSeed: seed.toString(),
        },
        maxEpoch: String(maxEpoch),
        userSignature,
      })
    },
  }
}
