/**
 * The embedded ledger's stand-in for a zkLogin Groth16 proof. It cannot verify a proof (that
 * needs the circuit's verifying key and a pairing library Sui runs natively), so the service's
 * own prover step carries the witness instead, in the clear: the id_token, the salt and the
 * nonce's randomness, in the proof points' strings of a standard zkLogin signature. The
 * embedded ledger then checks in the clear everything the circuit would prove
 * (src/ledger/zklogin/verify-clear.ts). Every other part of the signature (issuer details,
 * header, address seed, max epoch, ephemeral signature) is exactly what Sui receives.
 *
 * Nothing secret is exposed by it that the circuit hides from anyone but the ledger: the
 * signature goes only to this service, which issued the token and derives the salt.
 */
export const CLEAR_PROOF_MARKER = 'kns-clear-proof-v1'

export interface ZkLoginProofShape {
  proofPoints: { a: string[]; b: string[][]; c: string[] }
  issBase64Details: { value: string; indexMod4: number }
  headerBase64: string
}

export interface ClearWitness { jwt: string; salt: string; randomness: string }

export function clearProof(witness: ClearWitness): ZkLoginProofShape {
  const [header = ''] = witness.jwt.split('.')
  return {
    proofPoints: { a: [CLEAR_PROOF_MARKER, witness.jwt], b: [[witness.salt, witness.randomness]], c: [] },
    issBase64Details: claimBase64Details(witness.jwt, 'iss'),
    headerBase64: header,
  }
}

/** The witness of a clear proof, or null when the points are not one (e.g. a real Groth16 proof). */
export function readClearProof(points: { a: string[]; b: string[][]; c: string[] }): ClearWitness | null {
  const [marker, jwt] = points.a
  const [salt, randomness] = points.b[0] ?? []
  if (marker !== CLEAR_PROOF_MARKER || points.a.length !== 2 || points.b.length !== 1 || points.c.length !== 0) return null
  if (jwt === undefined || salt === undefined || randomness === undefined) return null
  return { jwt, salt, randomness }
}

/**
 * The base64url characters of the JWT payload that cover the claim `"name":<value>` and the
 * `,` or `}` after it, and where they start mod 4: zkLogin's `issBase64Details`, the form the
 * prover returns and `extractClaimValue` of @mysten/sui decodes. Throws when the payload has
 * no such claim.
 */
export function claimBase64Details(jwt: string, name: string): { value: string; indexMod4: number } {
  const payloadB64 = jwt.split('.')[1] ?? ''
  const payload = Buffer.from(payloadB64, 'base64url')
  const key = Buffer.from(`"${name}":`)
  const start = payload.indexOf(key)
  if (start < 0) throw new Error(`the JWT has no ${name} claim`)
  // The claim ends at the first , or } after its (string) value: zkLogin's claims hold no escapes.
  const valueStart = start + key.length
  let end = valueStart
  if (payload[end] === 0x22) {
    end = payload.indexOf(0x22, end + 1)
    if (end < 0) throw new Error(`the ${name} claim is not terminated`)
    end += 1
  }
  while (end < payload.length && payload[end] !== 0x2c && payload[end] !== 0x7d) end++
  if (end >= payload.length) throw new Error(`the ${name} claim is not terminated`)
  end += 1
  const first = Math.floor((start * 8) / 6)
  const last = Math.floor((end * 8 - 1) / 6)
  return { value: payloadB64.slice(first, last + 1), indexMod4: first % 4 }
}

/**
 * The value of the claim `name` that `details` covers (the inverse of claimBase64Details, as
 * @mysten/sui's extractClaimValue reads it): the first `indexMod4` characters' leading bits
 * belong to the byte before, so as many filler characters are put in front and as many bytes
 * dropped. Throws unless it is exactly one `"name":value` followed by `,` or `}`.
 */
export function readClaimBase64Details(details: { value: string; indexMod4: number }, name: string): unknown {
  const { value, indexMod4 } = details
  if (!/^[A-Za-z0-9_-]{2,}$/.test(value) || indexMod4 < 0 || indexMod4 > 2) throw new Error('not a claim\'s base64 details')
  const claim = Buffer.from('A'.repeat(indexMod4) + value, 'base64url').subarray(indexMod4).toString('utf8')
  if (!claim.endsWith(',') && !claim.endsWith('}')) throw new Error('not a whole claim')
  const parsed = JSON.parse(`{${claim.slice(0, -1)}}`) as Record<string, unknown>
  const keys = Object.keys(parsed)
  if (keys.length !== 1 || keys[0] !== name) throw new Error(`not the ${name} claim`)
  return parsed[name]
}
