import { ValidationError } from '../errors.ts'

/**
 * Redirect URIs of the login provider's clients: exact, and read the same way by everyone.
 * The provider compares the redirect_uri of a request with the registered one exactly, and
 * then hands it to the browser; what a browser does with it is the WHATWG URL reading, while
 * other parsers (a relying party's, a proxy's, a security scanner's) follow RFC 3986. A URI on
 * which they disagree, `http://localhost:45080\@evil.example/` (WHATWG: host localhost, path
 * `/@evil.example/`; RFC 3986: user `localhost:45080\`, host evil.example), is refused, as are
 * credentials, fragments, wildcards and characters outside RFC 3986. A URI that is fit is stored
 * as given: clients send back the string they registered and the provider compares strings,
 * so another spelling of the same place (`HTTPS://App.example`, `:443`, no path) is harmless.
 */
const MAX_LENGTH = 512
const LOOPBACK = new Set(['localhost', '127.0.0.1', '[::1]'])
/** RFC 3986 appendix B: scheme, authority, path, query, fragment, as every conforming parser splits them. */
const RFC3986_PARTS = /^([^:/?#]+):(?:\/\/([^/?#]*))?([^?#]*)(?:\?([^#]*))?(?:#(.*))?$/
/** What RFC 3986 allows in a URI: unreserved and reserved characters, and percent-encodings. */
const URI_CHARACTERS = /^(?:[A-Za-z0-9\-._~:/?#[\]@!$&'()*+,;=]|%[0-9A-Fa-f]{2})*$/
const FIELD = { field: 'redirectUris' }

/** Why a redirect URI may not be used (it could send a browser somewhere it does not seem to), or null. */
export function redirectUriProblem(raw: string): string | null {
  if (raw.length > MAX_LENGTH) return `a redirect URI must be at most ${MAX_LENGTH} characters`
  if (raw.includes('\\')) return 'a redirect URI must not contain a backslash (browsers read it as /, RFC 3986 parsers do not)'
  if (/[\s\p{Cc}]/u.test(raw)) return 'a redirect URI must not contain whitespace or control characters'
  if (raw.includes('*')) return 'redirect URIs are exact: no wildcard'
  if (raw.includes('#')) return 'a redirect URI must not have a fragment'
  if (!URI_CHARACTERS.test(raw)) return 'a redirect URI takes only the characters RFC 3986 allows (percent-encode the others)'
  const parts = RFC3986_PARTS.exec(raw)
  const authority = parts?.[2]
  if (authority === undefined || authority === '' || !URL.canParse(raw)) return 'a redirect URI must be an absolute URL with a host (https://host/path)'
  if (authority.includes('@')) return 'a redirect URI must not carry credentials (no @ before the host)'
  if (authority.includes('%')) return 'a redirect URI\'s host must not be percent-encoded'
  const url = new URL(raw)
  const host = authority.replace(/:\d*$/, '').toLowerCase()
  if (host !== url.hostname) return `parsers disagree on this redirect URI's host (RFC 3986: ${host}, browsers: ${url.hostname}): write the host plainly`
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && LOOPBACK.has(url.hostname))) {
    return 'a redirect URI must be https (http only on localhost, 127.0.0.1 or [::1], for development)'
  }
  return null
}

/** A redirect URI to register, as given when it is fit; else a ValidationError. */
export function checkRedirectUri(raw: string): string {
  const problem = redirectUriProblem(raw)
  if (problem !== null) throw new ValidationError(`${problem}: ${JSON.stringify(raw)}`, FIELD)
  return raw
}
