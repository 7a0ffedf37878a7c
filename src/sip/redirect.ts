import { createHash } from 'node:crypto'
import type { ServiceCallVerdict } from '../caller/call-verifier.ts'
import type { SigningCredential } from '../caller/shaken/credentials.ts'
import { decideDivSigning } from '../caller/shaken/div-signing.ts'
import { signDivPassport, signPassport } from '../caller/shaken/sign-passport.ts'
import { chooseCredential } from '../caller/shaken/signing-authority.ts'
import type { Verstat } from '../caller/sip-outcome.ts'
import { KnsError } from '../errors.ts'
import type { SigningBinding } from '../keys/api-keys.ts'
import type { Service } from '../service.ts'
import {
  headerValues, param, parseNameAddr, plainUri, SipParseError, telephoneNumber, uriHost, type NameAddr, type SipRequest, type SipResponse,
} from './message.ts'

/**
 * The SIP redirect interface SBCs use to reach an STI-AS and an STI-VS (ATIS-1000074 deployments,
 * as ClearIP, Sansay and others answer): an INVITE in, a 302 out whose headers the SBC copies
 * onto the call before it routes it on.
 * - Signing: 302 with the Identity header to add (a div PASSporT when a signed INVITE was
 *   diverted and its Identity verifies).
 * - Verification: 302 whose Contact carries the P-Asserted-Identity with `verstat` (and the
 *   same P-Asserted-Identity as a header of the 302, for SBCs that copy headers instead).
 * - Policy: 603 Network Blocked with an ATIS-1000099 ("603+") Reason header.
 * Which of the two an INVITE asks: `sti=as|vs` on the Request-URI, or `qtype=sti-as|sti-vs` on
 * From (Sansay's way); otherwise an INVITE with an Identity header is verified and one
 * without is signed.
 */

export interface RedirectPolicy {
  /** SIP_BLOCK: which verification outcomes get 603+ instead of 302. */
  block: ReadonlySet<'failed' | 'unverified'>
  /** SIP_REDRESS: the contact a blocked caller is given (ATIS-1000099: url, tel or email). */
  redress: string | null
  /** The signing binding of SIP_SIGNING_KEY (null: SIP signs nothing), read per call. */
  signingBinding(): Promise<SigningBinding | null>
}

const MOVED: Pick<SipResponse, 'status' | 'reason'> = { status: 302, reason: 'Moved Temporarily' }

