import { check, CheckFailed, NOT_APPLICABLE } from '../../lib/checks.ts'
import type { CallContext } from '../call-context.ts'
import { tnDigits } from '../passport.ts'
import { isChainFailure } from './chain.ts'
import { FetchFailed } from './fetch-cache.ts'
import { checkRevocation } from './revocation.ts'
import { nameOf, tnCovered } from './x509.ts'

/**
 * The certificate trust source (RFC 8224/8226, ATIS-1000074): the key comes from the leaf
 * certificate the PASSporT's `x5u` names, trusted when it chains to an STI-CA trust anchor and
 * its TNAuthList authorises the calling number. None of these applies (nor shows in the
 * report) when the ledger gave the key (resolve_keys).
 */
const LEDGER_DECIDED: typeof NOT_APPLICABLE = NOT_APPLICABLE

const onLedger = (ctx: CallContext) => ctx.trust === 'ledger'

export const fetchCertificate = check<CallContext>('fetch_certificate', async (ctx) => {
  if (onLedger(ctx)) return LEDGER_DECIDED
  const order = ctx.trustOrder ?? ['ledger']
  if (ctx.x5u === undefined || !order.includes('x5u') || ctx.certificates === undefined) {
    const why = ctx.x5u === undefined ? 'the PASSporT names no x5u' : 'CALLER_TRUST does not list x5u'
    throw new CheckFailed('NO_TRUSTED_KEY', `no key to verify with: the ledger has none for origTN and ${why}`)
  }
  try {
    ctx.bundle = await ctx.certificates.certificates.get(ctx.x5u)
  } catch (err) {
    if (!(err instanceof FetchFailed)) throw err
    if (err.reason === 'refused') throw new CheckFailed('X5U_NOT_ALLOWED', `x5u refused: ${err.message}`)
    if (err.reason === 'unparsable') throw new CheckFailed('CERT_INVALID', err.message)
    throw new CheckFailed('X5U_FETCH_FAILED', `x5u could not be fetched: ${err.message}`)
  }
  ctx.trust = 'x5u'
  return `${ctx.bundle.length} certificate(s)`
})

export const checkCertificateChain = check<CallContext>('check_certificate_chain', async (ctx) => {
  if (onLedger(ctx)) return LEDGER_DECIDED
  const result = await ctx.certificates!.validate(ctx.bundle!, ctx.nowS * 1000)
  if (isChainFailure(result)) throw new CheckFailed(result.code, result.message)
  ctx.chain = result
  const leaf = result.leaf.cert
  ctx.subject = nameOf(leaf.subject)
  ctx.candidates = [{ keyId: 'x5u', keystoreId: '', key: leaf.publicKey }]
  return `${ctx.subject} -> ${nameOf(result.path.at(-1)!.subject)} (${result.path.length} certificates)`
})

/**
 * RFC 8226 TNAuthList: a service provider code is reported; telephone numbers or ranges
 * (delegate certificates, RFC 9060) must cover orig.tn. No list, or one that cannot be read: fails.
 */
export const checkTnAuthorization = check<CallContext>('check_tn_authorization', (ctx) => {
  if (onLedger(ctx)) return LEDGER_DECIDED
  const list = ctx.chain!.leaf.tnAuthList
  if (list === null) throw new CheckFailed('TN_NOT_AUTHORIZED', 'the leaf certificate has no TNAuthList extension')
  if (typeof list === 'string') throw new CheckFailed('TN_NOT_AUTHORIZED', `the leaf's TNAuthList cannot be read: ${list}`)
  ctx.spc = list.spcs[0]
  const orig = tnDigits(ctx.origTN)!
  if (list.tns.length + list.ranges.length > 0) {
    if (!tnCovered(list, orig)) throw new CheckFailed('TN_NOT_AUTHORIZED', `the leaf's TNAuthList does not cover ${orig}`)
    return `TNAuthList covers ${orig}${ctx.spc === undefined ? '' : `; SPC ${ctx.spc}`}`
  }
  return `SPC ${list.spcs.join(', ')}`
})

export const checkRevocationStep = check<CallContext>('check_revocation', async (ctx) => {
  if (onLedger(ctx)) return LEDGER_DECIDED
  const trust = ctx.certificates!
  const verdict = await checkRevocation(ctx.chain!, trust.crls, trust.crlMode, ctx.nowS * 1000, await trust.anchors.all())
  if (!verdict.ok) throw new CheckFailed(verdict.code, verdict.message)
  return verdict.detail
})
