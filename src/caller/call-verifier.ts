import type { Config } from '../config.ts'
import { CALL_FAILURES, type CallFailure } from '../contract/failure-codes.ts'
import { Tally } from '../lib/tally.ts'
import type { KeyDirectory } from './key-directory.ts'
import type { CertificateTrust } from './shaken/certificate-trust.ts'
import { sipReasonOf, verstatOf, type SipReason, type Verstat } from './sip-outcome.ts'
import { verifyCall, type CallVerdict } from './verify-call.ts'

export interface CallToVerify {
  origTN: string
  destTN: string
  jwt: string
  identity?: string | string[]
  /** When the call arrived (epoch seconds); default now. */
  nowS?: number
}

export type ServiceCallVerdict = CallVerdict & { verstat: Verstat; sipReason?: SipReason }

/**
 * The verification pipeline with this service's trust sources and limits, and what a SIP
 * proxy makes of its verdict: one entry point for every interface that verifies calls
 * (call-signature-verification, the ATIS-1000082 STI-VS, the SIP redirect server).
 */
export class CallVerifier {
  /**
   * Verifications by verstat and failure code (`none` when verified), for /metrics: every
   * interface's (HTTP, SIP, a div's check before signing). Each combination starts at 0.
   */
  readonly counts = new Tally<'verstat' | 'code'>(['verstat', 'code'], [
    { verstat: verstatOf(true, undefined), code: 'none' },
    ...(Object.keys(CALL_FAILURES) as CallFailure[]).map((code) => ({ verstat: verstatOf(false, code), code })),
  ])
  readonly #directory: KeyDirectory
  readonly #certificates: CertificateTrust
  readonly #config: Pick<Config, 'callerTrust' | 'callMaxAgeS'>

  constructor(directory: KeyDirectory, certificates: CertificateTrust, config: Pick<Config, 'callerTrust' | 'callMaxAgeS'>) {
    this.#directory = directory
    this.#certificates = certificates
    this.#config = config
  }

  async verify(call: CallToVerify): Promise<ServiceCallVerdict> {
    const verdict = await verifyCall({
      directory: this.#directory, certificates: this.#certificates, trustOrder: this.#config.callerTrust,
      jcardCache: this.#certificates.jcards, nowS: Math.floor(Date.now() / 1000), ...call, maxAgeS: this.#config.callMaxAgeS,
    })
    const verstat = verstatOf(verdict.success, verdict.code)
    this.counts.add({ verstat, code: verdict.success ? 'none' : verdict.code ?? 'none' })
    return {
      ...verdict,
      verstat,
      ...(verdict.success || verdict.code === undefined ? {} : { sipReason: sipReasonOf(verdict.code) }),
    }
  }
}
