import { CheckFailed, runChecks, type Check, type StepReport } from '../lib/checks.ts'
import type { FailureCode } from '../contract/failure-codes.ts'
import type { CallRequest, IdentityHeader, PassportContext, PassportKind, VerifiedRcd } from './call-context.ts'
import { MAX_DIVERSIONS, orderDiversions } from './diversion.ts'
import { checkIdentityParameters, describeIdentityHeader, parseIdentityHeader } from './identity-header.ts'
import { decodeCompactJws, JwsFormatError, type DecodedJws } from './passport.ts'
import { checkClaims, checkHeader, checkJwsFormat } from './passport-checks.ts'
import { checkRcd } from './rcd.ts'
import type { TrustSource } from './shaken/certificate-trust.ts'
import { verifyWithTrustSources } from './trust-sources.ts'

export type { CallRequest }

/**
 * The checklist of one PASSporT: its form, header and claims, then its key from the trust
 * sources (the ledger, or its x5u certificate) and the signature, then its rich call data.
 */
export const PASSPORT_CHECKS: readonly Check<PassportContext>[] = [
  checkJwsFormat, checkHeader, checkIdentityParameters, checkClaims, verifyWithTrustSources, checkRcd,
]

/** A verified diversion: the number the call was diverted from, where to, and who vouched for it. */
export interface DivVerdict {
  from: string
  to: string[]
  trust: TrustSource
  spc?: string
  subject?: string
}

export interface CallVerdict {
  success: boolean
  reason?: string
  /** The failed check's code. */
  code?: FailureCode
  steps: StepReport[]
  attestation?: 'A' | 'B' | 'C'
  trust?: TrustSource
  /** x5u: the leaf's service provider code, when its TNAuthList has one, and its subject. */
  spc?: string
  subject?: string
  /** A diverted call: each diversion, in the order the call took them. */
  div?: DivVerdict[]
  /** The caller's rich call data (RFC 9795), only when everything verified; or why it was not. */
  rcd?: VerifiedRcd
  rcdFailure?: string
}

interface Item { jwt: string; header?: IdentityHeader; jws?: DecodedJws }

function passportContext(call: CallRequest, kind: PassportKind, item: Item, destTN: string | undefined): PassportContext {
  return {
    directory: call.directory, kind, origTN: call.origTN, jwt: item.jwt, maxAgeS: call.maxAgeS, nowS: call.nowS,
    ...(call.certificates === undefined ? {} : { certificates: call.certificates }),
    ...(call.trustOrder === undefined ? {} : { trustOrder: call.trustOrder }),
    ...(call.jcardCache === undefined ? {} : { jcardCache: call.jcardCache }),
    ...(destTN === undefined ? {} : { destTN }),
    ...(item.header === undefined ? {} : { identityHeader: item.header }),
    ...(item.jws === undefined ? {} : { jws: item.jws }),
  }
}

const plus = (digits: string) => `+${digits}`

function found(ctx: PassportContext): Pick<CallVerdict, 'trust' | 'spc' | 'subject'> {
  return {
    ...(ctx.trust === undefined ? {} : { trust: ctx.trust }),
    ...(ctx.spc === undefined ? {} : { spc: ctx.spc }),
    ...(ctx.subject === undefined ? {} : { subject: ctx.subject }),
  }
}

/**
 * A call's verification: its one PASSporT (`jwt`, or one Identity header), or a diverted
 * call's shaken PASSporT and its div PASSporTs (several Identity headers, in any order), each
 * checked as a link of the chain from the caller to the called number (RFC 8946).
 */
