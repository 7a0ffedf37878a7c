/**
 * The part of SIP (RFC 3261 7, 20, 25) a redirect server reads and writes: a request's line
 * and header fields, and the responses it sends. Strict and bounded: what does not parse is
 * refused (400 when a response can be addressed, dropped otherwise), never half-read. Why this
 * is ours and not a library's: docs/sip.md.
 */

import { validHostPort, validUri } from './uri.ts'

export const MAX_MESSAGE_BYTES = 32 * 1024
const MAX_HEADER_FIELDS = 100
/**
 * What an answer may echo of its request (its Via values, From, To, Call-ID, CSeq and the
 * Request-URI a Contact is built from): a request past it is refused with a 400 that echoes
 * only its top Via, so no answer grows with what a (forgeable) sender put in.
 */
export const MAX_VIA_VALUES = 10
export const MAX_ECHO_BYTES = 4096
/** No answer is larger, whatever it carries (the echo above plus our own headers: Identity, Contact, P-Asserted-Identity, Warning). */
export const MAX_ANSWER_BYTES = 8192

export class SipParseError extends Error {}

/** RFC 3261 7.3.3 and RFC 8224 (y: Identity): the compact header field names. */
const COMPACT: Record<string, string> = {
  i: 'call-id', m: 'contact', e: 'content-encoding', l: 'content-length', c: 'content-type', f: 'from', s: 'subject',
  k: 'supported', t: 'to', v: 'via', y: 'identity', o: 'event', r: 'refer-to', b: 'referred-by', x: 'session-expires',
}

export interface SipRequest {
  method: string
  uri: string
  /** Lower-case full names; one entry per header field line, in order. */
  headers: Map<string, string[]>
  body: Buffer
}

