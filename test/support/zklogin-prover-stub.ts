/**
 * A stand-in for Mysten's zkLogin prover (`POST /v1`), for tests: it refuses (HTTP 400, a JSON
 * `{ error }`) what the real prover refuses, and otherwise answers what the real one answers
 * except the Groth16 proof itself, which needs the proving key and minutes of CPU:
 * - the request's shape: the six fields, `keyClaimName` `sub`, decimal randomness and salt;
 * - the JWT: RS256, a `kid` the OpenID provider's JWKS holds (read on every request, so a
 *   rotation shows at once), a signature that verifies with that key (jose), within the
 *   circuit's sizes (header <= 279 Base64 characters, the SHA-2 padded `header.payload` <= 1920
 *   bytes), from `issuer` when one is set;
 * - the claims the circuit reads: `iss`, `sub` (<= 115 characters), `aud` (one string, <= 145
 *   characters), written plainly in the payload (`"sub":"..."`, no JSON escapes, followed by
 *   `,` or `}`), and the `nonce`, which must be generateNonce(ephemeral key, maxEpoch,
 *   jwtRandomness): the proof binds the token to that key and epoch;
 * - the answer: random field elements as proof points (as test/support/zklogin.ts makes them),
 *   `issBase64Details` computed from the payload as the prover computes it (`issBase64Details`
 *   below), and the JWT's header as `headerBase64`.
 * Before answering it calls `onProof` with what a real proof would be bound to, so a test can
 * register it with the Sui GraphQL stub: `onProof: (p) => sui.world.acceptZkProof(p)`.
 */
import { randomBytes } from 'node:crypto'
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { compactVerify, importJWK, type JSONWebKeySet } from 'jose'
import { publicKeyFromSuiBytes } from '@mysten/sui/verify'
import { genAddressSeed, generateNonce } from '@mysten/sui/zklogin'
import type { StubZkProof } from '../ledger/sui-graphql-zklogin.ts'

export interface ZkLoginProverStubOptions {
  /** The OpenID provider's JWKS: a function giving it, or its `jwks_uri` (fetched on every request). */
  jwks: (() => JSONWebKeySet | Promise<JSONWebKeySet>) | string
  /** The issuer the prover serves: a token of another is refused. Unset: any issuer whose key verifies. */
  issuer?: string
  /** Called with each proof before it is answered (e.g. to register it with the Sui GraphQL stub). */
  onProof?: (proof: StubZkProof) => void | Promise<void>
}

export interface ZkLoginProverStub {
  /** The `/v1` endpoint: what ZKLOGIN_PROVER_URL is set to. */
  url: string
  /** Every request body received, parsed (null when it was not JSON), oldest first. */
  readonly requests: Array<Record<string, unknown> | null>
  /** Every refusal's message, oldest first. */
  readonly refusals: string[]
  /** The proofs answered, oldest first. */
  readonly proofs: StubZkProof[]
  /** Answer every request with an HTTP status of this (plain-text body), and/or after a stall; null to clear. */
  fault(fault: { status?: number; delayMs?: number } | null): void
  close(): Promise<void>
}

/** The circuit's limits (zkLogin circuit; @mysten/sui's zklogin utils and address.ts). */
export const ZKLOGIN_LIMITS = {
  headerBase64: 279, paddedUnsignedJwtBytes: 64 * 30, sub: 115, aud: 145, extendedIss: 165,
} as const
const BN254_R = 21888242871839275222246405745257275088548364400416034343698204186575808495617n
const DECIMAL = /^(?:0|[1-9][0-9]{0,77})$/
const BASE64URL = /^[A-Za-z0-9_-]+$/

class Refusal extends Error {}
function refuse(message: string): never {
  throw new Refusal(message)
}

/**
 * The `iss` claim as a zkLogin signature carries it, computed as Mysten's prover does
 * (zklogin circuits' jwtutils `indicesOfB64`, fastcrypto's `decode_base64_url` reads it back):
 * the extended claim is `"iss":"<value>"` plus the character after it (`,` or `}`), found in
 * the decoded payload at byte p with length n; its Base64URL slice runs from the character
 * holding its first bit, floor(8p / 6), to the one holding its last, floor((8(p + n) - 1) / 6),
 * and indexMod4 is the slice's start mod 4 (the decoder drops 0, 2 or 4 leading bits for 0, 1, 2).
 */
