import type { X509Certificate } from 'node:crypto'
import { DerError, expect, oid, parseDer, TAG } from '../../lib/der.ts'
import type { ValidatedChain } from './chain.ts'
import { certificateFacts, nameOf, OIDS } from './x509.ts'

/** STI_CERT_POLICY: `off` never looks; `warn` reports a missing policy and passes; `enforce` (default) fails. */
export type CertPolicyMode = 'off' | 'warn' | 'enforce'

/**
 * The SHAKEN Certificate Policy's arc (the STI-PA's CP, 2.16.840.1.114569.1.1.<version>:
 * .1.1.3 is CP 1.3, .1.1.4 CP 1.4): ATIS-1000080 6.4.1 requires STI intermediate and
 * end-entity certificates to carry one of them in certificatePolicies. Any version is
 * accepted: the CP's version is the STI-CA's business, its presence says the certificate was
 * issued under the STI-PA's policy.
 */
export const SHAKEN_POLICY_ARC = '2.16.840.1.114569.1.1.'

/** The policy OIDs a certificate's certificatePolicies extension lists; [] when it has none. */
export function policiesOf(cert: X509Certificate): string[] {
  const extension = certificateFacts(cert).extensions.get(OIDS.certificatePolicies)
  if (extension === undefined) return []
  return expect(parseDer(extension.value), TAG.SEQUENCE, 'certificatePolicies').children
    .map((info) => oid(expect(info, TAG.SEQUENCE, 'PolicyInformation').children[0]!))
}

/** Why `cert` lacks the SHAKEN policy, or null when it has it. */
export function missingShakenPolicy(cert: X509Certificate): string | null {
  let policies: string[]
  try {
    policies = policiesOf(cert)
  } catch (err) {
    return `${nameOf(cert.subject)} has a certificatePolicies extension that cannot be read (${err instanceof DerError ? err.message : 'malformed'})`
  }
  if (policies.some((p) => p.startsWith(SHAKEN_POLICY_ARC) && /^\d+$/.test(p.slice(SHAKEN_POLICY_ARC.length)))) return null
  return policies.length === 0
    ? `${nameOf(cert.subject)} has no certificatePolicies: not issued under the SHAKEN certificate policy (${SHAKEN_POLICY_ARC}x)`
    : `${nameOf(cert.subject)} names ${policies.join(', ')}, not the SHAKEN certificate policy (${SHAKEN_POLICY_ARC}x)`
}

export type PolicyVerdict = { ok: true; detail: string } | { ok: false; message: string }

/** Per validated path (itself cached with its x5u document): a warm call reads no DER. */
const problemsOf = new WeakMap<ValidatedChain, string[]>()

/** The leaf and every intermediate of the path (not the trust anchor, which the operator chose). */
export function checkCertificatePolicy(chain: ValidatedChain, mode: CertPolicyMode): PolicyVerdict {
  if (mode === 'off') return { ok: true, detail: 'not checked (STI_CERT_POLICY=off)' }
  let problems = problemsOf.get(chain)
  if (problems === undefined) {
    problems = chain.path.slice(0, -1).map(missingShakenPolicy).filter((p): p is string => p !== null)
    problemsOf.set(chain, problems)
  }
  if (problems.length === 0) return { ok: true, detail: 'SHAKEN certificate policy present' }
  if (mode === 'warn') return { ok: true, detail: `warning (STI_CERT_POLICY=warn): ${problems.join('; ')}` }
  return { ok: false, message: problems.join('; ') }
}
