import { check, CheckFailed, NOT_APPLICABLE, runChecks, type Check, type StepReport } from '../lib/checks.ts'
import { verifyEs256 } from '../lib/es256.ts'
import { canonicalPhone } from '../identity/phone.ts'
import type { CallContext } from './call-context.ts'
import { decodeCompactJws, JwsFormatError, tnDigits, type DecodedJws } from './passport.ts'
import { checkCertificateChain, checkRevocationStep, checkTnAuthorization, fetchCertificate } from './shaken/x5u-checks.ts'
import { checkIdentityParameters, parseIdentity } from './identity-header.ts'

export type { CallContext }

/** Header parameters this verifier understands when listed in `crit` (RFC 8225 PASSporT). */
const UNDERSTOOD_CRITICAL = new Set(['ppt'])
const MAX_KEYS_WITHOUT_KID = 16
const MAX_CLOCK_SKEW_S = 5

function jws(ctx: CallContext): DecodedJws {
  return ctx.jws!
}

export const checkJwsFormat = check<CallContext>('check_jws_format', (ctx) => {
  try {
    ctx.jws = decodeCompactJws(ctx.jwt)
  } catch (err) {
    if (err instanceof JwsFormatError) throw new CheckFailed('MALFORMED_JWT', err.message)
    throw err
  }
})

/** alg exactly ES256: no `none`, no HMAC with a public key, no other curve: no algorithm confusion. */
export const checkHeader = check<CallContext>('check_header', (ctx) => {
  const { header } = jws(ctx)
  if (header.alg !== 'ES256') throw new CheckFailed('BAD_ALGORITHM', `alg must be ES256, got ${JSON.stringify(header.alg ?? null)}`)
  if (header.typ !== undefined && (typeof header.typ !== 'string' || !['jwt', 'passport'].includes(header.typ.toLowerCase()))) {
    throw new CheckFailed('BAD_TYPE', 'typ must be absent, "JWT" or "passport"')
  }
  if (header.ppt !== undefined && header.ppt !== 'shaken') throw new CheckFailed('BAD_PPT', 'ppt must be absent or "shaken"')
  if (header.crit !== undefined) {
    const crit = header.crit
    if (!Array.isArray(crit) || crit.length === 0 || !crit.every((c) => typeof c === 'string')) {
      throw new CheckFailed('BAD_CRIT', 'crit must be a non-empty array of header parameter names')
    }
    for (const name of crit as string[]) {
      if (!UNDERSTOOD_CRITICAL.has(name) || !(name in header)) throw new CheckFailed('BAD_CRIT', `critical header parameter "${name}" is not understood`)
    }
  }
  // Present means present: `kid: null` is a malformed header, not "no kid".
  const kid = 'kid' in header ? header.kid : 'keyid' in header ? header.keyid : undefined
  const named = 'kid' in header || 'keyid' in header
  if (named && (typeof kid !== 'string' || kid === '' || kid.length > 256)) throw new CheckFailed('BAD_KID', 'kid must be a non-empty string')
  if (named) ctx.kid = kid as string
  if ('x5u' in header) {
    if (typeof header.x5u !== 'string' || header.x5u === '' || header.x5u.length > 2048) throw new CheckFailed('BAD_X5U', 'x5u must be a URL string')
    ctx.x5u = header.x5u
  }
  const names = [ctx.kid === undefined ? 'no kid' : `kid ${ctx.kid}`, ...(ctx.x5u === undefined ? [] : [`x5u ${ctx.x5u}`])]
  return names.join(', ')
})

/** The PASSporT is about this call (orig, dest), attested, identified and fresh. */
export const checkClaims = check<CallContext>('check_claims', (ctx) => {
  const { payload } = jws(ctx)
  const orig = payload.orig as { tn?: unknown } | undefined
  if (tnDigits(orig?.tn) !== tnDigits(ctx.origTN)) throw new CheckFailed('ORIG_MISMATCH', 'orig.tn does not match origTN')
  const dest = (payload.dest as { tn?: unknown } | undefined)?.tn
  const destList = Array.isArray(dest) ? dest : [dest]
  const wanted = tnDigits(ctx.destTN)
  if (!destList.some((tn) => tnDigits(tn) === wanted)) throw new CheckFailed('DEST_MISMATCH', 'dest.tn does not contain destTN')
  const { att, attest } = payload
  if (att !== undefined && attest !== undefined && att !== attest) throw new CheckFailed('BAD_ATTESTATION', 'att and attest disagree')
  const attestation = att ?? attest
  if (attestation !== 'A' && attestation !== 'B' && attestation !== 'C') throw new CheckFailed('BAD_ATTESTATION', 'attestation (att or attest) must be A, B or C')
  ctx.attestation = attestation
  if (typeof payload.origid !== 'string' || payload.origid === '') throw new CheckFailed('MISSING_ORIGID', 'origid must be a non-empty string')
  const iat = payload.iat
  if (typeof iat !== 'number' || !Number.isSafeInteger(iat)) throw new CheckFailed('BAD_IAT', 'iat must be an integer (seconds)')
  if (iat > ctx.nowS + MAX_CLOCK_SKEW_S) throw new CheckFailed('IAT_IN_FUTURE', `iat is ${iat - ctx.nowS} s in the future`)
  if (ctx.maxAgeS > 0 && iat < ctx.nowS - ctx.maxAgeS) throw new CheckFailed('IAT_TOO_OLD', `iat is ${ctx.nowS - iat} s old (max ${ctx.maxAgeS} s)`)
  return `attestation ${attestation}`
})

