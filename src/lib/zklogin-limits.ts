/**
 * What a JWT must fit to become a zkLogin proof. The circuit hashes the raw bytes of the JWT's
 * claims in fixed-size buffers, and @mysten/sui refuses inputs past them before any prover is
 * asked (`genAddressSeed`, `jwtToAddress`); Sui's zkLogin circuit bounds the extended issuer
 * claim (`"iss":"<value>",`) as well. Values from @mysten/sui's zklogin utils and address
 * modules and the circuit's parameters (maxExtIssLength = 165).
 */
export const ZKLOGIN_LIMITS = {
  /** The key claim's value (`sub`): MAX_KEY_CLAIM_VALUE_LENGTH. */
  keyClaimValue: 115,
  /** The `aud` value: MAX_AUD_VALUE_LENGTH. */
  aud: 145,
  /** The extended issuer claim `"iss":"<value>",`, bytes: the circuit's maxExtIssLength. */
  extendedIss: 165,
  /** `"iss":"` + value + `",` within extendedIss. */
  iss: 165 - '"iss":"",'.length,
  /** The JWT header, base64url: MAX_HEADER_LEN_B64. */
  headerBase64: 279,
  /** header.payload after SHA-256 padding, bytes: MAX_PADDED_UNSIGNED_JWT_LEN. */
  paddedUnsignedJwt: 1920,
} as const

/**
 * The circuit reads claim values as raw JSON bytes, so a value that JSON would escape (a quote,
 * a backslash, a control character) cannot be proven. Non-ASCII is refused too: it is written
 * as is by some encoders and escaped by others, and lengths are counted in bytes.
 */
export function needsJsonEscape(value: string): boolean {
  return !/^[\x20-\x7e]*$/.test(value) || value.includes('"') || value.includes('\\')
}

/** Why `value` cannot be the claim `name` of a zkLogin JWT, or null when it can. */
export function claimProblem(name: string, value: string, max: number): string | null {
  if (needsJsonEscape(value)) return `${name} must be printable ASCII without " or \\ (the zkLogin circuit reads raw JWT bytes)`
  if (value.length > max) return `${name} must be at most ${max} characters for zkLogin (got ${value.length})`
  return null
}

/** Whether header.payload of `jwt` fits the circuit's padded buffer (the SDK's own check). */
export function fitsPaddedJwt(jwt: string): boolean {
  const [header = '', payload = ''] = jwt.split('.')
  if (header.length > ZKLOGIN_LIMITS.headerBase64) return false
  const bits = (header.length + 1 + payload.length) * 8
  const k = (960 - ((bits % 512) + 1)) % 512
  return (bits + 1 + k + 64) / 8 <= ZKLOGIN_LIMITS.paddedUnsignedJwt
}
