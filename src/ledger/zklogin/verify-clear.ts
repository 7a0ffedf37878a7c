import { createPublicKey, verify as verifyRsa, type JsonWebKey } from 'node:crypto'
import { parseSerializedSignature, type PublicKey } from '@mysten/sui/cryptography'
import { toBase64 } from '@mysten/sui/utils'
import { publicKeyFromRawBytes, verifyPersonalMessageSignature } from '@mysten/sui/verify'
import { computeZkLoginAddressFromSeed, genAddressSeed, generateNonce } from '@mysten/sui/zklogin'
import { check, CheckFailed, runChecks, type Check } from '../../lib/checks.ts'
import type { SignatureVerdict } from '../ledger.ts'
import { readClaimBase64Details, readClearProof, type ClearWitness } from './clear-proof.ts'

/**
 * The embedded ledger's zkLogin verification: in the clear, every statement the Groth16
 * circuit proves and every check Sui's validators make around it, as named steps.
 *   iss listed; kid one of its published keys; the token signed by it; header as signed;
 *   aud one string; address seed = Poseidon(salt, sub, aud) and the author's address from it;
 *   nonce = the ephemeral key's, max epoch's and randomness's; max epoch not passed nor too
 *   far; the ephemeral key's signature over the message.
 * The token's own `exp` is not checked, as on Sui: a proof is good until its max epoch.
 */

/** The OpenID providers whose keys the embedded ledger trusts (Sui's validators fetch the listed providers' JWKS). */
export interface ZkLoginProviders {
  /** The published key `kid` of the listed issuer `iss`; null when the issuer is not listed or the key not published. */
  jwk(iss: string, kid: string): Promise<JsonWebKey | null>
  /** Whether `iss` is a listed provider at all. */
  lists(iss: string): boolean
}

/** Sui refuses a max epoch further ahead than this (protocol config `zklogin_max_epoch_upper_bound_delta`). */
export const MAX_EPOCH_UPPER_BOUND_DELTA = 30

interface ClearContext {
  message: Uint8Array
  signature: string
  author: string
  currentEpoch: number
  providers: ZkLoginProviders
  zk?: Extract<ReturnType<typeof parseSerializedSignature>, { signatureScheme: 'ZkLogin' }>['zkLogin']
  witness?: ClearWitness
  header?: { alg?: unknown; kid?: unknown }
  claims?: Record<string, unknown>
  jwk?: JsonWebKey
  ephemeral?: PublicKey
}

const fail = (message: string) => new CheckFailed('INVALID_SIGNATURE', message)

function json(segment: string): Record<string, unknown> {
  const value = JSON.parse(Buffer.from(segment, 'base64url').toString('utf8')) as unknown
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw new Error('not a JSON object')
  return value as Record<string, unknown>
}

const parse = check<ClearContext>('parse_zklogin_signature', (ctx) => {
  let parsed: ReturnType<typeof parseSerializedSignature>
  try {
    parsed = parseSerializedSignature(ctx.signature)
  } catch {
    throw fail('not a Sui serialized signature')
  }
  if (parsed.signatureScheme !== 'ZkLogin') throw fail(`a ${parsed.signatureScheme} signature, not zkLogin`)
  const witness = readClearProof(parsed.zkLogin.inputs.proofPoints)
  if (witness === null) throw fail('a Groth16 proof: the embedded ledger verifies only the clear proofs of this service\'s prover step (use LEDGER=sui for proofs of Mysten\'s prover)')
  const [header, payload, sig] = witness.jwt.split('.')
  if (header === undefined || payload === undefined || sig === undefined || witness.jwt.split('.').length !== 3) throw fail('the proof\'s token is not a compact JWS')
  try {
    ctx.header = json(header)
    ctx.claims = json(payload)
  } catch {
    throw fail('the proof\'s token has a header or payload that is not a JSON object')
  }
  ctx.zk = parsed.zkLogin
  ctx.witness = witness
})

const checkIssuer = check<ClearContext>('check_issuer', (ctx) => {
  let iss: unknown
  try {
    iss = readClaimBase64Details(ctx.zk!.inputs.issBase64Details, 'iss')
  } catch {
    throw fail('issBase64Details is not the token\'s iss claim')
  }
  if (iss !== ctx.claims!.iss || iss !== ctx.zk!.iss) throw fail('issBase64Details names another issuer than the token')
  if (typeof iss !== 'string' || !ctx.providers.lists(iss)) throw fail(`issuer ${String(iss)} is not a listed OpenID provider`)
  return iss
})

