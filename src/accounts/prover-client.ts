/**
 * The client of Mysten's zkLogin prover (`ZKLOGIN_PROVER_URL`: the prover's `/v1` endpoint,
 * e.g. `https://prover.example/v1`, POSTed to as it is). One JSON request, one JSON answer:
 * the Groth16 proof points, the `iss` claim's Base64 slice and the JWT header, which with the
 * address seed and the ephemeral signature make a zkLogin signature.
 *
 * The prover is a service of its own, so the client trusts none of its answer:
 * - one deadline covers connecting, sending and reading the whole answer; the body is capped;
 *   a redirect is not followed (a prover that moved is a configuration to fix, and following
 *   it would send the user's token where nobody configured);
 * - a 2xx answer is validated field by field (sizes, field elements, the header and the `iss`
 *   slice taken from this very token); anything else is the prover's fault:
 *   ProverUnavailableError (503, retry);
 * - a 4xx answer is the prover saying no to these inputs: ProofRefusedError (422) with the
 *   prover's message, shortened and with the token, the salt and the randomness cut out.
 *   401/403/404/405 (the prover as configured cannot be asked) and 408/429 (busy, retry) are
 *   ProverUnavailableError instead: nothing the user could change would help;
 * - 5xx, no connection, the deadline: ProverUnavailableError.
 * The id_token and the salt are never in an error message, a cause or a log: nothing here logs.
 */
import { ProofRefusedError, ProverUnavailableError } from '../errors.ts'
import type { ZkLoginProofShape } from '../ledger/zklogin/clear-proof.ts'
import { inSpan, withTraceHeaders } from '../lib/tracing.ts'
import { ZKLOGIN_LIMITS } from '../lib/zklogin-limits.ts'

export interface ProverRequest {
  /** The user's id_token (RS256, `kid` in its header). Secret: never logged. */
  jwt: string
  /** The ephemeral public key as Sui encodes it (flag byte + key), Base64: `getExtendedEphemeralPublicKey()`. */
  extendedEphemeralPublicKey: string
  /** The last epoch the ephemeral key may sign in (the nonce commits to it). */
  maxEpoch: number
  /** The nonce's randomness, a decimal string. */
  jwtRandomness: string
  /** The user's salt, a decimal string. Secret: never logged. */
  salt: string
  /** The claim the address is derived from: always `sub` here. */
  keyClaimName: 'sub'
}

/** What the prover answers: with the address seed and the ephemeral signature, a zkLogin signature's inputs. */
export type ZkLoginProof = ZkLoginProofShape

/** A real answer is about 1.5 KiB. */
export const MAX_PROVER_ANSWER_BYTES = 64 * 1024
/** Sui's limit on the JWT header in a zkLogin signature (`MAX_HEADER_LEN_B64` in @mysten/sui). */
export const MAX_HEADER_BASE64 = ZKLOGIN_LIMITS.headerBase64
/** The circuit's longest extended `iss` claim, in Base64: fastcrypto's MAX_ISS_LEN_B64. */
const MAX_ISS_BASE64 = 4 * (1 + Math.floor(ZKLOGIN_LIMITS.extendedIss / 3))
/** The prover's own message is cut to this. */
const MAX_MESSAGE = 200
/** BN254's base field: every proof point coordinate is below it. */
const BN254_P = 21888242871839275222246405745257275088696311157297823662689037894645226208583n
const FIELD_DIGITS = /^(?:0|[1-9][0-9]{0,76})$/
const BASE64URL = /^[A-Za-z0-9_-]+$/
/** Statuses that say nothing about the inputs: the prover cannot be asked as configured, or is busy. */
const NOT_ABOUT_INPUTS = new Set([401, 403, 404, 405, 408, 429])

