/**
 * zkLogin as Sui's `verifySignature` checks it, for the GraphQL stub (sui-graphql-stub.ts),
 * in Sui's order (sui-types ZkLoginAuthenticator: verify_user_authenticator_epoch, then
 * verify_claims; fastcrypto verify_zk_login):
 * 1. the inputs parse: the JWT header is Base64URL JSON with `alg` RS256 and a `kid`, the
 *    `iss` slice decodes (otherwise "Cannot parse signature", as GenericSignature::from_bytes);
 * 2. the max epoch is at most the current epoch + 30 (`zklogin_max_epoch_upper_bound_delta`,
 *    set to 30 in Sui's protocol version 43 and used by the GraphQL service) and not past;
 * 3. the author is one of the proof's two addresses (padded and legacy seed bytes);
 * 4. the ephemeral signature verifies over the message;
 * 5. the chain holds a JWK for (iss, kid): the issuer must be a provider whose keys the chain
 *    has (`addZkLoginProvider`; Sui fetches keys only for its listed providers) and the kid one
 *    of its current keys (`removeZkLoginJwk` rotates one out);
 * 6. the Groth16 proof: the one thing the stub cannot run. A test registers the proof points it
 *    treats as valid (`acceptZkProof`), bound to what a real proof's public inputs bind: the
 *    issuer, the kid (the key's modulus), the address seed, the ephemeral key and the max epoch.
 * Every failure is BAD_USER_INPUT "Verification failed: ...", as the real service answers it.
 */
import type { JWK } from 'jose'
import { verifyPersonalMessageSignature } from '@mysten/sui/verify'
import { computeZkLoginAddressFromSeed } from '@mysten/sui/zklogin'
import { normalizeSuiAddress, toBase64 } from '@mysten/sui/utils'
import { SUI_ERROR, suiError } from './sui-graphql-schema.ts'

/** Sui's bound on a zkLogin signature's max epoch: at most this many epochs after the current one. */
export const ZKLOGIN_MAX_EPOCH_UPPER_BOUND_DELTA = 30
/** The provider every stub holds keys for from the start (Google, as the existing tests' wallets use). */
export const STUB_ZKLOGIN_ISSUER = 'https://accounts.google.com'
export const STUB_ZKLOGIN_KID = 'kns-stub-google-1'
/** A JWK of the shape Sui accepts (RSA, e = AQAB, RS256) for the default kid; nothing is ever verified with it. */
export const STUB_ZKLOGIN_JWK: JWK = {
  kty: 'RSA', e: 'AQAB', alg: 'RS256', use: 'sig', kid: STUB_ZKLOGIN_KID,
  n: Buffer.concat([Buffer.from([0xc5]), Buffer.alloc(255, 0x5a)]).toString('base64url'),
}

/** A zkLogin proof the stub treats as valid, bound like a real proof's public inputs. */
export interface StubZkProof {
  proofPoints: unknown
  addressSeed: string
  /** The Sui address of the ephemeral public key. */
  ephemeralAddress: string
  maxEpoch: number
  iss: string
  kid: string
}

/** What @mysten/sui's parseSerializedSignature gives for a zkLogin signature (the part used here). */
export interface ParsedZkLogin {
  inputs: { proofPoints: unknown; headerBase64: string }
  maxEpoch: string | number | bigint
  userSignature: Uint8Array | string
  iss: string
  addressSeed: bigint
}

const failed = (why: string) => suiError(`Verification failed: ${why}`, SUI_ERROR.BAD_USER_INPUT)

/** The header's kid, as fastcrypto's JWTHeader::new reads it (RS256 only), or null. */
export function headerKid(headerBase64: string): string | null {
  if (!/^[A-Za-z0-9_-]+$/.test(headerBase64)) return null
  try {
    const header = JSON.parse(Buffer.from(headerBase64, 'base64url').toString('utf8')) as { alg?: unknown; kid?: unknown }
    return header.alg === 'RS256' && typeof header.kid === 'string' ? header.kid : null
  } catch {
    return null
  }
}

