/**
 * How one environment variable's text becomes a value, each refusing a bad one with a
 * ConfigError that names the variable: the parsers behind the definitions in
 * src/lib/config-settings.ts.
 */
import { readFileSync } from 'node:fs'
import { isIP } from 'node:net'
import { ConfigError } from '../errors.ts'
import { isAddressOrRange, NAMED_RANGES } from './address-ranges.ts'
import { claimProblem, ZKLOGIN_LIMITS } from './zklogin-limits.ts'

export type Env = Record<string, string | undefined>

const OBJECT_ID = /^0x[0-9a-fA-F]{64}$/

/** Unset and empty are the same: the default. */
export function given(env: Env, name: string): string | undefined {
  const raw = env[name]
  return raw === undefined || raw === '' ? undefined : raw
}

export function wholeNumber(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = given(env, name)
  if (raw === undefined) return fallback
  if (!/^\d+$/.test(raw)) throw new ConfigError(`${name} must be a whole number, got "${raw}"`)
  const value = Number(raw)
  if (value < min || value > max) throw new ConfigError(`${name} must be between ${min} and ${max}, got ${value}`)
  return value
}

export function urlValue(env: Env, name: string, fallback: string | undefined, protocols: readonly string[]): string | undefined {
  const raw = given(env, name)
  if (raw === undefined) return fallback
  let parsed: URL
  try {
    parsed = new URL(raw)
  } catch {
    throw new ConfigError(`${name} is not a valid URL`)
  }
  if (!protocols.includes(parsed.protocol)) {
    throw new ConfigError(`${name} must use ${protocols.join(' or ')}, got ${parsed.protocol}`)
  }
  return raw
}

export function oneOf<T extends string>(env: Env, name: string, allowed: readonly T[], fallback: T): T {
  const raw = given(env, name)
  if (raw === undefined) return fallback
  if (!(allowed as readonly string[]).includes(raw)) {
    throw new ConfigError(`${name} must be one of ${allowed.join(', ')}, got "${raw}"`)
  }
  return raw as T
}

export function objectId(env: Env, name: string, fallback: string): string {
  const raw = given(env, name)
  if (raw === undefined) return fallback
  if (!OBJECT_ID.test(raw)) throw new ConfigError(`${name} must be 0x followed by 64 hex digits`)
  return raw.toLowerCase()
}

/** CALLER_TRUST: `ledger`, `x5u`, or both in the order tried (default `ledger,x5u`). */
export function trustOrder(env: Env): Array<'ledger' | 'x5u'> {
  const raw = env.CALLER_TRUST || 'ledger,x5u'
  const names = raw.split(',').map((n) => n.trim())
  if (names.length === 0 || names.length > 2 || new Set(names).size !== names.length || !names.every((n) => n === 'ledger' || n === 'x5u')) {
    throw new ConfigError(`CALLER_TRUST must be ledger, x5u, or both in order (e.g. ledger,x5u); got ${JSON.stringify(raw)}`)
  }
  return names as Array<'ledger' | 'x5u'>
}

/**
 * MAX_CONNECTIONS by default: 80 % of the process's descriptor limit (its soft RLIMIT_NOFILE,
 * from /proc/self/limits), less 100 kept for the database pool, the ledger, webhooks and files;
 * at most 10 000. 1 000 where the limit cannot be read.
 */
export function defaultMaxConnections(limitsFile = '/proc/self/limits'): number {
  try {
    const line = readFileSync(limitsFile, 'utf8').split('\n').find((l) => l.startsWith('Max open files'))
    const soft = Number(line?.trim().split(/\s+/)[3])
    if (!Number.isFinite(soft) || soft <= 0) return 1000
    return Math.max(16, Math.min(10_000, Math.floor(soft * 0.8) - 100))
  } catch {
    return 1000
  }
}

const TRUST_PROXY_HELP = 'set the number of proxies in front of the service (TRUST_PROXY=1 for one load balancer) or their ' +
  'addresses and ranges (TRUST_PROXY=10.0.0.0/8,192.0.2.7 or loopback)'

