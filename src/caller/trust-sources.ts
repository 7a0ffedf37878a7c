import { check, CheckFailed, Nested, NestedCheckFailed, runChecks, type Check, type StepReport } from '../lib/checks.ts'
import { verifyEs256 } from '../lib/es256.ts'
import type { FailureCode } from '../contract/failure-codes.ts'
import type { PassportContext } from './call-context.ts'
import type { TrustSource } from './shaken/certificate-trust.ts'
import { checkCertificateChain, checkCertificatePolicyStep, checkRevocationStep, checkTnAuthorization, fetchCertificate } from './shaken/x5u-checks.ts'

const MAX_KEYS_WITHOUT_KID = 16

/**
 * The ledger as a trust source: the signer's number (origTN, or a div PASSporT's diverting
 * number) -> token -> linked keystores -> unrevoked keys; the one named by kid, or each in turn.
 */
export const resolveKeys = check<PassportContext>('resolve_keys', async (ctx) => {
  const who = ctx.kind === 'div' ? 'the diverting number' : 'origTN'
  const resolution = await ctx.directory.resolve(ctx.authorityTN!)
  if (resolution.tokenId === null) throw new CheckFailed('NO_TOKEN', `${who} has no number-system token`)
  if (resolution.keystoreIds.length === 0) throw new CheckFailed('NO_REGISTRY', `no certificate registry is linked to ${who}`)
  if (ctx.kid !== undefined) {
    const key = resolution.keys.find((k) => k.keyId === ctx.kid)
    if (key === undefined) throw new CheckFailed('KEY_NOT_FOUND', `no unrevoked key ${ctx.kid} in the registries linked to ${who}`)
    ctx.candidates = [key]
  } else {
    if (resolution.keys.length === 0) throw new CheckFailed('KEY_NOT_FOUND', `the registries linked to ${who} hold no unrevoked key`)
    ctx.candidates = resolution.keys.slice(0, MAX_KEYS_WITHOUT_KID)
  }
  return `${ctx.candidates.length} candidate key(s): ${ctx.candidates.map((k) => k.keyId).join(', ')}`
})

/**
 * ES256 over `header.payload`, JOSE form: exactly 64 bytes r||s. DER is not JOSE. The curve
 * arithmetic runs on the thread pool (`verifyEs256`), so the event loop keeps serving other
 * calls meanwhile.
 */
export const verifySignature = check<PassportContext>('verify_signature', async (ctx) => {
  const { signature, signingInput } = ctx.jws!
  if (signature.length !== 64) throw new CheckFailed('BAD_SIGNATURE_FORMAT', `signature must be 64 bytes (r||s), got ${signature.length} (DER is rejected)`)
  const data = Buffer.from(signingInput)
  for (const candidate of ctx.candidates!) {
    if (await verifyEs256(candidate.key, data, signature)) return `verified with key ${candidate.keyId}`
  }
  throw new CheckFailed('BAD_SIGNATURE', ctx.trust === 'x5u' ? 'signature does not verify with the x5u certificate\'s key' : 'signature does not verify with the linked key(s)')
})

const SOURCES: Record<TrustSource, readonly Check<PassportContext>[]> = {
  ledger: [resolveKeys, verifySignature],
  x5u: [fetchCertificate, checkCertificateChain, checkCertificatePolicyStep, checkTnAuthorization, checkRevocationStep, verifySignature],
}

/** The ledger has nothing for the number: another source's failure says more. */
const LEDGER_MISSES = new Set<FailureCode>(['NO_TOKEN', 'NO_REGISTRY', 'KEY_NOT_FOUND'])

/**
 * Which sources may give this PASSporT's key, in the order tried. A PASSporT with an x5u and
 * no kid says where its key is: its certificate first, then (when CALLER_TRUST lists it) the
 * ledger keys of the signer's number, so that a placeholder or unreachable x5u does not fail a
 * token the number's own keys verify. A kid and no x5u: the ledger. Both: CALLER_TRUST's order.
 */
export function sourcesFor(ctx: PassportContext): TrustSource[] {
  const order = ctx.trustOrder ?? ['ledger']
  const ledger = order.includes('ledger')
  const x5u = ctx.x5u !== undefined && order.includes('x5u') && ctx.certificates !== undefined
  if (!x5u) return ledger ? ['ledger'] : []
  if (!ledger) return ['x5u']
  return ctx.kid === undefined ? ['x5u', 'ledger'] : order.filter((s) => s === 'ledger' || s === 'x5u')
}

function clearSource(ctx: PassportContext): void {
  delete ctx.trust
  delete ctx.candidates
  delete ctx.bundle
  delete ctx.chain
  delete ctx.spc
  delete ctx.subject
}

/**
 * Each applicable trust source in turn, with its own checks and the signature; the first that
 * verifies decides (`trust` says which). When none does, the failure reported is the first
 * source's, unless the ledger merely had nothing for the number. Every tried step is reported.
 */
export const verifyWithTrustSources = check<PassportContext>('resolve_keys', async (ctx) => {
  const sources = sourcesFor(ctx)
  if (sources.length === 0) {
    const why = ctx.x5u === undefined ? 'the PASSporT names no x5u' : 'CALLER_TRUST does not list x5u'
    throw new CheckFailed('NO_TRUSTED_KEY', `no key to verify with: CALLER_TRUST does not list the ledger and ${why}`)
  }
  const steps: StepReport[] = []
  let failure: { code: FailureCode; message: string; miss: boolean } | undefined
  for (const [i, source] of sources.entries()) {
    clearSource(ctx)
    ctx.trust = source
    const outcome = await runChecks(SOURCES[source], ctx)
    steps.push(...outcome.steps)
    if (outcome.ok) return new Nested(steps)
    const miss = source === 'ledger' && LEDGER_MISSES.has(outcome.code)
    if (failure === undefined || (failure.miss && !miss)) failure = { code: outcome.code, message: outcome.message, miss }
    const next = sources[i + 1]
    if (next !== undefined) {
      const last = steps.at(-1)!
      last.detail = `${last.detail}; ${next === 'ledger' ? 'the ledger keys of the signer\'s number' : 'the x5u certificate'} tried next`
    }
  }
  clearSource(ctx)
  throw new NestedCheckFailed(failure!.code, failure!.message, steps)
})
