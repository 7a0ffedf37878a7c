/**
 * What the approval page does for an owner without a wallet, as a test helper: an ephemeral key,
 * the zkLogin nonce, the provider's login (number, code), back with the id_token, then the salt,
 * the proof (the service's prover step), and zkLogin signatures made with the ephemeral key.
 */
import assert from 'node:assert/strict'
import { Ed25519Keypair } from '@mysten/sui/keypairs/ed25519'
import { computeZkLoginAddressFromSeed, genAddressSeed, generateNonce, generateRandomness, getExtendedEphemeralPublicKey, getZkLoginSignature } from '@mysten/sui/zklogin'
import { decodeJwt } from 'jose'
import type { ZkLoginProofShape } from '../../src/ledger/zklogin/clear-proof.ts'
import { Browser, logIn, type LoginServer } from './login.ts'

export type ZkProof = ZkLoginProofShape

export interface PhoneLogin {
  idToken: string
  salt: string
  maxEpoch: number
  randomness: string
  ephemeral: Ed25519Keypair
  proof: ZkProof
  addressSeed: string
  address: string
  /** A zkLogin personal-message signature over `text` (optionally with other parts swapped in). */
  sign(text: string, overrides?: { proof?: ZkProof; maxEpoch?: number; addressSeed?: string; ephemeral?: Ed25519Keypair }): Promise<string>
}

export async function postJson(url: string, body: unknown): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })
  return { status: res.status, body: await res.json() as Record<string, unknown> }
}

/** Logs `phone` in through the built-in client (the approval page's) and gets everything to sign with. */
export async function phoneLogin(server: LoginServer, phone: string, options: { maxEpoch?: number; prove?: boolean } = {}): Promise<PhoneLogin> {
  const ephemeral = new Ed25519Keypair()
  const epoch = await (await fetch(`${server.base}/zklogin/v1/epoch`)).json() as { epoch: number }
  const maxEpoch = options.maxEpoch ?? epoch.epoch + 2
  const randomness = generateRandomness()
  const nonce = generateNonce(ephemeral.getPublicKey(), maxEpoch, randomness)
  const auth = new URL(`${server.issuer}/auth`)
  auth.search = new URLSearchParams({
    client_id: server.h.service.config.zkLoginClientId, redirect_uri: `${server.base}/approve`, response_type: 'id_token',
    scope: 'openid', nonce, state: 'st', prompt: 'login',
  }).toString()
  const callback = new URL(await logIn(server, new Browser(), auth.href, phone))
  const idToken = new URLSearchParams(callback.hash.slice(1)).get('id_token')
  assert.ok(idToken, `an id_token in ${callback.href}`)
  const salted = await postJson(`${server.base}/zklogin/v1/salt`, { token: idToken })
  assert.equal(salted.status, 200, JSON.stringify(salted.body))
  const salt = String(salted.body.salt)
  const claims = decodeJwt(idToken)
  const seed = genAddressSeed(BigInt(salt), 'sub', claims.sub!, claims.aud as string)
  let proof: ZkProof = { proofPoints: { a: [], b: [], c: [] }, issBase64Details: { value: '', indexMod4: 0 }, headerBase64: '' }
  if (options.prove !== false) {
    const proved = await postJson(`${server.base}/zklogin/v1/prove`, {
      jwt: idToken, extendedEphemeralPublicKey: getExtendedEphemeralPublicKey(ephemeral.getPublicKey()), maxEpoch, jwtRandomness: randomness, salt, keyClaimName: 'sub',
    })
    assert.equal(proved.status, 200, JSON.stringify(proved.body))
    proof = proved.body as unknown as ZkProof
  }
  const seedText = seed.toString()
  return {
    idToken, salt, maxEpoch, randomness, ephemeral, proof, addressSeed: seedText,
    address: computeZkLoginAddressFromSeed(seed, claims.iss!, false),
    async sign(text, overrides = {}) {
      const key = overrides.ephemeral ?? ephemeral
      const { signature: userSignature } = await key.signPersonalMessage(new TextEncoder().encode(text))
      return getZkLoginSignature({
        inputs: { ...(overrides.proof ?? proof), addressSeed: overrides.addressSeed ?? seedText },
        maxEpoch: String(overrides.maxEpoch ?? maxEpoch),
        userSignature,
      })
    },
  }
}