export async function verifyCall(call: CallRequest): Promise<CallVerdict> {
  const steps: StepReport[] = []
  const failed = (code: FailureCode, message: string): CallVerdict => ({ success: false, reason: `${code}: ${message}`, code, steps })
  const failStep = (name: string, err: CheckFailed): CallVerdict => {
    steps.push({ name, ok: false, detail: err.message })
    return failed(err.code, err.message)
  }

  let items: Item[]
  if (call.identity !== undefined) {
    const values = typeof call.identity === 'string' ? [call.identity] : call.identity
    try {
      if (values.length === 0) throw new CheckFailed('BAD_IDENTITY_HEADER', 'no Identity header')
      if (values.length > 1 + MAX_DIVERSIONS) throw new CheckFailed('DIV_TOO_MANY', `${values.length} Identity headers; at most ${1 + MAX_DIVERSIONS} (a PASSporT and ${MAX_DIVERSIONS} diversions)`)
      items = values.map((value, i) => {
        try {
          const header = parseIdentityHeader(value)
          return { jwt: header.jws, header }
        } catch (err) {
          if (err instanceof CheckFailed && values.length > 1) throw new CheckFailed(err.code, `Identity header ${i + 1}: ${err.message}`)
          throw err
        }
      })
    } catch (err) {
      if (err instanceof CheckFailed) return failStep('parse_identity_header', err)
      throw err
    }
    steps.push({ name: 'parse_identity_header', ok: true, detail: items.length === 1 ? describeIdentityHeader(items[0]!.header!) : `${items.length} Identity headers` })
  } else {
    items = [{ jwt: call.jwt }]
  }

  if (items.length === 1) {
    const ctx = passportContext(call, 'shaken', items[0]!, call.destTN)
    const outcome = await runChecks(PASSPORT_CHECKS, ctx)
    steps.push(...outcome.steps)
    if (!outcome.ok) return failed(outcome.code, outcome.message)
    return verdictOf(ctx, steps, [])
  }

  // A diverted call: sorted by kind and put in order before any signature is checked.
  let shaken: Item
  let links
  try {
    for (const [i, item] of items.entries()) {
      try {
        item.jws = decodeCompactJws(item.jwt)
      } catch (err) {
        if (err instanceof JwsFormatError) throw new CheckFailed('MALFORMED_JWT', `Identity header ${i + 1}: ${err.message}`)
        throw err
      }
    }
    const bases = items.filter((item) => item.jws!.header.ppt !== 'div')
    if (bases.length !== 1) throw new CheckFailed('DIV_CHAIN_BROKEN', `${bases.length} of the Identity headers are not div PASSporTs: a diverted call has one shaken PASSporT`)
    shaken = bases[0]!
    links = orderDiversions(shaken.jws!, items.filter((item) => item !== shaken).map((item) => item.jws!), call.destTN)
  } catch (err) {
    if (err instanceof CheckFailed) return failStep('check_diversion_chain', err)
    throw err
  }
  steps.push({ name: 'check_diversion_chain', ok: true, detail: [call.origTN, ...links.map((l) => plus(l.from)), call.destTN].join(' -> ') })

  const base = passportContext(call, 'shaken', shaken, undefined)
  const baseOutcome = await runChecks(PASSPORT_CHECKS, base)
  steps.push(...baseOutcome.steps)
  if (!baseOutcome.ok) return failed(baseOutcome.code, baseOutcome.message)
  const divs: DivVerdict[] = []
  for (const [i, link] of links.entries()) {
    const item = items.find((it) => it.jws === link.jws)!
    const ctx = passportContext(call, 'div', item, undefined)
    const outcome = await runChecks(PASSPORT_CHECKS, ctx)
    steps.push(...outcome.steps.map((s) => ({ ...s, name: `div[${i + 1}].${s.name}` })))
    if (!outcome.ok) return failed(outcome.code, `div ${i + 1} (from +${link.from}): ${outcome.message}`)
    divs.push({ from: plus(link.from), to: link.to.map(plus), trust: ctx.trust!, ...found(ctx) })
  }
  return verdictOf(base, steps, divs)
}

function verdictOf(ctx: PassportContext, steps: StepReport[], divs: DivVerdict[]): CallVerdict {
  return {
    success: true, steps,
    ...(ctx.attestation === undefined ? {} : { attestation: ctx.attestation }),
    ...found(ctx),
    ...(divs.length === 0 ? {} : { div: divs }),
    ...(ctx.rcd === undefined ? {} : { rcd: ctx.rcd }),
    ...(ctx.rcdFailure === undefined ? {} : { rcdFailure: ctx.rcdFailure }),
  }
}