export function issBase64Details(payloadBase64: string): { value: string; indexMod4: number } {
  const raw = Buffer.from(payloadBase64, 'base64url')
  const claims = JSON.parse(raw.toString('utf8')) as { iss?: unknown }
  if (typeof claims.iss !== 'string') return refuse('the JWT has no iss claim')
  const claim = Buffer.from(`"iss":${JSON.stringify(claims.iss)}`)
  const at = raw.indexOf(claim)
  const next = at === -1 ? undefined : raw[at + claim.length]
  if (next !== 0x2c && next !== 0x7d) return refuse('the iss claim is not written as "iss":"<value>" followed by , or }')
  const length = claim.length + 1
  if (length > ZKLOGIN_LIMITS.extendedIss) refuse(`the iss claim is longer than the circuit's ${ZKLOGIN_LIMITS.extendedIss} bytes`)
  const start = Math.floor((8 * at) / 6)
  const end = Math.floor((8 * (at + length) - 1) / 6)
  return { value: payloadBase64.slice(start, end + 1), indexMod4: start % 4 }
}

function decimal(value: unknown, name: string, below: bigint): string {
  if (typeof value !== 'string' || !DECIMAL.test(value) || BigInt(value) >= below) refuse(`${name} must be a decimal string below the BN254 field size`)
  return value
}

