/**
 * "Approve with your phone number", the zkLogin part (loaded only when used): the ephemeral key
 * and nonce before the login, then after it the salt, the proof and the zkLogin signature, as
 * a wallet would make them (docs/accounts.md). The ephemeral key is made here and never sent:
 * the service sees only its public key (in the nonce and the proof request) and signatures.
 */
import { Ed25519Keypair } from '@mysten/sui/keypairs/ed25519'
import { normalizeSuiAddress } from '@mysten/sui/utils'
import {
  computeZkLoginAddressFromSeed, decodeJwt, genAddressSeed, generateNonce, generateRandomness, getExtendedEphemeralPublicKey, getZkLoginSignature,
} from '@mysten/sui/zklogin'
import { getJson, postJson } from '../shared/api.ts'
import { maskPhone } from '../shared/mask-phone.ts'
import type { PageConfig } from '../shared/page-config.ts'
import { FlowError, fromApi as api } from './flow.ts'
import { savePending, type PendingLogin } from './phone-session.ts'

/** Epochs the ephemeral key stays valid past the current one (a Sui epoch is ~24 h; the ledger allows up to its maxEpochAhead). */
const EPOCHS_AHEAD = 2

interface ProofInputs {
  proofPoints: { a: string[]; b: string[][]; c: string[] }
  issBase64Details: { value: string; indexMod4: number }
  headerBase64: string
}

function randomState(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(16))
  return btoa(String.fromCharCode(...bytes)).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '')
}

/** Makes the ephemeral key and nonce, keeps them for the way back, and goes to the provider's login. */
export async function startPhoneLogin(ref: string, config: PageConfig): Promise<void> {
  const { epoch, maxEpochAhead } = await api(getJson<{ epoch: number; maxEpochAhead: number }>('/zklogin/v1/epoch'))
  const ephemeral = new Ed25519Keypair()
  const maxEpoch = epoch + Math.min(EPOCHS_AHEAD, maxEpochAhead)
  const randomness = String(generateRandomness())
  const pending: PendingLogin = { state: randomState(), ref, secretKey: ephemeral.getSecretKey(), maxEpoch, randomness, startedAt: Date.now() }
  savePending(pending)
  const auth = new URL(config.loginAuthUrl, location.href)
  auth.search = new URLSearchParams({
    client_id: config.loginClientId,
    redirect_uri: config.loginRedirectUri,
    response_type: 'id_token',
    scope: 'openid',
    // Always ask for the number and a code: a login approves, so it is never silent.
    prompt: 'login',
    nonce: generateNonce(ephemeral.getPublicKey(), maxEpoch, randomness),
    state: pending.state,
  }).toString()
  location.assign(auth.href)
}

/** Signs personal messages as the phone-login address. */
export type PhoneSigner = (text: string) => Promise<string>

/**
 * After the login: the salt, the check that this login owns the request (before a proof is
 * asked for), the proof, and a signer. `owner` is the address that must approve.
 */
export async function phoneSigner(pending: PendingLogin, idToken: string, owner: string, progress: (text: string) => void): Promise<PhoneSigner> {
  let claims: ReturnType<typeof decodeJwt>
  try {
    claims = decodeJwt(idToken)
  } catch {
    throw new FlowError('The login came back with an identity this page cannot read. Try again.', 'INVALID_ID_TOKEN')
  }
  progress('Checking your login…')
  const { salt } = await api(postJson<{ salt: string }>('/zklogin/v1/salt', { token: idToken }))
  const addressSeed = genAddressSeed(BigInt(salt), 'sub', claims.sub, claims.aud).toString()
  const addresses = [false, true].map((legacy) => normalizeSuiAddress(computeZkLoginAddressFromSeed(BigInt(addressSeed), claims.iss, legacy)))
  if (!addresses.includes(normalizeSuiAddress(owner))) {
    const loggedIn = (claims as Record<string, unknown>).phone_number
    const number = typeof loggedIn === 'string' ? maskPhone(loggedIn) : 'another number'
    throw new FlowError(`You logged in with ${number}, which does not own this request's phone number. Log in with the number shown above.`, 'NOT_OWNER')
  }
  const ephemeral = Ed25519Keypair.fromSecretKey(pending.secretKey)
  progress('Preparing your signature…')
  const proof = await api(postJson<ProofInputs>('/zklogin/v1/prove', {
    jwt: idToken,
    extendedEphemeralPublicKey: getExtendedEphemeralPublicKey(ephemeral.getPublicKey()),
    maxEpoch: pending.maxEpoch,
    jwtRandomness: pending.randomness,
    salt,
    keyClaimName: 'sub',
  }))
  return async (text) => {
    const { signature: userSignature } = await ephemeral.signPersonalMessage(new TextEncoder().encode(text))
    return getZkLoginSignature({ inputs: { ...proof, addressSeed }, maxEpoch: String(pending.maxEpoch), userSignature })
  }
}
