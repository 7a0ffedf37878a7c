import type { X509Certificate } from 'node:crypto'
import type { Executor } from '../../db/engine.ts'
import type { OutboundOptions } from '../../lib/outbound-http.ts'
import { validateChain, type ChainFailure, type ValidatedChain } from './chain.ts'
import { FetchCache } from './fetch-cache.ts'
import { parseCrl, type CrlMode, type ParsedCrl } from './revocation.ts'
import type { CertPolicyMode } from './certificate-policy.ts'
import { CrlSigners } from './crl-signers.ts'
import { TrustAnchors } from './trust-anchors.ts'
import { parseCertificates } from './x509.ts'

export type TrustSource = 'ledger' | 'x5u'

export interface CertificateTrustOptions {
  /** CALLER_TRUST: which sources, in which order. */
  order: TrustSource[]
  crlMode: CrlMode
  /** STI_CERT_POLICY; default enforce. */
  policyMode?: CertPolicyMode
  /** STI_TRUST_ANCHORS: a PEM file or a directory of them. */
  anchorsPath?: string
  allowHttp: boolean
  allowPrivate: boolean
  /** Extra TLS roots for fetching x5u and CRLs (tests' own PKI); the system's otherwise. */
  tlsCa?: string
}

/** ATIS-1000074 / the bounds for fetching x5u: 3 s, 64 KiB, at most 2 redirects. */
export const X5U_LIMITS = { timeoutMs: 3000, maxResponseBytes: 64 * 1024, maxRedirects: 2 } as const

/** How long a failed validation is reused: a certificate not yet valid may become so. */
const FAILED_VALIDATION_MS = 60_000

/**
 * The certificate side of caller verification: x5u documents and CRLs (fetched through the
 * guarded client, cached), the STI-CA trust anchors, and path validations, cached per
 * certificate bundle until the anchors change or a certificate of the path expires, so that a
 * warm call costs one signature verification, as on the ledger path.
 */
export class CertificateTrust {
  readonly order: TrustSource[]
  readonly crlMode: CrlMode
  readonly policyMode: CertPolicyMode
  readonly certificates: FetchCache<X509Certificate[]>
  readonly crls: FetchCache<ParsedCrl>
  /** RFC 9795 content calls name (a jCard at rcd.jcl, what rcdi covers): bytes, as fetched. */
  readonly jcards: FetchCache<Buffer>
  readonly anchors: TrustAnchors
  /** CRL signers trusted explicitly (the STI-PA's), besides the leaf's issuer and the anchors. */
  readonly crlSignerSet: CrlSigners
  readonly #validations = new WeakMap<X509Certificate[], { version: number; until: number; result: ValidatedChain | ChainFailure }>()

  constructor(db: Executor, options: CertificateTrustOptions) {
    this.order = options.order
    this.crlMode = options.crlMode
    this.policyMode = options.policyMode ?? 'enforce'
    const outbound: OutboundOptions = {
      ...X5U_LIMITS, allowHttp: options.allowHttp, allowPrivate: options.allowPrivate,
      ...(options.tlsCa === undefined ? {} : { ca: options.tlsCa }),
    }
    this.certificates = new FetchCache((body) => {
      const certs = parseCertificates(body)
      if (certs.length > 10) throw new Error('more than 10 certificates')
      return certs
      // 2 000 documents of at most 64 KiB: a bounded memory whatever URLs callers name.
    }, { outbound, purpose: 'x5u', maxEntries: 2000 })
    this.crls = new FetchCache(parseCrl, {
      outbound: { ...outbound, maxResponseBytes: 1024 * 1024 }, purpose: 'crl', maxEntries: 100,
      expiresAt: (crl) => (crl as ParsedCrl).nextUpdate,
    })
    this.jcards = new FetchCache((body) => body, { outbound: { ...outbound, maxResponseBytes: 128 * 1024 }, purpose: 'jcard', maxEntries: 200 })
    this.anchors = new TrustAnchors(db, options.anchorsPath)
    this.crlSignerSet = new CrlSigners(db)
  }

  /** Whose signature makes a CRL count besides the leaf's issuer: the trust anchors and the trusted CRL signers. */
  async crlSigners(): Promise<X509Certificate[]> {
    const [anchors, signers] = await Promise.all([this.anchors.all(), this.crlSignerSet.all()])
    return [...anchors, ...signers]
  }

  /** The bundle's path to a trust anchor at `now` (cached), or why there is none. */
  async validate(bundle: X509Certificate[], now: number): Promise<ValidatedChain | ChainFailure> {
    // The version first: a load that straddles a change is cached under the old one.
    const version = this.anchors.version
    const anchors = await this.anchors.all()
    const known = this.#validations.get(bundle)
    if (known !== undefined && known.version === version && now <= known.until) return known.result
    const result = validateChain(bundle, anchors, now)
    const until = 'code' in result ? now + FAILED_VALIDATION_MS : result.validUntil
    this.#validations.set(bundle, { version, until, result })
    return result
  }
}