export class ZkLoginVerifier {
  /** iss -> kid -> JWK: what the chain's JWK consensus holds. */
  readonly #providers = new Map<string, Map<string, JWK>>()
  /** JSON of the proof points -> the proof they stand for. */
  readonly #proofs = new Map<string, StubZkProof>()

  constructor() {
    this.addProvider(STUB_ZKLOGIN_ISSUER, { keys: [STUB_ZKLOGIN_JWK] })
  }

  /** Keys of a provider, merged into those already held (the chain keeps a rotated-out key until it expires). */
  addProvider(iss: string, jwks: { keys: JWK[] }): void {
    const keys = this.#providers.get(iss) ?? new Map<string, JWK>()
    for (const key of jwks.keys) {
      // fastcrypto's JWK::from_reader: only RSA keys with e = AQAB and alg RS256 become chain JWKs.
      if (typeof key.kid !== 'string' || key.kty !== 'RSA' || key.e?.replace(/=+$/, '') !== 'AQAB' || key.alg !== 'RS256' || typeof key.n !== 'string') {
        throw new Error(`addZkLoginProvider(${iss}): a JWK Sui would not accept (needs kid, kty RSA, e AQAB, alg RS256, n): ${JSON.stringify({ ...key, n: undefined })}`)
      }
      keys.set(key.kid, key)
    }
    this.#providers.set(iss, keys)
  }

  removeJwk(iss: string, kid: string): void {
    this.#providers.get(iss)?.delete(kid)
  }

  acceptProof(proof: StubZkProof): void {
    this.#proofs.set(JSON.stringify(proof.proofPoints), proof)
  }

  /** Resolves when the signature verifies for `author` over `message` at `epoch`; throws the real service's error otherwise. */
  async verify(zkLogin: ParsedZkLogin, message: Uint8Array, author: string, epoch: number): Promise<void> {
    const kid = headerKid(zkLogin.inputs.headerBase64)
    if (kid === null) throw suiError('Cannot parse signature', SUI_ERROR.BAD_USER_INPUT)
    const { iss } = zkLogin
    const maxEpoch = Number(zkLogin.maxEpoch)
    const bound = epoch + ZKLOGIN_MAX_EPOCH_UPPER_BOUND_DELTA
    if (maxEpoch > bound) throw failed(`ZKLogin max epoch too large ${maxEpoch}, current epoch ${epoch}, max accepted: ${bound}`)
    if (epoch > maxEpoch) throw failed(`ZKLogin expired at epoch ${maxEpoch}, current epoch ${epoch}`)
    const seed = zkLogin.addressSeed
    const addresses = [computeZkLoginAddressFromSeed(seed, iss, false), computeZkLoginAddressFromSeed(seed, iss, true)]
    if (!addresses.includes(normalizeSuiAddress(author))) throw failed('zkLogin address does not match the author')
    let ephemeral: string
    try {
      const signature = typeof zkLogin.userSignature === 'string' ? zkLogin.userSignature : toBase64(zkLogin.userSignature)
      ephemeral = (await verifyPersonalMessageSignature(message, signature)).toSuiAddress()
    } catch {
      throw failed('the ephemeral signature does not verify over the message')
    }
    const keys = this.#providers.get(iss)
    if (keys === undefined) throw failed(`JWK not found (${iss} - ${kid}): ${iss} is not an OpenID provider the chain holds keys for`)
    if (!keys.has(kid)) throw failed(`JWK not found (${iss} - ${kid})`)
    const proof = this.#proofs.get(JSON.stringify(zkLogin.inputs.proofPoints))
    if (
      proof === undefined || proof.iss !== iss || proof.kid !== kid || proof.addressSeed !== String(seed)
      || proof.ephemeralAddress !== ephemeral || proof.maxEpoch !== maxEpoch
    ) {
      throw failed('Groth16 proof verify failed')
    }
  }
}
