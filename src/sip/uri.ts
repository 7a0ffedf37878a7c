import { isIPv4, isIPv6 } from 'node:net'

/**
 * The URI grammar of what this server reads and may write back (RFC 3261 19.1.1 and 25.1 for
 * SIP and SIPS URIs, RFC 3966 for tel URIs): a URI that passes cannot carry `<`, `>`, a quote,
 * white space or a line of its own, and its host is a hostname, an IPv4 address or an
 * [IPv6] reference. Checked where a URI enters (every name-addr, the Request-URI), so a value
 * such as `<sip:+12025550142@x,<sip:+18005550100@bank.example>` is refused, not echoed.
 */

const UNRESERVED = "A-Za-z0-9\\-_.!~*'()"
const ESCAPED = '%[0-9A-Fa-f]{2}'
const chars = (extra: string, min: '*' | '+') => new RegExp(`^(?:[${UNRESERVED}${extra}]|${ESCAPED})${min}$`)
/** user = 1*( unreserved / escaped / user-unreserved ) */
const USER = chars('&=+$,;?/', '+')
const PASSWORD = chars('&=+$,', '*')
/** pname / pvalue = 1*paramchar; paramchar = param-unreserved / unreserved / escaped */
const PARAM_CHARS = chars('\\[\\]/:&+$', '+')
/** hname / hvalue: hnv-unreserved / unreserved / escaped */
const HEADER_NAME = chars('\\[\\]/?:+$', '+')
const HEADER_VALUE = chars('\\[\\]/?:+$', '*')
/**
 * Labels as RFC 3261 writes them, plus `_`: real SBCs name hosts with it (`sbc_1.carrier.net`),
 * and it delimits nothing in SIP, so reading it cannot let a second URI through.
 */
const DOMAIN_LABEL = /^[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?$/
const TOP_LABEL = /^[A-Za-z_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?$/
/**
 * RFC 3966: global-number-digits ("+" *phonedigit DIGIT *phonedigit) or local-number-digits
 * (*phonedigit-hex (HEXDIG / "*" / "#") *phonedigit-hex). Each as two tests (the characters,
 * then one digit among them), not one expression: `X*dX*` with d in X backtracks in time
 * quadratic in the length, 1.8 s for a 30 000-character `1-1-1-...x` (test/sip/uri.test.ts).
 */
const GLOBAL_NUMBER = /^\+[\d\-.()]+$/
const LOCAL_NUMBER = /^[\dA-Fa-f*#\-.()]+$/
const validTelNumber = (number: string) => (number.startsWith('+') ? GLOBAL_NUMBER.test(number) && /\d/.test(number) : LOCAL_NUMBER.test(number) && /[\dA-Fa-f*#]/.test(number))
const TEL_PNAME = /^[A-Za-z0-9-]+$/
/** A tel parameter's value (isub's uric too), without `,` or `;`: what can be written back unescaped. */
const TEL_PVALUE = chars('\\[\\]/:&+$@?=', '+')

/** RFC 3261 host: hostname (its last label starting with a letter; `_` allowed, see DOMAIN_LABEL), IPv4address, or "[" IPv6address "]". */
export function validHost(host: string): boolean {
  if (host.startsWith('[')) return host.endsWith(']') && isIPv6(host.slice(1, -1))
  if (/^[\d.]+$/.test(host)) return isIPv4(host)
  if (host.length > 253) return false
  const labels = (host.endsWith('.') ? host.slice(0, -1) : host).split('.')
  return labels.every((label) => DOMAIN_LABEL.test(label)) && TOP_LABEL.test(labels.at(-1)!)
}

/** host [":" port] */
export function validHostPort(hostport: string): boolean {
  const portAt = hostport.startsWith('[') ? hostport.indexOf(']') + 1 : hostport.lastIndexOf(':')
  if (portAt <= 0 || portAt >= hostport.length) return portAt !== 0 && validHost(hostport)
  if (hostport[portAt] !== ':') return false
  const port = hostport.slice(portAt + 1)
  return /^\d{1,5}$/.test(port) && Number(port) <= 65535 && validHost(hostport.slice(0, portAt))
}

function validParams(params: string[], name: RegExp, value: RegExp): boolean {
  return params.every((p) => {
    const eq = p.indexOf('=')
    return eq === -1 ? name.test(p) : name.test(p.slice(0, eq)) && value.test(p.slice(eq + 1))
  })
}

/** sip:/sips: [userinfo "@"] hostport uri-parameters [headers] */
function validSipUri(rest: string): boolean {
  // Neither user nor password may hold an unescaped @: the first one ends the userinfo.
  const at = rest.indexOf('@')
  if (at !== -1) {
    const userinfo = rest.slice(0, at)
    const colon = userinfo.indexOf(':')
    const user = colon === -1 ? userinfo : userinfo.slice(0, colon)
    if (!USER.test(user) || (colon !== -1 && !PASSWORD.test(userinfo.slice(colon + 1)))) return false
  }
  const afterUser = rest.slice(at + 1)
  const question = afterUser.indexOf('?')
  const [main, headers] = question === -1 ? [afterUser, undefined] : [afterUser.slice(0, question), afterUser.slice(question + 1)]
  const [hostport, ...params] = main.split(';')
  if (!validHostPort(hostport!) || !validParams(params, PARAM_CHARS, PARAM_CHARS)) return false
  if (headers === undefined) return true
  return headers.split('&').every((h) => {
    const eq = h.indexOf('=')
    return eq > 0 && HEADER_NAME.test(h.slice(0, eq)) && HEADER_VALUE.test(h.slice(eq + 1))
  })
}

/** tel: number *( ";" pname ["=" pvalue] ) (RFC 3966; isub's value without , or ;). */
function validTelUri(rest: string): boolean {
  const [number, ...params] = rest.split(';')
  return validTelNumber(number!) && validParams(params, TEL_PNAME, TEL_PVALUE)
}

/**
 * A URI this server accepts in a name-addr or as a Request-URI: a SIP, SIPS or tel URI by its
 * grammar; another scheme only without <, >, quotes, commas, semicolons or white space.
 */
export function validUri(uri: string): boolean {
  const colon = uri.indexOf(':')
  const scheme = colon === -1 ? '' : uri.slice(0, colon).toLowerCase()
  const rest = uri.slice(colon + 1)
  if (scheme === 'sip' || scheme === 'sips') return validSipUri(rest)
  if (scheme === 'tel') return validTelUri(rest)
  return /^[a-z][a-z0-9+.-]*$/.test(scheme) && /^[^\s<>"',;\\]+$/.test(rest)
}
