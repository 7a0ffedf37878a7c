/** A compact JWS split and decoded, before any of its content is trusted. */
export interface DecodedJws {
  header: Record<string, unknown>
  payload: Record<string, unknown>
  /** `header.payload` exactly as received: what the signature covers. */
  signingInput: string
  signature: Buffer
}

export const MAX_JWT_BYTES = 8 * 1024
const BASE64URL = /^[A-Za-z0-9_-]+$/

export class JwsFormatError extends Error {}

function decodeJson(part: string, what: string): Record<string, unknown> {
  let value: unknown
  try {
    value = JSON.parse(Buffer.from(part, 'base64url').toString('utf8'))
  } catch {
    throw new JwsFormatError(`${what} is not base64url-encoded JSON`)
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw new JwsFormatError(`${what} is not a JSON object`)
  return value as Record<string, unknown>
}

/** Compact serialisation only: three non-empty base64url parts, at most 8 KiB in all. */
export function decodeCompactJws(jwt: string): DecodedJws {
  if (Buffer.byteLength(jwt) > MAX_JWT_BYTES) throw new JwsFormatError(`JWT is longer than ${MAX_JWT_BYTES} bytes`)
  const parts = jwt.split('.')
  if (parts.length !== 3) throw new JwsFormatError(`JWT must have 3 dot-separated parts, has ${parts.length}`)
  const [h, p, s] = parts as [string, string, string]
  if (!BASE64URL.test(h) || !BASE64URL.test(p) || !BASE64URL.test(s)) throw new JwsFormatError('every JWT part must be non-empty base64url')
  return { header: decodeJson(h, 'header'), payload: decodeJson(p, 'payload'), signingInput: `${h}.${p}`, signature: Buffer.from(s, 'base64url') }
}

/** E.164 digits without `+`, or null when the value is not a telephone number string. */
export function tnDigits(value: unknown): string | null {
  if (typeof value !== 'string') return null
  const digits = value.startsWith('+') ? value.slice(1) : value
  return /^\d{1,15}$/.test(digits) ? digits : null
}

/** A PASSporT's `dest.tn`: one number or a list of 1-10, as E.164 digits; null when it is not that. */
export function destTns(payload: Record<string, unknown>): string[] | null {
  const dest = (payload.dest as { tn?: unknown } | null | undefined)?.tn
  const list = Array.isArray(dest) ? dest : [dest]
  if (list.length === 0 || list.length > 10) return null
  const digits = list.map(tnDigits)
  return digits.every((d): d is string => d !== null) ? digits : null
}

/** A div PASSporT's `div.tn` (RFC 8946: the number the call was diverted from), as E.164 digits; null when it is not one. */
export function divTn(payload: Record<string, unknown>): string | null {
  const div = payload.div
  if (div === null || typeof div !== 'object' || Array.isArray(div)) return null
  return tnDigits((div as { tn?: unknown }).tn)
}