const TOKEN = /^[A-Za-z0-9.!%*_+`'~-]+$/
const REQUEST_LINE = /^([A-Za-z0-9.!%*_+`'~-]+) (\S+) SIP\/2\.0$/
const STATUS_LINE = /^SIP\/2\.0 \d{3} /

/** Where the header ends (the blank line), or -1 when it has not all arrived. */
export function headerEnd(buffer: Buffer): number {
  return buffer.indexOf('\r\n\r\n')
}

/** The Content-Length a header block declares (TCP framing): a number, or null when absent. */
export function declaredLength(head: string): number | null {
  const match = /\r\n(?:content-length|l)[ \t]*:[ \t]*(\d{1,6})[ \t]*(?:\r\n|$)/i.exec(head)
  return match === null ? null : Number(match[1])
}

/**
 * One message's bytes -> a request, or null for a response (a redirect server sends requests
 * to no one: a response reaching it is stray and ignored). Throws SipParseError.
 */
export function parseRequest(bytes: Buffer): SipRequest | null {
  if (bytes.length > MAX_MESSAGE_BYTES) throw new SipParseError(`the message is longer than ${MAX_MESSAGE_BYTES} bytes`)
  const end = headerEnd(bytes)
  if (end === -1) throw new SipParseError('no empty line ends the header')
  const head = bytes.subarray(0, end).toString('utf8')
  // Lines end with CRLF only: a bare CR or LF, or any other control character but HTAB, would
  // let a header field copied into a response (To, From, Via, ...) carry a line of its own.
  if (/[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]|\r(?!\n)|(?<!\r)\n/.test(head)) throw new SipParseError('a control character, or a CR or LF that is not a line end, in the header')
  // Unfold continuation lines (RFC 3261 7.3.1), then one header field per line.
  const lines = head.replace(/\r\n[ \t]+/g, ' ').split('\r\n')
  const first = lines.shift()!
  if (STATUS_LINE.test(first)) return null
  const requestLine = REQUEST_LINE.exec(first)
  if (requestLine === null) throw new SipParseError('the request line is not "METHOD Request-URI SIP/2.0"')
  if (lines.length > MAX_HEADER_FIELDS) throw new SipParseError(`more than ${MAX_HEADER_FIELDS} header fields`)
  const headers = new Map<string, string[]>()
  for (const line of lines) {
    const colon = line.indexOf(':')
    const rawName = colon === -1 ? '' : line.slice(0, colon).trimEnd()
    if (!TOKEN.test(rawName)) throw new SipParseError('a header field line without a name and a colon')
    const lower = rawName.toLowerCase()
    const name = COMPACT[lower] ?? lower
    const value = line.slice(colon + 1).trim()
    const list = headers.get(name)
    if (list === undefined) headers.set(name, [value])
    else list.push(value)
  }
  const rest = bytes.subarray(end + 4)
  const declared = headers.get('content-length')
  let body = rest
  if (declared !== undefined) {
    if (declared.length !== 1 || !/^\d{1,6}$/.test(declared[0]!)) throw new SipParseError('Content-Length is not one number')
    const length = Number(declared[0])
    if (length > rest.length) throw new SipParseError('the body is shorter than Content-Length')
    body = rest.subarray(0, length)
  }
  return { method: requestLine[1]!, uri: requestLine[2]!, headers, body }
}

/** Splits a header field value at the commas that separate values (not inside quotes or <...>). */
export function splitValues(value: string): string[] {
  const out: string[] = []
  let depth = 0
  let quoted = false
  let start = 0
  for (let i = 0; i < value.length; i++) {
    const c = value[i]
    if (quoted) {
      if (c === '\\') i++
      else if (c === '"') quoted = false
    } else if (c === '"') quoted = true
    else if (c === '<') depth++
    else if (c === '>') depth = Math.max(0, depth - 1)
    else if (c === ',' && depth === 0) {
      out.push(value.slice(start, i).trim())
      start = i + 1
    }
  }
  out.push(value.slice(start).trim())
  return out.filter((v) => v !== '')
}

/** Every value of a header, its lines and comma lists flattened. */
export function headerValues(request: SipRequest, name: string): string[] {
  return (request.headers.get(name) ?? []).flatMap(splitValues)
}

/** The one value of a header a request must have exactly once. */
export function single(request: SipRequest, name: string): string {
  const values = request.headers.get(name)
  if (values === undefined || values.length !== 1 || values[0] === '') throw new SipParseError(`${name} must appear once`)
  return values[0]!
}

export interface NameAddr { display?: string; uri: string; params: string }

const QUOTED = /^"((?:[^"\\]|\\.)*)"/
/** display-name as tokens (letters beyond ASCII allowed, as UAs send them) separated by white space. */
const DISPLAY_TOKENS = /^(?:[A-Za-z0-9.!%*_+`'~\-\u0080-\uffff]+(?:[ \t]+[A-Za-z0-9.!%*_+`'~\-\u0080-\uffff]+)*)?$/
/** *( ";" generic-param ), generic-param = token [ "=" ( token / host / quoted-string ) ] (RFC 3261 25.1). */
const HEADER_PARAMS = /^(?:[ \t]*;[ \t]*[A-Za-z0-9.!%*_+`'~-]+(?:[ \t]*=[ \t]*(?:[A-Za-z0-9.!%*_+`'~\-[\]:]+|"(?:[^"\\]|\\.)*"))?)*[ \t]*$/

/**
 * `"Name" <uri>;params`, `Name <uri>;params`, `<uri>;params` or `uri;params` (RFC 3261 20.10,
 * 25.1), by the grammar: the display name a quoted string or tokens, the URI one validUri
 * accepts (so no <, >, quote or white space in it, and a SIP URI's host a hostname, IPv4 or
 * [IPv6] address), the parameters generic-params. Anything else is refused (SipParseError,
 * `what` naming the header), so no part of it can reach an answer.
 */
export function parseNameAddr(value: string, what = 'a header field'): NameAddr {
  const text = value.trim()
  const refuse = (why: string) => new SipParseError(`${what} is not a well-formed name-addr: ${why}`)
  let display: string | undefined
  let rest: string
  if (text.startsWith('"')) {
    const quoted = QUOTED.exec(text)
    if (quoted === null) throw refuse('an unterminated quoted display name')
    display = quoted[1]!.replace(/\\(.)/g, '$1')
    rest = text.slice(quoted[0].length).trimStart()
    if (!rest.startsWith('<')) throw refuse('a quoted display name without <URI> after it')
  } else {
    const open = text.indexOf('<')
    if (open === -1) {
      // addr-spec: the parameters after the first ';' belong to the header field, not the URI.
      const semi = text.indexOf(';')
      const uri = semi === -1 ? text : text.slice(0, semi)
      const params = semi === -1 ? '' : text.slice(semi)
      if (!validUri(uri)) throw refuse('its URI is not a SIP, SIPS or tel URI with a valid host')
      if (!HEADER_PARAMS.test(params)) throw refuse('malformed parameters')
      return { uri, params }
    }
    const tokens = text.slice(0, open).trim()
    if (!DISPLAY_TOKENS.test(tokens)) throw refuse('a display name that is neither tokens nor a quoted string')
    if (tokens !== '') display = tokens
    rest = text.slice(open)
  }
  const close = rest.indexOf('>')
  if (close === -1) throw refuse('no closing >')
  const uri = rest.slice(1, close).trim()
  if (!validUri(uri)) throw refuse('its URI is not a SIP, SIPS or tel URI with a valid host')
  const params = rest.slice(close + 1).trim()
  if (!HEADER_PARAMS.test(params)) throw refuse('malformed parameters')
  return { ...(display === undefined || display === '' ? {} : { display }), uri, params }
}

/** A header field parameter's value (`;tag=abc` -> abc), '' when present without a value, undefined when absent. */
export function param(params: string, name: string): string | undefined {
  for (const part of params.split(';').slice(1)) {
    const eq = part.indexOf('=')
    const key = (eq === -1 ? part : part.slice(0, eq)).trim().toLowerCase()
    if (key === name) return eq === -1 ? '' : part.slice(eq + 1).trim().replace(/^"(.*)"$/, '$1')
  }
  return undefined
}

/**
 * The telephone number a SIP or tel URI names, as E.164 digits without `+`: `tel:+1-415-555-0199`,
 * `sip:+14155550199@host;user=phone`, `sip:14155550199@host`. null when the user part is not one.
 */
export function telephoneNumber(uri: string): string | null {
  let user: string
  const lower = uri.slice(0, 5).toLowerCase()
  if (lower.startsWith('tel:')) user = uri.slice(4).split(';')[0]!
  else if (lower.startsWith('sip:') || lower.startsWith('sips:')) {
    const at = uri.indexOf('@')
    if (at === -1) return null
    user = uri.slice(uri.indexOf(':') + 1, at).split(';')[0]!.split(':')[0]!
  } else return null
  let decoded: string
  try {
    decoded = decodeURIComponent(user)
  } catch {
    return null
  }
  // RFC 3966 visual separators.
  const digits = decoded.replace(/[-.()]/g, '')
  const match = /^\+?(\d{1,15})$/.exec(digits)
  return match === null ? null : match[1]!
}

/** A SIP URI's host[:port] (what a P-Asserted-Identity built for it keeps); null when it is not a valid SIP host (RFC 3261). */
export function uriHost(uri: string): string | null {
  const match = /^sips?:(?:[^@]*@)?([^;?>]+)/i.exec(uri)
  return match === null || !validHostPort(match[1]!) ? null : match[1]!
}

export interface SipResponse {
  status: number
  reason: string
  /** Extra header fields, in order, after the ones copied from the request. */
  headers: Array<[string, string]>
}

/**
 * A response to `request` (RFC 3261 8.2.6): its Via fields (the top one with `received` and
 * `rport` filled in for the address it came from, RFC 3581), From, To (with our tag when it
 * had none), Call-ID and CSeq copied; then the response's own fields.
 */
export function renderResponse(request: SipRequest, response: SipResponse, source: { address: string; port: number }, toTag: string): Buffer {
  const vias = request.headers.get('via') ?? []
  const lines = [`SIP/2.0 ${response.status} ${response.reason}`]
  vias.forEach((via, i) => lines.push(`Via: ${i === 0 ? stampVia(via, source) : via}`))
  for (const name of ['from', 'to', 'call-id', 'cseq'] as const) {
    const value = request.headers.get(name)?.[0]
    if (value === undefined) continue
    const label = name === 'call-id' ? 'Call-ID' : name === 'cseq' ? 'CSeq' : name === 'from' ? 'From' : 'To'
    lines.push(`${label}: ${name === 'to' && param(parseToParams(value), 'tag') === undefined && response.status > 100 ? `${value};tag=${toTag}` : value}`)
  }
  for (const [name, value] of response.headers) lines.push(`${name}: ${value}`)
  lines.push('Content-Length: 0', '', '')
  return Buffer.from(lines.join('\r\n'))
}

/** Why an answer to `request` could not echo it within MAX_VIA_VALUES and MAX_ECHO_BYTES, or null when it can. */
export function echoTooLarge(request: SipRequest): string | null {
  const vias = headerValues(request, 'via').length
  if (vias > MAX_VIA_VALUES) return `${vias} Via values: an answer echoes at most ${MAX_VIA_VALUES}`
  let bytes = request.uri.length
  for (const name of ['via', 'from', 'to', 'call-id', 'cseq']) for (const value of request.headers.get(name) ?? []) bytes += value.length
  return bytes > MAX_ECHO_BYTES ? `Via, From, To, Call-ID, CSeq and the Request-URI hold ${bytes} bytes: an answer echoes at most ${MAX_ECHO_BYTES}` : null
}

/**
 * renderResponse within MAX_ANSWER_BYTES. `topViaOnly` (a request refused for what it would
 * have us echo): only the top Via value is echoed, so the refusal stays small. null: even that
 * would be too large (the caller drops the request unanswered).
 */
export function renderBounded(request: SipRequest, response: SipResponse, source: { address: string; port: number }, toTag: string, topViaOnly = false): Buffer | null {
  const top = splitValues(request.headers.get('via')?.[0] ?? '')[0]
  const echoed = topViaOnly && top !== undefined ? { ...request, headers: new Map(request.headers).set('via', [top]) } : request
  const bytes = renderResponse(echoed, response, source, toTag)
  if (bytes.length <= MAX_ANSWER_BYTES) return bytes
  if (topViaOnly) return null
  return renderBounded(request, { status: 400, reason: 'Bad Request', headers: [['Warning', `399 kns "the answer would be larger than ${MAX_ANSWER_BYTES} bytes"`]] }, source, toTag, true)
}

function parseToParams(value: string): string {
  try {
    return parseNameAddr(value).params
  } catch {
    return ''
  }
}

function stampVia(via: string, source: { address: string; port: number }): string {
  const first = splitValues(via)[0] ?? via
  const rest = via.slice(via.indexOf(first) + first.length)
  let stamped = first
  const sentBy = /^SIP\s*\/\s*2\.0\s*\/\s*\S+\s+([^;\s]+)/i.exec(first)?.[1]
  const host = sentBy?.startsWith('[') ? sentBy.slice(1, sentBy.indexOf(']')) : sentBy?.split(':')[0]
  if (host !== source.address && !/;\s*received=/i.test(stamped)) stamped += `;received=${source.address}`
  stamped = stamped.replace(/;\s*rport(?=;|$)/i, `;rport=${source.port}`)
  return stamped + rest
}

/**
 * RFC 3261 17.2.3: the top Via's branch (with the magic cookie z9hG4bK: a client that does not
 * set one gets no transaction matching, each INVITE answered on its own) and sent-by, with the
 * Call-ID and CSeq number, which an INVITE, its ACK and its CANCEL share, and the address the
 * request came from. A request reusing a branch for another call, or from another source, is
 * another transaction.
 */
export function transactionKey(request: SipRequest, sourceAddress: string): string | null {
  const top = splitValues(request.headers.get('via')?.[0] ?? '')[0]
  if (top === undefined) return null
  const sentBy = /^SIP\s*\/\s*2\.0\s*\/\s*\S+\s+([^;\s]+)/i.exec(top)?.[1]
  const branch = /;\s*branch=([^;\s]+)/i.exec(top)?.[1]
  const cseq = /^(\d{1,10})\s/.exec(request.headers.get('cseq')?.[0] ?? '')?.[1]
  const callId = request.headers.get('call-id')?.[0]
  if (sentBy === undefined || branch === undefined || !branch.startsWith('z9hG4bK') || cseq === undefined || callId === undefined) return null
  // The source address too: a source that learns another's branch, Call-ID and CSeq cannot ACK or CANCEL its INVITE.
  return `${sourceAddress}|${branch}|${sentBy.toLowerCase()}|${callId}|${cseq}`
}

/**
 * A URI that can be written back into a header field as it is: one validUri accepts (a valid
 * host, no <, >, quotes or white space) and without commas, which a proxy splitting a header
 * at commas would cut it at even inside <...>.
 */
export function plainUri(uri: string): boolean {
  return validUri(uri) && /^[a-zA-Z][a-zA-Z0-9+.-]*:[^<>"',\s]+$/.test(uri)
}

/** The tag of a request's To (an ACK carries the one of the final response it acknowledges); undefined when it has none. */
export function toTagOf(request: SipRequest): string | undefined {
  const to = request.headers.get('to')?.[0]
  return to === undefined ? undefined : param(parseToParams(to), 'tag')
}
