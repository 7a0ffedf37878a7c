import { check, CheckFailed } from '../../lib/checks.ts'
import type { PassportContext } from '../call-context.ts'
import { isChainFailure } from './chain.ts'
import { checkCertificatePolicy } from './certificate-policy.ts'
import { FetchFailed } from './fetch-cache.ts'
import { checkRevocation } from './revocation.ts'
import { nameOf, tnCovered } from './x509.ts'

/**
 * The certificate trust source (RFC 8224/8226, ATIS-1000074): the key comes from the leaf
 * certificate the PASSporT's `x5u` names, trusted when it chains to an STI-CA trust anchor,
 * carries the SHAKEN certificate policy, its TNAuthList authorises the signer's number and it
 * is not revoked. Run by src/caller/trust-sources.ts only when the PASSporT has an x5u and
 * CALLER_TRUST lists it.
 */
export const fetchCertificate = check<PassportContext>('fetch_certificate', async (ctx) => {
  try {
    ctx.bundle = await ctx.certificates!.certificates.get(ctx.x5u!)
  } catch (err) {
    if (!(err instanceof FetchFailed)) throw err
    if (err.reason === 'refused') throw new CheckFailed('X5U_NOT_ALLOWED', `x5u refused: ${err.message}`)
    if (err.reason === 'unparsable') throw new CheckFailed('CERT_INVALID', err.message)
    throw new CheckFailed('X5U_FETCH_FAILED', `x5u could not be fetched: ${err.message}`)
  }
  return `${ctx.bundle.length} certificate(s)`
})

export const checkCertificateChain = check<PassportContext>('check_certificate_chain', async (ctx) => {
  const result = await ctx.certificates!.validate(ctx.bundle!, ctx.nowS * 1000)
  if (isChainFailure(result)) throw new CheckFailed(result.code, result.message)
  ctx.chain = result
  const leaf = result.leaf.cert
  ctx.subject = nameOf(leaf.subject)
  ctx.candidates = [{ keyId: 'x5u', keystoreId: '', key: leaf.publicKey }]
  return `${ctx.subject} -> ${nameOf(result.path.at(-1)!.subject)} (${result.path.length} certificates)`
})

/** ATIS-1000080 6.4.1: the SHAKEN certificate policy (STI_CERT_POLICY: off, warn, enforce). */
export const checkCertificatePolicyStep = check<PassportContext>('check_certificate_policy', (ctx) => {
  const verdict = checkCertificatePolicy(ctx.chain!, ctx.certificates!.policyMode)
  if (!verdict.ok) throw new CheckFailed('CERT_POLICY', verdict.message)
  return verdict.detail
})

/**
 * RFC 8226 TNAuthList: a service provider code is reported; telephone numbers or ranges
 * (delegate certificates, RFC 9060) must cover the signer's number: orig.tn for the shaken
 * PASSporT, the diverting number for a div one. No list, or one that cannot be read: fails.
 */
export const checkTnAuthorization = check<PassportContext>('check_tn_authorization', (ctx) => {
  const list = ctx.chain!.leaf.tnAuthList
  if (list === null) throw new CheckFailed('TN_NOT_AUTHORIZED', 'the leaf certificate has no TNAuthList extension')
  if (typeof list === 'string') throw new CheckFailed('TN_NOT_AUTHORIZED', `the leaf's TNAuthList cannot be read: ${list}`)
  ctx.spc = list.spcs[0]
  const tn = ctx.authorityTN!.slice(1)
  if (list.tns.length + list.ranges.length > 0) {
    if (!tnCovered(list, tn)) throw new CheckFailed('TN_NOT_AUTHORIZED', `the leaf's TNAuthList does not cover ${tn}`)
    return `TNAuthList covers ${tn}${ctx.spc === undefined ? '' : `; SPC ${ctx.spc}`}`
  }
  return `SPC ${list.spcs.join(', ')}`
})

export const checkRevocationStep = check<PassportContext>('check_revocation', async (ctx) => {
  const trust = ctx.certificates!
  const verdict = await checkRevocation(ctx.chain!, trust.crls, trust.crlMode, ctx.nowS * 1000, await trust.crlSigners())
  if (!verdict.ok) throw new CheckFailed(verdict.code, verdict.message)
  return verdict.detail
})
