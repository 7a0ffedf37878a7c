/**
 * What must not reach production, each with its fix: one list, judged on the configuration
 * and a few facts from the database. A server logs each finding as a warning at start;
 * `kns doctor --production` fails on them (docs/operations.md, Production checklist).
 */
import { isIP } from 'node:net'
import type { Config } from './config-type.ts'
import { addressMatcher } from './address-ranges.ts'

/** What the database says, read by the caller (src/service.ts, the doctor). */
export interface ProductionFacts {
  /** The public URL in effect (PUBLIC_BASE_URL, or the one the database keeps). */
  publicBaseUrl: string
  /** The zkLogin issuer in effect (the pinned one, or the one the first start would pin). */
  zkLoginIssuer: string
  /** The first start's all-scope development key, while it is not revoked. */
  developmentKeyId: string | null
}

export interface ProductionFinding {
  /** What it is about (a variable, or the development key). */
  name: string
  /** The problem and its fix, in one line. */
  detail: string
}

type Check = (config: Config, facts: ProductionFacts) => ProductionFinding | null

const isLoopback = addressMatcher(['loopback'])

/** localhost, a name under .localhost (RFC 6761), a loopback or unspecified address. */
export function isLocalHost(hostname: string): boolean {
  const host = hostname.replace(/^\[|\]$/g, '').toLowerCase()
  if (host === 'localhost' || host.endsWith('.localhost')) return true
  if (isIP(host) === 0) return false
  return isLoopback(host) || host === '0.0.0.0' || host === '::'
}

/** Why this URL cannot be a public https origin, or null. */
function notPublicHttps(url: string): string | null {
  const parsed = new URL(url)
  if (parsed.protocol !== 'https:') return 'is not https'
  if (isLocalHost(parsed.hostname)) return 'names this machine (localhost/loopback)'
  return null
}

const CHECKS: Check[] = [
  (config) => config.smsDelivery !== 'log' ? null : {
    name: 'SMS_DELIVERY',
    detail: 'SMS_DELIVERY=log: login codes are written to this server\'s log instead of being sent (development only); set SMS_DELIVERY=smpp (SMPP_URL) or http (SMS_HTTP_URL)',
  },
  (config) => config.knsSecret !== undefined ? null : {
    name: 'KNS_SECRET',
    detail: 'KNS_SECRET is not set: the server secret is generated and kept in the database (every backup is a copy of it). Set KNS_SECRET ' +
      '(openssl rand -hex 32, kept with your other secrets) before the production database\'s first start; a database that generated its own keeps it for good',
  },
  (_config, facts) => facts.developmentKeyId === null ? null : {
    name: 'development key',
    detail: `the first start's development API key ${facts.developmentKeyId} (every scope, printed in a terminal) is still active: revoke it (npx kns api-key revoke ${facts.developmentKeyId}) and create keys with only the scopes each vendor needs`,
  },
  (config) => !config.x5uAllowHttp ? null : {
    name: 'X5U_ALLOW_HTTP', detail: 'X5U_ALLOW_HTTP=true lets x5u and CRL URLs be plain http (development and tests only): unset it',
  },
  (config) => !config.x5uAllowPrivate ? null : {
    name: 'X5U_ALLOW_PRIVATE', detail: 'X5U_ALLOW_PRIVATE=true lets x5u and CRL URLs reach loopback and private addresses (development and tests only): unset it',
  },
  (config) => !config.webhookAllowPrivate ? null : {
    name: 'WEBHOOK_ALLOW_PRIVATE', detail: 'WEBHOOK_ALLOW_PRIVATE=true lets webhook URLs be http and reach loopback and private addresses (development and tests only): unset it',
  },
  (config, facts) => {
    const problem = notPublicHttps(facts.publicBaseUrl)
    if (problem === null) return null
    return {
      name: 'PUBLIC_BASE_URL',
      detail: config.publicBaseUrlSet
        ? `PUBLIC_BASE_URL ${facts.publicBaseUrl} ${problem}: set it to the service's public https URL, the same on every process`
        : `PUBLIC_BASE_URL is not set: approval links and signed approval messages name ${facts.publicBaseUrl}, which ${problem}. ` +
          'Set it to the public https URL in production, the same on every process',
    }
  },
  (_config, facts) => {
    const problem = notPublicHttps(facts.zkLoginIssuer)
    if (problem === null) return null
    return {
      name: 'ZKLOGIN_ISSUER',
      detail: `the zkLogin issuer ${facts.zkLoginIssuer} ${problem}: Sui and relying parties cannot reach it. While no address has been handed out, ` +
        're-pin it (npx kns oidc repin-issuer, after setting PUBLIC_BASE_URL); after that it cannot change (docs/operations.md, The zkLogin issuer)',
    }
  },
  (config) => config.metricsListen !== undefined ? null : {
    name: 'METRICS_LISTEN',
    detail: 'METRICS_LISTEN is not set: /metrics is served on the public port; set METRICS_LISTEN=[host:]port (e.g. 127.0.0.1:9464) to serve it on a listener of its own',
  },
]

export function productionFindings(config: Config, facts: ProductionFacts): ProductionFinding[] {
  return CHECKS.map((check) => check(config, facts)).filter((f) => f !== null)
}