export async function requestProof(
  proverUrl: string, request: ProverRequest, options: { timeoutMs: number; signal?: AbortSignal },
): Promise<ZkLoginProof> {
  const deadline = AbortSignal.timeout(options.timeoutMs)
  const signal = options.signal === undefined ? deadline : AbortSignal.any([deadline, options.signal])
  const body = JSON.stringify({
    jwt: request.jwt,
    extendedEphemeralPublicKey: request.extendedEphemeralPublicKey,
    maxEpoch: request.maxEpoch,
    jwtRandomness: request.jwtRandomness,
    salt: request.salt,
    keyClaimName: request.keyClaimName,
  })
  let status: number
  let text: string
  try {
    // With tracing, a client span sending traceparent: the prover's host, never its path (the
    // operator's URL may carry a key) nor the inputs.
    ;({ status, text } = await inSpan('POST prover', {
      kind: 'client', attributes: { 'http.request.method': 'POST', 'kns.outbound.purpose': 'prover', 'server.address': hostOf(proverUrl) },
    }, async (span) => {
      const response = await fetch(proverUrl, {
        method: 'POST',
        headers: withTraceHeaders({ 'content-type': 'application/json', accept: 'application/json' }),
        body,
        redirect: 'manual',
        signal,
      })
      span.setAttribute('http.response.status_code', response.status)
      return { status: response.status, text: await readCapped(response) }
    }))
  } catch (err) {
    // The caller's own cancellation is the caller's: rethrown as it gave it.
    if (options.signal?.aborted === true && !deadline.aborted) throw options.signal.reason
    throw unavailable(err, options.timeoutMs)
  }
  if (status >= 200 && status < 300) return validProof(text, request)
  if (status >= 300 && status < 400) {
    throw new ProverUnavailableError(`the zkLogin prover answered a redirect (HTTP ${status}), which is not followed: check ZKLOGIN_PROVER_URL`)
  }
  const said = proverMessage(text, request)
  if (status >= 400 && status < 500 && !NOT_ABOUT_INPUTS.has(status)) {
    throw new ProofRefusedError(`the zkLogin prover refused the inputs (HTTP ${status})${said === '' ? '' : `: ${said}`}`)
  }
  throw new ProverUnavailableError(`the zkLogin prover answered HTTP ${status}${said === '' ? '' : `: ${said}`}`)
}

function hostOf(url: string): string | undefined {
  try {
    return new URL(url).hostname
  } catch {
    return undefined
  }
}

class AnswerTooLarge extends Error {}

/** The body as text, failing past MAX_PROVER_ANSWER_BYTES without reading the rest. */
async function readCapped(response: Response): Promise<string> {
  if (response.body === null) return ''
  const reader = response.body.getReader()
  const chunks: Uint8Array[] = []
  let size = 0
  for (;;) {
    const { done, value } = await reader.read()
    if (done) break
    size += value.byteLength
    if (size > MAX_PROVER_ANSWER_BYTES) {
      await reader.cancel().catch(() => {})
      throw new AnswerTooLarge()
    }
    chunks.push(value)
  }
  return Buffer.concat(chunks).toString('utf8')
}

/** Why the prover could not be asked, without the URL (it may carry a key) or anything sent. */
function unavailable(err: unknown, timeoutMs: number): ProverUnavailableError {
  if (err instanceof AnswerTooLarge) return new ProverUnavailableError(`the zkLogin prover's answer is over ${MAX_PROVER_ANSWER_BYTES} bytes`)
  if (err instanceof Error && (err.name === 'TimeoutError' || err.name === 'AbortError')) {
    return new ProverUnavailableError(`the zkLogin prover did not answer within ${timeoutMs} ms`)
  }
  const cause = (err as { cause?: { code?: unknown } } | undefined)?.cause
  const code = typeof cause?.code === 'string' && /^[A-Z0-9_]{1,40}$/.test(cause.code) ? ` (${cause.code})` : ''
  return new ProverUnavailableError(`the zkLogin prover could not be reached${code}`)
}

/**
 * The prover's reason for a refusal, fit for an answer and a log: its `error` or `message`
 * when it answered JSON, else its text; the token (and each of its parts), the salt and the
 * randomness cut out (the token's header and payload decoded too), anything shaped like a JWT;
 * control characters dropped; shortened.
 */
function proverMessage(text: string, request: ProverRequest): string {
  let said = text
  try {
    const json = JSON.parse(text) as unknown
    if (typeof json === 'object' && json !== null) {
      const { error, message } = json as { error?: unknown; message?: unknown }
      const picked = typeof error === 'string' ? error : typeof message === 'string' ? message : undefined
      if (picked !== undefined) said = picked
    } else if (typeof json === 'string') said = json
  } catch { /* plain text */ }
  const parts = request.jwt.split('.')
  const decoded = parts.slice(0, 2).map((part) => Buffer.from(part, 'base64url').toString('utf8'))
  const secrets = [request.jwt, ...parts, ...decoded, request.salt, request.jwtRandomness]
    .filter((s) => s.length >= 6)
    .sort((x, y) => y.length - x.length)
  for (const secret of secrets) said = said.split(secret).join('[redacted]')
  said = said
    .replace(/[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*/g, '[redacted]')
    .replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029]+/g, ' ')
    .replace(/\s+/g, ' ')
    .trim()
  return said.length > MAX_MESSAGE ? `${said.slice(0, MAX_MESSAGE)}…` : said
}

