import { check, CheckFailed } from '../lib/checks.ts'
import type { PassportContext } from './call-context.ts'
import { decodeCompactJws, destTns, divTn, JwsFormatError, tnDigits, type DecodedJws } from './passport.ts'

/**
 * The checks of one PASSporT before any key is looked for: its form, its header, and its
 * claims, for a call's `shaken` PASSporT (RFC 8588) or a `div` one (RFC 8946).
 */

/** Header parameters this verifier understands when listed in `crit` (RFC 8225 PASSporT). */
const UNDERSTOOD_CRITICAL = new Set(['ppt'])
/** How far ahead of this server's clock an iat may be (clock skew between signer and verifier); the STI-AS signs no further ahead. */
export const MAX_CLOCK_SKEW_S = 5

function jws(ctx: PassportContext): DecodedJws {
  return ctx.jws!
}

/** Already decoded when the call's PASSporTs were sorted by kind: not decoded twice. */
export const checkJwsFormat = check<PassportContext>('check_jws_format', (ctx) => {
  if (ctx.jws !== undefined) return
  try {
    ctx.jws = decodeCompactJws(ctx.jwt)
  } catch (err) {
    if (err instanceof JwsFormatError) throw new CheckFailed('MALFORMED_JWT', err.message)
    throw err
  }
})

/** alg exactly ES256: no `none`, no HMAC with a public key, no other curve: no algorithm confusion. */
export const checkHeader = check<PassportContext>('check_header', (ctx) => {
  const { header } = jws(ctx)
  if (header.alg !== 'ES256') throw new CheckFailed('BAD_ALGORITHM', `alg must be ES256, got ${JSON.stringify(header.alg ?? null)}`)
  if (header.typ !== undefined && (typeof header.typ !== 'string' || !['jwt', 'passport'].includes(header.typ.toLowerCase()))) {
    throw new CheckFailed('BAD_TYPE', 'typ must be absent, "JWT" or "passport"')
  }
  if (ctx.kind === 'shaken' && header.ppt !== undefined && header.ppt !== 'shaken') {
    throw new CheckFailed('BAD_PPT', header.ppt === 'div' ? 'a div PASSporT comes with the call\'s shaken PASSporT (give both Identity headers)' : 'ppt must be absent or "shaken"')
  }
  if (ctx.kind === 'div' && header.ppt !== 'div') throw new CheckFailed('BAD_PPT', 'a diversion PASSporT has ppt "div"')
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

function checkIat(ctx: PassportContext): void {
  const iat = jws(ctx).payload.iat
  if (typeof iat !== 'number' || !Number.isSafeInteger(iat)) throw new CheckFailed('BAD_IAT', 'iat must be an integer (seconds)')
  if (iat > ctx.nowS + MAX_CLOCK_SKEW_S) throw new CheckFailed('IAT_IN_FUTURE', `iat is ${iat - ctx.nowS} s in the future`)
  if (ctx.maxAgeS > 0 && iat < ctx.nowS - ctx.maxAgeS) throw new CheckFailed('IAT_TOO_OLD', `iat is ${ctx.nowS - iat} s old (max ${ctx.maxAgeS} s)`)
}

function checkOrig(ctx: PassportContext): void {
  const orig = jws(ctx).payload.orig as { tn?: unknown } | undefined
  const what = ctx.kind === 'div' ? 'the div PASSporT\'s orig.tn' : 'orig.tn'
  if (tnDigits(orig?.tn) !== tnDigits(ctx.origTN)) throw new CheckFailed('ORIG_MISMATCH', `${what} does not match origTN`)
}

/** The shaken PASSporT is about this call (orig, dest), attested, identified and fresh. */
const checkShakenClaims = (ctx: PassportContext): string => {
  const { payload } = jws(ctx)
  checkOrig(ctx)
  const dest = destTns(payload)
  if (ctx.destTN !== undefined) {
    const wanted = tnDigits(ctx.destTN)
    if (dest === null || !dest.includes(wanted!)) throw new CheckFailed('DEST_MISMATCH', 'dest.tn does not contain destTN')
  } else if (dest === null) throw new CheckFailed('DEST_MISMATCH', 'dest.tn is not a telephone number or a list of 1-10 of them')
  ctx.dest = dest
  const { att, attest } = payload
  if (att !== undefined && attest !== undefined && att !== attest) throw new CheckFailed('BAD_ATTESTATION', 'att and attest disagree')
  const attestation = att ?? attest
  if (attestation !== 'A' && attestation !== 'B' && attestation !== 'C') throw new CheckFailed('BAD_ATTESTATION', 'attestation (att or attest) must be A, B or C')
  ctx.attestation = attestation
  if (typeof payload.origid !== 'string' || payload.origid === '') throw new CheckFailed('MISSING_ORIGID', 'origid must be a non-empty string')
  checkIat(ctx)
  ctx.authorityTN = `+${tnDigits(ctx.origTN)!}`
  return `attestation ${attestation}`
}

/**
 * RFC 8946 4: a div PASSporT keeps the caller's orig, names in `div` the number the call was
 * diverted from and in `dest` where it goes now; its signer must be authoritative for the
 * diverting number (that is whose key or certificate the trust sources look for).
 */
const checkDivClaims = (ctx: PassportContext): string => {
  const { payload } = jws(ctx)
  checkOrig(ctx)
  const dest = destTns(payload)
  if (dest === null) throw new CheckFailed('BAD_DIV', 'the div PASSporT\'s dest.tn is not a telephone number or a list of 1-10 of them')
  ctx.dest = dest
  const from = divTn(payload)
  if (from === null) throw new CheckFailed('BAD_DIV', 'the div claim must be {"tn": <the diverting number>}')
  ctx.divertedFrom = from
  checkIat(ctx)
  ctx.authorityTN = `+${from}`
  return `diverted from +${from} to ${dest.map((d) => `+${d}`).join(', ')}`
}

export const checkClaims = check<PassportContext>('check_claims', (ctx) => (ctx.kind === 'div' ? checkDivClaims(ctx) : checkShakenClaims(ctx)))