const checkKey = check<ClearContext>('check_jwk', async (ctx) => {
  if (ctx.zk!.inputs.headerBase64 !== ctx.witness!.jwt.split('.')[0]) throw fail('headerBase64 is not the token\'s header')
  const { alg, kid } = ctx.header!
  if (alg !== 'RS256') throw fail('the token is not RS256')
  if (typeof kid !== 'string') throw fail('the token\'s header names no kid')
  const jwk = await ctx.providers.jwk(ctx.claims!.iss as string, kid)
  if (jwk === null) throw fail(`kid ${kid} is not a published key of ${String(ctx.claims!.iss)}`)
  ctx.jwk = jwk
  return kid
})

const checkTokenSignature = check<ClearContext>('check_token_signature', (ctx) => {
  const [header, payload, sig] = ctx.witness!.jwt.split('.') as [string, string, string]
  let ok = false
  try {
    ok = verifyRsa('RSA-SHA256', Buffer.from(`${header}.${payload}`), createPublicKey({ key: ctx.jwk!, format: 'jwk' }), Buffer.from(sig, 'base64url'))
  } catch {
    ok = false
  }
  if (!ok) throw fail('the token\'s signature does not verify with the provider\'s key')
})

const checkAddressSeed = check<ClearContext>('check_address_seed', (ctx) => {
  const { sub, aud } = ctx.claims!
  if (typeof aud !== 'string') throw fail('aud must be one string')
  if (typeof sub !== 'string') throw fail('the token has no sub')
  let seed: bigint
  try {
    seed = genAddressSeed(BigInt(ctx.witness!.salt), 'sub', sub, aud)
  } catch {
    throw fail('sub, aud or the salt is out of zkLogin\'s bounds')
  }
  if (seed !== ctx.zk!.addressSeed) throw fail('the address seed is not Poseidon(salt, sub, aud) of this token')
  const iss = ctx.zk!.iss
  const addresses = [computeZkLoginAddressFromSeed(seed, iss, false), computeZkLoginAddressFromSeed(seed, iss, true)]
  if (!addresses.includes(ctx.author)) throw fail('the zkLogin address does not match the author')
})

const checkNonce = check<ClearContext>('check_nonce', (ctx) => {
  let ephemeral: PublicKey
  try {
    const inner = parseSerializedSignature(toBase64(ctx.zk!.userSignature as Uint8Array))
    if (inner.signatureScheme === 'ZkLogin' || inner.signatureScheme === 'MultiSig' || inner.signatureScheme === 'Passkey') throw new Error('nested')
    ephemeral = publicKeyFromRawBytes(inner.signatureScheme, inner.publicKey)
  } catch {
    throw fail('the ephemeral signature is not a plain Sui signature')
  }
  let expected: string
  try {
    expected = generateNonce(ephemeral, Number(ctx.zk!.maxEpoch), ctx.witness!.randomness)
  } catch {
    throw fail('the randomness is not a number')
  }
  if (ctx.claims!.nonce !== expected) throw fail('the token\'s nonce is not that of this ephemeral key, max epoch and randomness')
  ctx.ephemeral = ephemeral
})

const checkMaxEpoch = check<ClearContext>('check_max_epoch', (ctx) => {
  const maxEpoch = Number(ctx.zk!.maxEpoch)
  if (maxEpoch < ctx.currentEpoch) throw fail(`max epoch ${maxEpoch} has passed (current epoch ${ctx.currentEpoch})`)
  if (maxEpoch > ctx.currentEpoch + MAX_EPOCH_UPPER_BOUND_DELTA) throw fail(`max epoch ${maxEpoch} is more than ${MAX_EPOCH_UPPER_BOUND_DELTA} epochs ahead`)
})

const checkEphemeralSignature = check<ClearContext>('check_ephemeral_signature', async (ctx) => {
  try {
    const key = await verifyPersonalMessageSignature(ctx.message, toBase64(ctx.zk!.userSignature as Uint8Array))
    if (key.toSuiAddress() !== ctx.ephemeral!.toSuiAddress()) throw new Error('another key')
  } catch {
    throw fail('the ephemeral signature does not verify over the message')
  }
})

export const VERIFY_ZKLOGIN_CLEAR: readonly Check<ClearContext>[] = [
  parse, checkIssuer, checkKey, checkTokenSignature, checkAddressSeed, checkNonce, checkMaxEpoch, checkEphemeralSignature,
]

export async function verifyClearZkLogin(input: Omit<ClearContext, 'zk' | 'witness' | 'header' | 'claims' | 'jwk' | 'ephemeral'>): Promise<SignatureVerdict> {
  const outcome = await runChecks(VERIFY_ZKLOGIN_CLEAR, { ...input })
  return outcome.ok ? { valid: true } : { valid: false, reason: `${outcome.failedStep}: ${outcome.message}` }
}