function malformed(why: string): ProverUnavailableError {
  return new ProverUnavailableError(`the zkLogin prover answered a malformed proof: ${why}`)
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

function fieldElements(value: unknown, count: number, name: string): string[] {
  if (!Array.isArray(value) || value.length !== count) throw malformed(`${name} is not ${count} numbers`)
  return value.map((item: unknown, i) => {
    if (typeof item !== 'string' || !FIELD_DIGITS.test(item) || BigInt(item) >= BN254_P) {
      throw malformed(`${name}[${i}] is not a decimal field element`)
    }
    return item
  })
}

/** The Base64URL substring `value`, at a position ≡ indexMod4 (mod 4) in the whole string, decoded (fastcrypto's decode_base64_url). */
function decodeSlice(value: string, indexMod4: number): string | null {
  const first = [0, 2, 4][indexMod4]
  const last = [0, 4, 2, 0][(indexMod4 + value.length - 1) % 4]
  if (first === undefined || last === undefined || (indexMod4 + value.length - 1) % 4 === 0) return null
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_'
  const bits = [...value].map((c) => alphabet.indexOf(c).toString(2).padStart(6, '0')).join('').slice(first, 6 * value.length - last)
  if (bits.length % 8 !== 0) return null
  const bytes = Uint8Array.from({ length: bits.length / 8 }, (_, i) => parseInt(bits.slice(8 * i, 8 * i + 8), 2))
  return new TextDecoder('utf-8', { fatal: true }).decode(bytes)
}

/**
 * A 2xx answer, checked as Sui will read it and against the token it is for: three field
 * elements in a and c, three pairs in b; the header is this token's header (Base64URL, within
 * Sui's limit); the `iss` slice is a slice of this token's payload at its indexMod4, and
 * decodes to one `"iss":"..."` claim ending in `,` or `}`. Only the known fields come back.
 */
function validProof(text: string, request: ProverRequest): ZkLoginProof {
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch {
    throw malformed('not JSON')
  }
  if (!isRecord(json)) throw malformed('not a JSON object')
  const { proofPoints, issBase64Details, headerBase64 } = json
  if (!isRecord(proofPoints)) throw malformed('no proofPoints')
  const a = fieldElements(proofPoints.a, 3, 'a')
  const c = fieldElements(proofPoints.c, 3, 'c')
  if (!Array.isArray(proofPoints.b) || proofPoints.b.length !== 3) throw malformed('b is not 3 pairs')
  const b = proofPoints.b.map((pair: unknown, i) => fieldElements(pair, 2, `b[${i}]`))
  if (typeof headerBase64 !== 'string' || !BASE64URL.test(headerBase64) || headerBase64.length > MAX_HEADER_BASE64) {
    throw malformed(`headerBase64 is not Base64URL of at most ${MAX_HEADER_BASE64} characters`)
  }
  const [header = '', payload = ''] = request.jwt.split('.')
  if (headerBase64 !== header) throw malformed('headerBase64 is not the header of the token sent')
  if (!isRecord(issBase64Details)) throw malformed('no issBase64Details')
  const { value, indexMod4 } = issBase64Details
  if (typeof value !== 'string' || !BASE64URL.test(value) || value.length < 2 || value.length > MAX_ISS_BASE64) {
    throw malformed(`issBase64Details.value is not Base64URL of 2 to ${MAX_ISS_BASE64} characters`)
  }
  if (typeof indexMod4 !== 'number' || !Number.isInteger(indexMod4) || indexMod4 < 0 || indexMod4 > 3) {
    throw malformed('issBase64Details.indexMod4 is not 0 to 3')
  }
  if (!occursAt(payload, value, indexMod4)) throw malformed('issBase64Details is not a slice of the token sent')
  let claim: string | null = null
  try {
    claim = decodeSlice(value, indexMod4)
  } catch { /* not UTF-8 */ }
  if (claim === null || !/[,}]$/.test(claim) || !isIssClaim(claim)) throw malformed('issBase64Details does not decode to the iss claim')
  return { proofPoints: { a, b, c }, issBase64Details: { value, indexMod4 }, headerBase64 }
}

function occursAt(haystack: string, needle: string, indexMod4: number): boolean {
  for (let at = haystack.indexOf(needle); at !== -1; at = haystack.indexOf(needle, at + 1)) {
    if (at % 4 === indexMod4) return true
  }
  return false
}

function isIssClaim(claim: string): boolean {
  try {
    const parsed = JSON.parse(`{${claim.slice(0, -1)}}`) as Record<string, unknown>
    return Object.keys(parsed).length === 1 && typeof parsed.iss === 'string'
  } catch {
    return false
  }
}