/** A claim the circuit reads: a plain string, written exactly as `"name":"value"` and followed by `,` or `}`. */
function plainClaim(raw: string, claims: Record<string, unknown>, name: string, max: number): string {
  const value = claims[name]
  if (typeof value !== 'string') return refuse(`the ${name} claim must be a string`)
  if (value.length > max) refuse(`the ${name} claim is longer than ${max} characters`)
  if (/["\\\u0000-\u001f]/.test(value)) refuse(`the ${name} claim contains a character JSON escapes`)
  const written = `"${name}":"${value}"`
  const at = raw.indexOf(written)
  if (at === -1 || ![',', '}'].includes(raw[at + written.length] ?? '')) {
    refuse(`the ${name} claim is not written as "${name}":"<value>" followed by , or } (escapes or spaces in the payload)`)
  }
  return value
}

async function loadJwks(source: ZkLoginProverStubOptions['jwks']): Promise<JSONWebKeySet> {
  if (typeof source !== 'string') return source()
  const response = await fetch(source, { signal: AbortSignal.timeout(5000), redirect: 'error' })
  if (!response.ok) throw new Error(`the JWKS at ${source} answered HTTP ${response.status}`)
  return await response.json() as JSONWebKeySet
}

const field = () => BigInt('0x' + randomBytes(31).toString('hex')).toString()

/** The prover's checks and answer for one request body. */
async function prove(body: Record<string, unknown>, options: ZkLoginProverStubOptions): Promise<{ answer: unknown; proof: StubZkProof }> {
  const { jwt, extendedEphemeralPublicKey, maxEpoch, jwtRandomness, salt, keyClaimName } = body
  if (keyClaimName !== 'sub') refuse('keyClaimName must be "sub"')
  if (typeof jwt !== 'string') return refuse('jwt must be a string')
  if (typeof extendedEphemeralPublicKey !== 'string') return refuse('extendedEphemeralPublicKey must be a string')
  const epoch = typeof maxEpoch === 'string' && /^[0-9]{1,15}$/.test(maxEpoch) ? Number(maxEpoch) : maxEpoch
  if (typeof epoch !== 'number' || !Number.isSafeInteger(epoch) || epoch < 0) return refuse('maxEpoch must be a non-negative integer')
  const randomness = decimal(jwtRandomness, 'jwtRandomness', BN254_R)
  const userSalt = decimal(salt, 'salt', BN254_R)

  const parts = jwt.split('.')
  if (parts.length !== 3 || !parts.every((part) => BASE64URL.test(part))) return refuse('jwt is not a compact JWS')
  const [header, payload] = parts as [string, string, string]
  if (header.length > ZKLOGIN_LIMITS.headerBase64) refuse(`the JWT header is longer than ${ZKLOGIN_LIMITS.headerBase64} Base64 characters`)
  const unsignedBits = (header.length + 1 + payload.length) * 8
  const paddedBytes = (unsignedBits + 1 + ((512 + 448 - ((unsignedBits % 512) + 1)) % 512) + 64) / 8
  if (paddedBytes > ZKLOGIN_LIMITS.paddedUnsignedJwtBytes) refuse('the JWT is too long for the circuit')
  let protectedHeader: { alg?: unknown; kid?: unknown }
  try {
    protectedHeader = JSON.parse(Buffer.from(header, 'base64url').toString('utf8')) as typeof protectedHeader
  } catch {
    return refuse('the JWT header is not JSON')
  }
  if (protectedHeader.alg !== 'RS256') refuse('the JWT must be signed with RS256')
  const kid = protectedHeader.kid
  if (typeof kid !== 'string') return refuse('the JWT header has no kid')
  const jwks = await loadJwks(options.jwks)
  const jwk = (jwks.keys ?? []).find((key) => key.kid === kid)
  if (jwk === undefined) return refuse(`the provider's JWKS has no key "${kid}"`)
  try {
    await compactVerify(jwt, await importJWK({ ...jwk, alg: 'RS256' }, 'RS256'), { algorithms: ['RS256'] })
  } catch {
    refuse('the JWT signature does not verify with the provider\'s key')
  }

  const raw = Buffer.from(payload, 'base64url').toString('utf8')
  let claims: Record<string, unknown>
  try {
    claims = JSON.parse(raw) as Record<string, unknown>
  } catch {
    return refuse('the JWT payload is not JSON')
  }
  if (Array.isArray(claims.aud)) refuse('the aud claim must be one string, not an array')
  const iss = plainClaim(raw, claims, 'iss', ZKLOGIN_LIMITS.extendedIss)
  if (options.issuer !== undefined && iss !== options.issuer) refuse(`the issuer ${iss} is not served by this prover`)
  const sub = plainClaim(raw, claims, 'sub', ZKLOGIN_LIMITS.sub)
  const aud = plainClaim(raw, claims, 'aud', ZKLOGIN_LIMITS.aud)
  if (typeof claims.nonce !== 'string') refuse('the JWT has no nonce claim')

  let ephemeral: ReturnType<typeof publicKeyFromSuiBytes>
  try {
    if (!/^[A-Za-z0-9+/]+={0,2}$/.test(extendedEphemeralPublicKey)) throw new Error('not Base64')
    ephemeral = publicKeyFromSuiBytes(extendedEphemeralPublicKey)
    // Flags 0, 1, 2: Ed25519, Secp256k1, Secp256r1, the schemes an ephemeral key may have.
    if (![0, 1, 2].includes(ephemeral.flag())) throw new Error('not an ephemeral key scheme')
  } catch {
    return refuse('extendedEphemeralPublicKey is not a Sui public key (flag byte + Ed25519/Secp256k1/Secp256r1 key, Base64)')
  }
  if (generateNonce(ephemeral, epoch, randomness) !== claims.nonce) {
    refuse('the JWT nonce is not the nonce of this ephemeral key, maxEpoch and jwtRandomness')
  }

  const proofPoints = { a: [field(), field(), '1'], b: [[field(), field()], [field(), field()], ['1', '0']], c: [field(), field(), '1'] }
  const proof: StubZkProof = {
    proofPoints,
    addressSeed: genAddressSeed(BigInt(userSalt), 'sub', sub, aud).toString(),
    ephemeralAddress: ephemeral.toSuiAddress(),
    maxEpoch: epoch,
    iss,
    kid,
  }
  return { answer: { proofPoints, issBase64Details: issBase64Details(payload), headerBase64: header }, proof }
}

export async function startZkLoginProverStub(options: ZkLoginProverStubOptions): Promise<ZkLoginProverStub> {
  const requests: ZkLoginProverStub['requests'] = []
  const refusals: string[] = []
  const proofs: StubZkProof[] = []
  let fault: { status?: number; delayMs?: number } | null = null

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const send = (status: number, body: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' })
      res.end(JSON.stringify(body))
    }
    if (req.method !== 'POST' || req.url !== '/v1') return send(404, { error: 'Not found' })
    const chunks: Buffer[] = []
    for await (const chunk of req) chunks.push(chunk as Buffer)
    let body: Record<string, unknown> | null = null
    try {
      const parsed = JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown
      if (typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)) body = parsed as Record<string, unknown>
    } catch { /* below */ }
    requests.push(body)
    if (fault?.delayMs !== undefined) await new Promise((resolve) => setTimeout(resolve, fault?.delayMs))
    if (fault?.status !== undefined) {
      res.writeHead(fault.status, { 'content-type': 'text/plain' })
      return void res.end(`injected fault ${fault.status}`)
    }
    if (body === null) {
      refusals.push('the body is not a JSON object')
      return send(400, { error: 'the body is not a JSON object' })
    }
    try {
      const { answer, proof } = await prove(body, options)
      await options.onProof?.(proof)
      proofs.push(proof)
      send(200, answer)
    } catch (err) {
      if (!(err instanceof Refusal)) throw err
      refusals.push(err.message)
      send(400, { error: err.message })
    }
  }

  const server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      if (!res.headersSent) res.writeHead(500, { 'content-type': 'text/plain' })
      res.end(`prover stub fault: ${String(error)}`)
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}/v1`,
    requests,
    refusals,
    proofs,
    fault(value) { fault = value },
    close: () => new Promise<void>((resolve, reject) => {
      server.closeAllConnections()
      server.close((error) => (error ? reject(error) : resolve()))
    }),
  }
}
