import { publicKeyFromSuiBytes } from '@mysten/sui/verify'
import type { PublicKey } from '@mysten/sui/cryptography'
import { generateNonce } from '@mysten/sui/zklogin'
import { ProofRefusedError, ProverUnavailableError } from '../errors.ts'
import type { Ledger } from '../ledger/ledger.ts'
import { clearProof, type ZkLoginProofShape } from '../ledger/zklogin/clear-proof.ts'
import { MAX_EPOCH_UPPER_BOUND_DELTA } from '../ledger/zklogin/verify-clear.ts'
import { claimProblem, fitsPaddedJwt, ZKLOGIN_LIMITS } from '../lib/zklogin-limits.ts'
import { verifyIdToken, type VerifiedIdToken } from './id-token.ts'
import type { Clients } from './clients.ts'
import { requestProof, type ProverRequest } from './prover-client.ts'
import type { SigningKeys } from './signing-keys.ts'

/**
 * The service's prover step (`POST /zklogin/v1/prove`), in the request and answer shapes of
 * Mysten's prover: checks what the prover would refuse, then asks the prover
 * (ZKLOGIN_PROVER_URL) for a Groth16 proof when the ledger is Sui, or, on the embedded ledger,
 * which cannot verify one, answers a clear proof carrying the witness (src/ledger/zklogin/).
 */
/** The prover's request as callers send it: any key claim name, which the step refuses unless it is `sub`. */
export type ProveRequest = Omit<ProverRequest, 'keyClaimName'> & { keyClaimName: string }

export interface ProveDeps {
  issuer: string
  keys: SigningKeys
  clients: Clients
  ledger: Ledger
  proverUrl: string | undefined
  proverTimeoutMs: number
}

interface ProveContext {
  request: ProveRequest
  deps: ProveDeps
  token?: VerifiedIdToken
  ephemeral?: PublicKey
}

type Step = { name: string; run(ctx: ProveContext): Promise<void> | void }
const step = (name: string, run: Step['run']): Step => ({ name, run })
const refuse = (message: string, field?: string) => new ProofRefusedError(message, field === undefined ? undefined : { field })

const FIELD_ELEMENT = /^\d{1,78}$/
const SALT_LIMIT = 2n ** 128n

const PROVE_STEPS: readonly Step[] = [
  step('verify_id_token', async (ctx) => { ctx.token = await verifyIdToken(ctx.deps, ctx.request.jwt) }),
  step('check_key_claim', (ctx) => {
    if (ctx.request.keyClaimName !== 'sub') throw refuse('keyClaimName must be "sub": zkAddresses of this provider are derived from the subject', 'keyClaimName')
  }),
  step('check_zklogin_bounds', (ctx) => {
    const { sub, aud } = ctx.token!
    const problem = claimProblem('sub', sub, ZKLOGIN_LIMITS.keyClaimValue) ?? claimProblem('aud', aud, ZKLOGIN_LIMITS.aud)
    if (problem !== null) throw refuse(problem, 'jwt')
    if (!fitsPaddedJwt(ctx.request.jwt)) throw refuse('the token is longer than the zkLogin circuit takes', 'jwt')
  }),
  step('check_ephemeral_key', (ctx) => {
    try {
      ctx.ephemeral = publicKeyFromSuiBytes(Buffer.from(ctx.request.extendedEphemeralPublicKey, 'base64'))
    } catch {
      throw refuse('extendedEphemeralPublicKey is not a Sui public key (flag and key bytes, base64)', 'extendedEphemeralPublicKey')
    }
  }),
  step('check_randomness_and_salt', (ctx) => {
    const { jwtRandomness, salt } = ctx.request
    if (!FIELD_ELEMENT.test(jwtRandomness)) throw refuse('jwtRandomness must be a decimal number', 'jwtRandomness')
    if (!FIELD_ELEMENT.test(salt) || BigInt(salt) >= SALT_LIMIT) throw refuse('salt must be a decimal number below 2^128', 'salt')
  }),
  step('check_nonce', (ctx) => {
    const expected = generateNonce(ctx.ephemeral!, ctx.request.maxEpoch, ctx.request.jwtRandomness)
    if (ctx.token!.nonce !== expected) throw refuse('the token\'s nonce is not that of this ephemeral key, max epoch and randomness', 'jwt')
  }),
  step('check_max_epoch', async (ctx) => {
    const current = await ctx.deps.ledger.currentEpoch()
    const { maxEpoch } = ctx.request
    if (maxEpoch < current) throw refuse(`maxEpoch ${maxEpoch} has passed (current epoch ${current})`, 'maxEpoch')
    if (maxEpoch > current + MAX_EPOCH_UPPER_BOUND_DELTA) throw refuse(`maxEpoch may be at most ${MAX_EPOCH_UPPER_BOUND_DELTA} epochs ahead (current epoch ${current})`, 'maxEpoch')
  }),
]

export async function prove(deps: ProveDeps, request: ProveRequest): Promise<ZkLoginProofShape> {
  const ctx: ProveContext = { request, deps }
  for (const s of PROVE_STEPS) await s.run(ctx)
  if (deps.ledger.kind === 'local') return clearProof({ jwt: request.jwt, salt: request.salt, randomness: request.jwtRandomness })
  if (deps.proverUrl === undefined) throw new ProverUnavailableError('no zkLogin prover is configured (ZKLOGIN_PROVER_URL)')
  return requestProof(deps.proverUrl, { ...request, keyClaimName: 'sub' }, { timeoutMs: deps.proverTimeoutMs })
}