/** Ledger misses after which a PASSporT that also names an x5u is tried with its certificate. */
const LEDGER_MISSES = new Set(['NO_TOKEN', 'NO_REGISTRY', 'KEY_NOT_FOUND'])

/**
 * The ledger as a trust source: origTN -> token -> linked keystores -> unrevoked keys; the one
 * named by kid, or each in turn. It applies when CALLER_TRUST lists it, and the PASSporT names
 * a kid or no x5u, and it comes before x5u in CALLER_TRUST or there is no x5u to try. A ledger
 * that has no key for the number hands over to x5u when the PASSporT has one.
 */
export const resolveKeys = check<CallContext>('resolve_keys', async (ctx) => {
  const order = ctx.trustOrder ?? ['ledger']
  const x5uUsable = ctx.x5u !== undefined && order.includes('x5u')
  if (!order.includes('ledger')) return NOT_APPLICABLE
  // An x5u and no kid: the PASSporT says where its key is.
  if (ctx.kid === undefined && x5uUsable) return NOT_APPLICABLE
  if (x5uUsable && order.indexOf('x5u') < order.indexOf('ledger')) return NOT_APPLICABLE
  try {
    const resolution = await ctx.directory.resolve(canonicalPhone(ctx.origTN))
    if (resolution.tokenId === null) throw new CheckFailed('NO_TOKEN', 'origTN has no number-system token')
    if (resolution.keystoreIds.length === 0) throw new CheckFailed('NO_REGISTRY', 'no certificate registry is linked to origTN')
    if (ctx.kid !== undefined) {
      const key = resolution.keys.find((k) => k.keyId === ctx.kid)
      if (key === undefined) throw new CheckFailed('KEY_NOT_FOUND', `no unrevoked key ${ctx.kid} in the registries linked to origTN`)
      ctx.candidates = [key]
    } else {
      if (resolution.keys.length === 0) throw new CheckFailed('KEY_NOT_FOUND', 'the registries linked to origTN hold no unrevoked key')
      ctx.candidates = resolution.keys.slice(0, MAX_KEYS_WITHOUT_KID)
    }
  } catch (err) {
    if (err instanceof CheckFailed && x5uUsable && LEDGER_MISSES.has(err.code)) return `${err.code}: ${err.message}; trying x5u`
    throw err
  }
  ctx.trust = 'ledger'
  return `${ctx.candidates.length} candidate key(s): ${ctx.candidates.map((k) => k.keyId).join(', ')}`
})

/**
 * ES256 over `header.payload`, JOSE form: exactly 64 bytes r||s. DER is not JOSE. The curve
 * arithmetic runs on the thread pool (`verifyEs256`), so the event loop keeps serving other
 * calls meanwhile.
 */
export const verifySignature = check<CallContext>('verify_signature', async (ctx) => {
  const { signature, signingInput } = jws(ctx)
  if (signature.length !== 64) throw new CheckFailed('BAD_SIGNATURE_FORMAT', `signature must be 64 bytes (r||s), got ${signature.length} (DER is rejected)`)
  const data = Buffer.from(signingInput)
  for (const candidate of ctx.candidates!) {
    if (await verifyEs256(candidate.key, data, signature)) return `verified with key ${candidate.keyId}`
  }
  throw new CheckFailed('BAD_SIGNATURE', ctx.trust === 'x5u' ? 'signature does not verify with the x5u certificate\'s key' : 'signature does not verify with the linked key(s)')
})

/** The checklist: the PASSporT itself, then its key from the ledger or from its x5u certificate, then the signature. */
export const VERIFY_CALL: readonly Check<CallContext>[] = [
  parseIdentity, checkJwsFormat, checkHeader, checkIdentityParameters, checkClaims,
  resolveKeys,
  fetchCertificate, checkCertificateChain, checkTnAuthorization, checkRevocationStep,
  verifySignature,
]

export interface CallVerdict {
  success: boolean
  reason?: string
  /** The failed check's code. */
  code?: string
  steps: StepReport[]
  attestation?: 'A' | 'B' | 'C'
  trust?: 'ledger' | 'x5u'
  /** x5u: the leaf's service provider code, when its TNAuthList has one, and its subject. */
  spc?: string
  subject?: string
}

export async function verifyCall(ctx: CallContext): Promise<CallVerdict> {
  const outcome = await runChecks(VERIFY_CALL, ctx)
  if (!outcome.ok) return { success: false, reason: `${outcome.code}: ${outcome.message}`, code: outcome.code, steps: outcome.steps }
  return {
    success: true, steps: outcome.steps,
    ...(ctx.attestation === undefined ? {} : { attestation: ctx.attestation }),
    ...(ctx.trust === undefined ? {} : { trust: ctx.trust }),
    ...(ctx.spc === undefined ? {} : { spc: ctx.spc }),
    ...(ctx.subject === undefined ? {} : { subject: ctx.subject }),
  }
}
