import { check, CheckFailed, NOT_APPLICABLE } from '../lib/checks.ts'
import type { IdentityHeader, PassportContext } from './call-context.ts'

/**
 * The SIP `Identity` header as a proxy has it (RFC 8224 4.1):
 * `<compact JWS>;info=<https://...>;alg=ES256;ppt=shaken` (parameters in any order, `ppt` may
 * be quoted). Taken verbatim instead of `jwt`; its parameters must agree with the JWS header.
 */
export type { IdentityHeader }

const MAX_HEADER = 10 * 1024

export function parseIdentityHeader(value: string): IdentityHeader {
  const text = value.trim()
  if (text.length === 0 || text.length > MAX_HEADER) throw new CheckFailed('BAD_IDENTITY_HEADER', 'the Identity header is empty or longer than 10 KiB')
  const split = text.indexOf(';')
  const jws = (split === -1 ? text : text.slice(0, split)).trim()
  const header: IdentityHeader = { jws }
  if (split === -1) return header
  // `info` holds a URI in angle brackets, which may itself contain ';': read it as a unit.
  let rest = text.slice(split + 1)
  while (rest.trim() !== '') {
    // RFC 3261 generic-param: a name, with or without `=value`.
    const match = /^\s*([A-Za-z][A-Za-z0-9._!%*+`'~-]*)\s*(?:=\s*(<[^<>]*>|"[^"]*"|[^;\s]*))?\s*(?:;|$)/.exec(rest)
    if (match === null) throw new CheckFailed('BAD_IDENTITY_HEADER', 'the Identity header parameters are not name=value pairs')
    const name = match[1]!.toLowerCase()
    const raw = match[2] ?? ''
    if ((name === 'info' || name === 'alg' || name === 'ppt') && match[2] === undefined) throw new CheckFailed('BAD_IDENTITY_HEADER', `${name} without a value`)
    const unwrapped = raw.startsWith('<') || raw.startsWith('"') ? raw.slice(1, -1) : raw
    if (name === 'info' || name === 'alg' || name === 'ppt') {
      if (header[name] !== undefined) throw new CheckFailed('BAD_IDENTITY_HEADER', `the Identity header has ${name} twice`)
      if (name === 'info' && !raw.startsWith('<')) throw new CheckFailed('BAD_IDENTITY_HEADER', 'info must be a URI in angle brackets')
      header[name] = unwrapped
    }
    rest = rest.slice(match[0].length)
  }
  return header
}

/** After the JWS header is read: `info` names its x5u, `alg` and `ppt` agree with it (RFC 8224 4.1, 8588). */
export const checkIdentityParameters = check<PassportContext>('check_identity_parameters', (ctx) => {
  const params = ctx.identityHeader
  if (params === undefined) return NOT_APPLICABLE
  const header = ctx.jws!.header
  if (params.alg !== undefined && params.alg !== header.alg) throw new CheckFailed('BAD_IDENTITY_HEADER', `alg=${params.alg} but the PASSporT says ${String(header.alg)}`)
  if (params.ppt !== undefined && params.ppt !== (header.ppt ?? undefined)) throw new CheckFailed('BAD_IDENTITY_HEADER', `ppt=${params.ppt} but the PASSporT says ${String(header.ppt ?? 'none')}`)
  if (ctx.x5u !== undefined) {
    if (params.info === undefined) throw new CheckFailed('IDENTITY_INFO_MISMATCH', 'the Identity header has no info parameter naming the x5u')
    if (params.info !== ctx.x5u) throw new CheckFailed('IDENTITY_INFO_MISMATCH', `info <${params.info}> is not the PASSporT's x5u`)
  }
  return 'agree with the PASSporT'
})

/** The request's parameters in the report: `info=..., ppt=...`. */
export function describeIdentityHeader(parsed: IdentityHeader): string {
  return (['info', 'alg', 'ppt'] as const).filter((n) => parsed[n] !== undefined).map((n) => `${n}=${parsed[n]}`).join(', ') || 'no parameters'
}