/** A proxy address or range: an IP, an IP/prefix, or one of proxy-addr's names. */
function proxyRange(entry: string): boolean {
  return Object.hasOwn(NAMED_RANGES, entry) || isAddressOrRange(entry)
}

/**
 * TRUST_PROXY: unset or `false` trusts no forwarded header. `true` (believe any
 * X-Forwarded-For) is refused: every client could then choose its address, and with it the
 * per-address limits and what the logs record.
 */
export function trustProxySetting(raw: string | undefined): false | number | string[] {
  const value = (raw ?? '').trim()
  if (value === '' || value === 'false' || value === '0') return false
  if (value === 'true') {
    throw new ConfigError(`TRUST_PROXY=true would believe the X-Forwarded-For any client sends: ${TRUST_PROXY_HELP}`)
  }
  if (/^\d+$/.test(value)) {
    const hops = Number(value)
    if (hops > 10) throw new ConfigError(`TRUST_PROXY must be at most 10 hops, got ${value}`)
    return hops
  }
  const entries = value.split(',').map((e) => e.trim()).filter((e) => e !== '')
  const bad = entries.find((e) => !proxyRange(e))
  if (entries.length === 0 || bad !== undefined) {
    throw new ConfigError(`TRUST_PROXY: ${JSON.stringify(bad ?? value)} is not a hop count, an address or a range: ${TRUST_PROXY_HELP}`)
  }
  return entries
}

/**
 * Paths of the service's own routes: the provider is served at the issuer's path, which must
 * not take any of them.
 */
export const RESERVED_PATHS = ['numsys', 'api', 'approve', 'assets', 'docs', 'openapi.json', 'stir', 'shaken', 'ledger', 'zklogin', 'metrics', 'healthz', 'readyz', 'livez']

/**
 * ZKLOGIN_ISSUER: an http(s) URL with a path of its own (the provider answers there), without
 * query, fragment or credentials (OpenID issuer rules), and provable by the zkLogin circuit.
 */
export function issuerValue(raw: string, name: string): string {
  let parsed: URL
  try {
    parsed = new URL(raw)
  } catch {
    throw new ConfigError(`${name} is not a valid URL`)
  }
  if (parsed.protocol !== 'https:' && parsed.protocol !== 'http:') throw new ConfigError(`${name} must use https (or http for development)`)
  if (parsed.search !== '' || parsed.hash !== '' || parsed.username !== '' || parsed.password !== '') {
    throw new ConfigError(`${name} must not carry a query, a fragment or credentials (OpenID Connect issuer identifier)`)
  }
  const value = raw.replace(/\/+$/, '')
  const problem = claimProblem(name, value, ZKLOGIN_LIMITS.iss)
  if (problem !== null) throw new ConfigError(problem)
  const first = parsed.pathname.split('/')[1] ?? ''
  if (first === '' || RESERVED_PATHS.includes(first)) {
    throw new ConfigError(`${name} must have a path of its own where this server serves its OpenID provider (e.g. https://kns.example.com/oidc); ` +
      `not /, nor one of /${RESERVED_PATHS.join(', /')}`)
  }
  return value
}

/**
 * METRICS_LISTEN: `[host:]port` of a listener of its own for /metrics (then not on the public
 * port); an IPv6 host in brackets (`[::1]:9464`); no host: HOST's.
 */
export function listenAddress(env: Env, name: string, defaultHost: string): { host: string; port: number } | undefined {
  const raw = given(env, name)?.trim()
  if (raw === undefined || raw === '') return undefined
  const match = /^(?:(?:\[([0-9a-fA-F:.]+)\]|([^:[\]]+)):)?(\d{1,5})$/.exec(raw)
  const port = Number(match?.[3])
  const host = match?.[1] ?? match?.[2]
  if (match === null || port < 1 || port > 65535 || (host !== undefined && isIP(host) === 0 && host !== 'localhost')) {
    throw new ConfigError(`${name} must be [host:]port (an IP address and a port from 1 to 65535, e.g. 9464, 10.0.0.5:9464 or [::1]:9464), got ${JSON.stringify(raw)}`)
  }
  return { host: host ?? defaultHost, port }
}