/** Header values from what the service or a PASSporT says: no control or format character (CR, LF, bidi overrides), no quote. */
const safeText = (text: string) => text.replace(/[\p{Cc}\p{Cf}"\\]/gu, ' ').slice(0, 200)
/**
 * A signed caller name as the display name of P-Asserted-Identity: safeText, and no comma or
 * angle bracket either, though a quoted string may hold them: they are what a proxy that
 * splits the header at commas reads a second name-addr from (a name signed as
 * `Bank,<sip:+18005550100@bank.example;verstat=TN-Validation-Passed>`).
 */
const displayName = (name: string) => safeText(name.replace(/[,<>]/g, ' '))

/**
 * A URI without its headers part, cut where its parameters can begin: the host (after the user
 * part, whose own `;` are no URI parameters) or a tel URI's number.
 */
function splitAtHost(uri: string): [before: string, hostAndParams: string] {
  const bare = uri.replace(/\?.*$/, '')
  // A tel URI has no host, and its isub may hold an @ (RFC 3966).
  const at = /^tel:/i.test(bare) ? -1 : bare.indexOf('@')
  const cut = at === -1 ? bare.indexOf(':') + 1 : at + 1
  return [bare.slice(0, cut), bare.slice(cut)]
}

function mode(request: SipRequest, from: NameAddr): 'as' | 'vs' {
  const explicit = param(splitAtHost(request.uri)[1], 'sti')?.toLowerCase() ?? ''
  if (explicit === 'as' || explicit === 'vs') return explicit
  const qtype = param(from.params, 'qtype')?.toLowerCase()
  if (qtype === 'sti-as') return 'as'
  if (qtype === 'sti-vs') return 'vs'
  return request.headers.has('identity') ? 'vs' : 'as'
}

/**
 * The caller: the first P-Asserted-Identity naming a telephone number, else From (RFC 8224 and
 * ATIS-1000074). Every value is checked first, and RFC 3325's shape held: one value, or two of
 * which one is a tel URI and the other a SIP or SIPS URI. Two SIP URIs are how a comma slipped
 * into a host or user part upstream would read ("sip:x@c>,<sip:+1800...@bank.example"): taking
 * the second would make the injected text the caller.
 */
function callerOf(request: SipRequest, from: NameAddr): { tn: string | null; addr: NameAddr } {
  const asserted = headerValues(request, 'p-asserted-identity').map((value) => parseNameAddr(value, 'P-Asserted-Identity'))
  const isTel = (addr: NameAddr) => /^tel:/i.test(addr.uri)
  if (asserted.length > 2 || (asserted.length === 2 && isTel(asserted[0]!) === isTel(asserted[1]!))) {
    throw new SipParseError('P-Asserted-Identity has more than one value of a kind (RFC 3325: at most one SIP or SIPS URI and one tel URI)')
  }
  for (const addr of asserted) {
    const tn = telephoneNumber(addr.uri)
    if (tn !== null) return { tn, addr }
  }
  return { tn: telephoneNumber(from.uri), addr: from }
}

/** The called number: the Request-URI's user, else To. */
function calledOf(request: SipRequest, to: NameAddr): string | null {
  return telephoneNumber(request.uri) ?? telephoneNumber(to.uri)
}

/**
 * The Request-URI without its headers part and without the `sti` parameter that chose our mode
 * (meant for us, not the next hop, which could be another STI server): where the SBC routes the
 * call on (refused when it could not be written back as it is).
 */
function onward(request: SipRequest): string {
  const [before, hostAndParams] = splitAtHost(request.uri)
  const uri = before + hostAndParams.replace(/;\s*sti\s*=\s*(?:as|vs)\s*(?=;|$)/gi, '')
  if (!plainUri(uri)) throw new SipParseError('the Request-URI is not a SIP, SIPS or tel URI with a valid host, or has commas')
  return uri
}

export async function redirect(service: Service, policy: RedirectPolicy, request: SipRequest, source: string): Promise<SipResponse> {
  const from = parseNameAddr(headerValues(request, 'from')[0] ?? '', 'From')
  const to = parseNameAddr(headerValues(request, 'to')[0] ?? '', 'To')
  return mode(request, from) === 'vs' ? verification(service, policy, request, from, to) : signing(service, policy, request, from, to, source)
}

async function verification(service: Service, policy: RedirectPolicy, request: SipRequest, from: NameAddr, to: NameAddr): Promise<SipResponse> {
  const caller = callerOf(request, from)
  const called = calledOf(request, to)
  // What the answer writes back, checked before any verification is spent on the call.
  const contactUri = onward(request)
  if (caller.tn === null && !plainUri(caller.addr.uri)) throw new SipParseError('the caller\'s URI is not a SIP, SIPS or tel URI with a valid host, or has commas')
  const identities = headerValues(request, 'identity')
  let verstat: Verstat = 'No-TN-Validation'
  let verdict: ServiceCallVerdict | undefined
  if (caller.tn !== null && called !== null && identities.length > 0) {
    verdict = await service.callVerifier.verify({ origTN: `+${caller.tn}`, destTN: `+${called}`, jwt: '', identity: identities })
    verstat = verdict.verstat
  }
  const blocked = (verstat === 'TN-Validation-Failed' && policy.block.has('failed')) || (verstat === 'No-TN-Validation' && policy.block.has('unverified'))
  if (blocked) return networkBlocked(policy)
  // A caller name only beside full attestation: with B or C the signer does not vouch that the
  // caller may use the number, so a brand shown with it would lend the number a name it may not have.
  const name = verdict?.attestation === 'A' ? verdict.rcd?.nam : undefined
  // A valid SIP host only (uriHost), else one we name: never a host as it came.
  const host = uriHost(caller.addr.uri) ?? uriHost(from.uri) ?? 'invalid'
  // Not a number: its URI as it came, without a verstat of its own.
  const assertedUri = caller.tn === null ? caller.addr.uri.replace(/;verstat=[^;]*/gi, '') : `sip:+${caller.tn}@${host};user=phone`
  const pai = `${name === undefined || name === '' ? '' : `"${displayName(name)}" `}<${assertedUri};verstat=${verstat}>`
  const headers: Array<[string, string]> = [
    // RFC 3261 19.1.1: a header in the Contact URI, escaped, which the SBC applies to the call.
    ['Contact', `<${contactUri}?P-Asserted-Identity=${encodeURIComponent(pai)}>`],
    ['P-Asserted-Identity', pai],
  ]
  if (verdict?.sipReason !== undefined) headers.push(['Reason', `SIP;cause=${verdict.sipReason.code};text="${verdict.sipReason.text}"`])
  return { ...MOVED, headers }
}

/** ATIS-1000099: 603 "Network Blocked", Reason SIP cause 603 with `v=analytics1` and the redress contact. */
function networkBlocked(policy: RedirectPolicy): SipResponse {
  const contact = policy.redress === null ? '' : policy.redress.startsWith('tel:') ? `;tel=${policy.redress.slice(4)}`
    : policy.redress.startsWith('mailto:') ? `;email=${policy.redress.slice(7)}` : `;url=${policy.redress}`
  return { status: 603, reason: 'Network Blocked', headers: [['Reason', `SIP;cause=603;text="v=analytics1${contact}";location=RLN`]] }
}

/** RFC 8588 origid: one UUID per originating SBC (its address), stable across calls, telling nothing of it. */
function origidOf(source: string): string {
  const hex = createHash('sha256').update(`kns sip origid ${source}`).digest('hex')
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-5${hex.slice(13, 16)}-${((parseInt(hex[16]!, 16) & 3) | 8).toString(16)}${hex.slice(17, 20)}-${hex.slice(20, 32)}`
}

/**
 * The number a call was diverted from: the first Diversion entry (RFC 5806, newest first), or
 * else, from History-Info (RFC 7044), the parent (by index) of the last entry, the current
 * target, when that entry says it was retargeted (a cause, or an mp or rc tag). undefined: not
 * diverted; null: diverted from something that is no telephone number.
 */
function divertedFromOf(request: SipRequest): string | null | undefined {
  const diversion = headerValues(request, 'diversion')[0]
  if (diversion !== undefined) return telephoneNumber(parseNameAddr(diversion, 'Diversion').uri)
  const entries = headerValues(request, 'history-info').map((entry) => parseNameAddr(entry, 'History-Info'))
  const target = entries.at(-1)
  const index = target === undefined ? undefined : param(target.params, 'index')
  if (target === undefined || index === undefined || !index.includes('.')) return undefined
  // A retargeting, not a mere hop: a cause in the target's URI (RFC 4458) or an mp/rc tag (RFC 7044).
  const retargeted = /;cause=\d+/i.test(target.uri) || param(target.params, 'mp') !== undefined || param(target.params, 'rc') !== undefined
  if (!retargeted) return undefined
  // Its parent: the entry whose index is the target's without its last part.
  const parentIndex = index.slice(0, index.lastIndexOf('.'))
  const parent = entries.find((e) => param(e.params, 'index') === parentIndex)
  return parent === undefined ? null : telephoneNumber(parent.uri)
}

async function signing(service: Service, policy: RedirectPolicy, request: SipRequest, from: NameAddr, to: NameAddr, source: string): Promise<SipResponse> {
  const caller = callerOf(request, from)
  const called = calledOf(request, to)
  if (caller.tn === null) return refused(400, 'Bad Request', 'the caller (P-Asserted-Identity or From) is not a telephone number')
  if (called === null) return refused(400, 'Bad Request', 'the called party (Request-URI or To) is not a telephone number')
  const attestation = headerValues(request, 'attestation-info')[0]?.toUpperCase() ?? 'C'
  if (attestation !== 'A' && attestation !== 'B' && attestation !== 'C') return refused(400, 'Bad Request', 'Attestation-Info must be A, B or C')
  const binding = await policy.signingBinding()
  const credentials = await service.shakenCredentials.all()
  try {
    // RFC 8946: a diverted call that arrives signed gets a div PASSporT for the diverting number.
    const divertedFrom = request.headers.has('identity') ? divertedFromOf(request) : undefined
    if (divertedFrom !== undefined) return await diverting(service, request, { caller: caller.tn, divertedFrom, called }, credentials, binding)
    const credential = chooseCredential(credentials, binding, { signerTN: caller.tn, field: 'P-Asserted-Identity', attest: attestation })
    const { identity } = await signPassport(credential, { orig: caller.tn, dest: [called], attest: attestation, iat: Math.floor(Date.now() / 1000), origid: origidOf(source) })
    service.shakenCredentials.signed(credential, 'shaken')
    return { ...MOVED, headers: [['Contact', `<${onward(request)}>`], ['Identity', identity]] }
  } catch (err) {
    if (!(err instanceof KnsError)) throw err
    const status = err.code === 'FORBIDDEN' ? [403, 'Forbidden'] as const : err.code === 'NOT_FOUND' ? [404, 'Not Found'] as const : [400, 'Bad Request'] as const
    return refused(status[0], status[1], err.message)
  }
}

/**
 * The div PASSporT of a diverted call (RFC 8946): the Diversion names a telephone number; the
 * signing key may sign for the diverting number; then the rule every interface that signs a div
 * shares (src/caller/shaken/div-signing.ts): the destination changed, the call's Identity
 * headers verify as a chain from the caller to the diverting number, and the chain with one
 * more diversion is one a verifier accepts. A div on top of a forged or stale PASSporT would
 * vouch for it downstream: refused with the RFC 8224 response of the failure (403 Stale Date,
 * 436, 437, 438), 483 Too Many Hops or 482 Loop Detected instead; an unchanged destination gets
 * a 302 with no Identity and a Warning saying why.
 */
async function diverting(service: Service, request: SipRequest, call: { caller: string; divertedFrom: string | null; called: string },
  credentials: ReadonlyMap<string, SigningCredential>, binding: SigningBinding | null): Promise<SipResponse> {
  const { caller, divertedFrom, called } = call
  if (divertedFrom === null) return refused(400, 'Bad Request', 'the Diversion or History-Info header does not name the diverting telephone number')
  const credential = chooseCredential(credentials, binding, { signerTN: divertedFrom, field: 'Diversion' })
  const contact: [string, string] = ['Contact', `<${onward(request)}>`]
  const decision = await decideDivSigning(service.callVerifier, { caller, divertedFrom, dest: [called], identities: headerValues(request, 'identity') })
  // The call's own Identity stands: nothing to add.
  if (decision.kind === 'unchanged') return { ...MOVED, headers: [contact, warning(decision.why)] }
  if (decision.kind !== 'sign') return refused(decision.sip.code, decision.sip.text, decision.why)
  // iat after the verification, which may have waited for a certificate.
  const { identity } = await signDivPassport(credential, { orig: caller, div: divertedFrom, dest: [called], iat: Math.floor(Date.now() / 1000) })
  service.shakenCredentials.signed(credential, 'div')
  return { ...MOVED, headers: [contact, ['Identity', identity]] }
}

const warning = (why: string): [string, string] => ['Warning', `399 kns "${safeText(why)}"`]

function refused(status: number, reason: string, why: string): SipResponse {
  return { status, reason, headers: [warning(why)] }
}
