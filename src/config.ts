import { existsSync, readFileSync } from 'node:fs'
import { ConfigError } from './errors.ts'
import { isAddressOrRange, NAMED_RANGES } from './lib/address-ranges.ts'
import { sipSettings, type SipSettings } from './lib/sip-settings.ts'
import { claimProblem, ZKLOGIN_LIMITS } from './lib/zklogin-limits.ts'

/** Published ledger deployments (domain.md), used as defaults per SUI_NETWORK. */
export const SUI_NETWORKS = {
  mainnet: {
    graphqlUrl: 'https://graphql.mainnet.sui.io/graphql',
    knsPackageId: '0x66dd6f65ebad8911bd196749098bfe6ef826049cef4086c5929863a5a30c93ef',
    mapPackageId: '0x29f7c3fb2152fad673fe6a79a949a18bd42bf09397b0cac910dbb4e791080871',
    keystorePackageId: '0x78b8c91ec5321bce57bdcbf12c8a2d7b5055afcff63ccf5572926ee197801520',
    idMapObjectId: '0x6d0c613c6c2db4e1e839ea552f93597cb76d4028af2218356f5b8b9fb0b77cb8',
    idMapTableId: '0x8fbb2a81daa43f9592d693a2ee6e1e6e3c8fed1d644581f2802e9c916db12d57',
  },
  testnet: {
    graphqlUrl: 'https://graphql.testnet.sui.io/graphql',
    knsPackageId: '0x695fa0bd4395696074c4b9e8d2122e40664c0a78842c356095ed28ccdc04a802',
    mapPackageId: '0xa3f54fe10970b044d3d8b534f14274c3e3c762b96bfe576281ffcec89835fe1c',
    keystorePackageId: '0x0f5ec6674ecb24cbf96b2211fea94c491afebf8bc21f284170aaa880a1ac17fb',
    idMapObjectId: '0x75250ff5c84aba97a03505c4eb131156f83fe8e7969806fcd8771ff4d59edbea',
    idMapTableId: '0x655fc0ea86e13e030829b0824bb141d0c370825cbf57aa9a95d80dbf592b4e43',
  },
} as const

export type SuiNetwork = keyof typeof SUI_NETWORKS

export interface Config {
  port: number
  host: string
  dataDir: string
  databaseUrl: string | undefined
  /**
   * DATABASE_DIRECT_URL: PostgreSQL itself, for LISTEN and the leader locks, when DATABASE_URL
   * is a transaction pooler (PgBouncer); then the pool uses no named prepared statements.
   */
  databaseDirectUrl: string | undefined
  publicBaseUrl: string
  /** False when PUBLIC_BASE_URL was left unset (the default follows PORT): see resolvePublicBaseUrl. */
  publicBaseUrlSet: boolean
  ledger: 'local' | 'sui'
  approvalTtlS: number
  /** How a new (pending) approval is committed: see APPROVAL_COMMIT in the README. */
  approvalCommit: 'async' | 'sync'
  /**
   * The OpenID issuer of every user's zkLogin address: this service's own provider, served at
   * the issuer's path. Unset: the value the database was created with, or on a new database
   * `$PUBLIC_BASE_URL/oidc` (see pinZkLoginIdentity).
   */
  zkLoginIssuer: string
  zkLoginIssuerSet: boolean
  zkLoginClientId: string
  /** Mysten's zkLogin prover API (`POST <url>`, the `/v1` request); unset: no proofs for Sui. */
  zkLoginProverUrl: string | undefined
  zkLoginProverTimeoutMs: number
  /** How one-time login codes reach the phone: the server log (development), SMPP, or an HTTP gateway. */
  smsDelivery: 'log' | 'smpp' | 'http'
  smppUrl: string | undefined
  smppSystemType: string | undefined
  smsFrom: string | undefined
  smsHttpUrl: string | undefined
  /** SMS_HTTP_METHOD: GET (Kannel's sendsms, the default) or POST (a form). */
  smsHttpMethod: 'GET' | 'POST'
  smsTimeoutMs: number
  /**
   * Login code sends allowed per hour (docs/accounts.md, Send limits): per number and client
   * address group, per number from all addresses, and the pumping budgets, which count only
   * sends that texted: per client address group and per number prefix.
   */
  loginSendsPerNumber: number
  loginSendsPerNumberTotal: number
  loginSendsPerIp: number
  loginSendsPerPrefix: number
  /** Digits of the number (country code included) that make its prefix for LOGIN_SENDS_PER_PREFIX. */
  loginPrefixDigits: number
  /** Seconds before a new code may be sent to the same number from the same client address group. */
  loginResendCooldownS: number
  /** Undefined means "generate once and keep in the database". */
  knsSecret: string | undefined
  redisUrl: string | undefined
  logLevel: string
  /** LOG_FORMAT: `json` (one JSON object a line), `pretty` (pino-pretty: readable, coloured), `auto` (pretty when stdout is a terminal). */
  logFormat: 'auto' | 'json' | 'pretty'
  suiNetwork: SuiNetwork
  suiGraphqlUrl: string
  /** The KNS package as first published: the origin of the `Kns` and `ApprovalEvent` types (types keep it across upgrades). */
  knsPackageId: string
  /** The KNS package's latest version: the target of `kns::approve` calls (the approval page). */
  knsLatestPackageId: string
  /** Original ID of the keystore package: a keystore must be of one of its types. */
  keystorePackageId: string
  /** Original ID of the map package: the ID map object must be of one of its types. */
  mapPackageId: string
  /** The shared ID map object (token -> keystores), read by the start-up check. */
  idMapObjectId: string
  /** The table inside the ID map: its entries are read by key. */
  idMapTableId: string
  /** The longest `transaction_details?wait=` honoured, in seconds (a longer one is shortened to it). */
  waitMaxS: number
  /** CALLER_TRUST: where a call's key may come from, in the order tried. */
  callerTrust: Array<'ledger' | 'x5u'>
  /** STI_TRUST_ANCHORS: PEM file or directory of STI-CA roots (besides `kns shaken trust add`). */
  stiTrustAnchors: string | undefined
  /** STI_CRL: revocation checking of x5u leaves. */
  stiCrl: 'off' | 'soft' | 'hard'
  /** SIP_LISTEN and its companions: the SIP redirect interface (docs/sip.md); null: off. */
  sip: SipSettings | null
  /** STI_CERT_POLICY: whether x5u certificates must carry the SHAKEN certificate policy (ATIS-1000080). */
  stiCertPolicy: 'off' | 'warn' | 'enforce'
  /** x5u (and CRL) URLs may be http / reach private addresses: development and tests only. */
  x5uAllowHttp: boolean
  x5uAllowPrivate: boolean
  /** How often the ledger watcher reads the ledger's ApprovalEvents once it has read them all (ms). */
  ledgerWatchIntervalMs: number
  /** Webhook URLs may be http and reach private/loopback addresses: development and tests only. */
  webhookAllowPrivate: boolean
  /** Deadline of one webhook delivery attempt (ms). */
  webhookTimeoutMs: number
  /** First retry delay of a failed delivery (ms); each next one doubles, with jitter. */
  webhookRetryBaseMs: number
  /** A delivery still failing this long after its event is given up (marked failed), s. */
  webhookGiveUpAfterS: number
  /** WEBHOOK_ENDPOINT_CONCURRENCY: attempts in flight at once per subscription (over every process). */
  webhookEndpointConcurrency: number
  /** WEBHOOK_BREAKER_FAILURES: failed attempts in a row after which a subscription is paused. */
  /** RETENTION_DAYS: finished deliveries, events and read ledger feed rows older than this are deleted (0: kept forever). */
  retentionDays: number
  webhookBreakerFailures: number
  /** LEDGER=sui: deadline of every ledger request (ms). */
  ledgerTimeoutMs: number
  /** LEDGER=sui: how long a decision re-reads a "not found" transaction or a stale owner before failing (ms). */
  ledgerFreshnessMs: number
  /** Requests per second per client IP on the endpoints that take no API key. 0 = off. */
  publicRateLimit: number
  /** Default per-key rate (requests per second) for keys created without --rate. */
  defaultKeyRate: number
  /**
   * Which peers' X-Forwarded-For to believe (TRUST_PROXY): false (none: the socket's address is
   * the client), a number of proxy hops in front of the service, or the proxies' addresses and
   * ranges (CIDR, or proxy-addr's `loopback`, `linklocal`, `uniquelocal`).
   */
  trustProxy: false | number | string[]
  /** HSTS_MAX_AGE_S: Strict-Transport-Security on every answer when PUBLIC_BASE_URL is https; 0: none (the proxy sends it). */
  hstsMaxAgeS: number
  /** Seconds a ledger read for an owner may be reused when LEDGER=sui. */
  ledgerCacheTtlS: number
  /** Oldest acceptable PASSporT `iat`, in seconds (RFC 8224 recommends 60); 0 turns the check off. */
  callMaxAgeS: number
  /** A whole request (headers and body) must arrive within this many ms; slower clients get 408. */
  requestTimeoutMs: number
  /** A request's headers (and a new connection's first request) within this many ms. */
  headersTimeoutMs: number
  /** MAX_CONNECTIONS: open client connections at most (admission control, src/http/admission.ts). */
  maxConnections: number
  /** MAX_CONNECTIONS_PER_IP: open connections per client address (not counting trusted proxies). */
  maxConnectionsPerIp: number
  /** MAX_IN_FLIGHT: requests worked on at once; more wait in a queue. */
  maxInFlight: number
  /** QUEUE_BUDGET_MS: longest wait in that queue before a 503 (0: no queue). */
  queueBudgetMs: number
  /** SHED_LAG_MS: event-loop lag past which new requests are shed before they are parsed further (0: never). */
  shedLagMs: number
  /** KEEP_ALIVE_BUSY_MS: idle keep-alive while more than half of MAX_CONNECTIONS are open. */
  keepAliveBusyMs: number
  /** An idle keep-alive connection is closed after this many ms. */
  keepAliveTimeoutMs: number
  /** PostgreSQL: longest wait for a connection. */
  databaseConnectTimeoutMs: number
  /** PostgreSQL: longest wait for one statement's answer; undefined = unset (servers 30 s, CLI commands no limit); 0 = no limit. */
  databaseQueryTimeoutMs: number | undefined
  /** With REDIS_URL: longest wait for Redis per rate-limit decision. */
  redisCommandTimeoutMs: number
}

type Env = Record<string, string | undefined>

const OBJECT_ID = /^0x[0-9a-fA-F]{64}$/

/** CALLER_TRUST: `ledger`, `x5u`, or both in the order tried (default `ledger,x5u`). */
function trustOrder(env: Env): Array<'ledger' | 'x5u'> {
  const raw = env.CALLER_TRUST || 'ledger,x5u'
  const names = raw.split(',').map((n) => n.trim())
  if (names.length === 0 || names.length > 2 || new Set(names).size !== names.length || !names.every((n) => n === 'ledger' || n === 'x5u')) {
    throw new ConfigError(`CALLER_TRUST must be ledger, x5u, or both in order (e.g. ledger,x5u); got ${JSON.stringify(raw)}`)
  }
  return names as Array<'ledger' | 'x5u'>
}

function int(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name]
  if (raw === undefined || raw === '') return fallback
  if (!/^\d+$/.test(raw)) throw new ConfigError(`${name} must be a whole number, got "${raw}"`)
  const value = Number(raw)
  if (value < min || value > max) throw new ConfigError(`${name} must be between ${min} and ${max}, got ${value}`)
  return value
}

function url(env: Env, name: string, fallback: string | undefined, protocols: string[]): string | undefined {
  const raw = env[name]
  if (raw === undefined || raw === '') return fallback
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

function oneOf<T extends string>(env: Env, name: string, allowed: readonly T[], fallback: T): T {
  const raw = env[name]
  if (raw === undefined || raw === '') return fallback
  if (!(allowed as readonly string[]).includes(raw)) {
    throw new ConfigError(`${name} must be one of ${allowed.join(', ')}, got "${raw}"`)
  }
  return raw as T
}

function objectId(env: Env, name: string, fallback: string): string {
  const raw = env[name]
  if (raw === undefined || raw === '') return fallback
  if (!OBJECT_ID.test(raw)) throw new ConfigError(`${name} must be 0x followed by 64 hex digits`)
  return raw.toLowerCase()
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
function issuer(raw: string, name: string): string {
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

/** Reads `.env` (if present) without overriding variables already set in the environment. */
export function loadDotEnv(path = '.env'): void {
  if (existsSync(path)) process.loadEnvFile(path)
}

export function loadConfig(env: Env = process.env): Config {
  const port = int(env, 'PORT', 8080, 0, 65535)
  const suiNetwork = oneOf(env, 'SUI_NETWORK', ['mainnet', 'testnet'] as const, 'testnet')
  const network = SUI_NETWORKS[suiNetwork]
  const knsSecret = env.KNS_SECRET === '' ? undefined : env.KNS_SECRET
  if (knsSecret !== undefined && Buffer.byteLength(knsSecret) < 32) {
    throw new ConfigError('KNS_SECRET must be at least 32 bytes (e.g. `openssl rand -hex 32`)')
  }
  const publicBaseUrl = url(env, 'PUBLIC_BASE_URL', `http://localhost:${port}`, ['http:', 'https:'])!.replace(/\/+$/, '')
  const zkLoginIssuer = issuer(env.ZKLOGIN_ISSUER || `${publicBaseUrl}/oidc`, env.ZKLOGIN_ISSUER ? 'ZKLOGIN_ISSUER' : 'PUBLIC_BASE_URL + /oidc')
  const zkLoginClientId = env.ZKLOGIN_CLIENT_ID || 'kns'
  const clientProblem = claimProblem('ZKLOGIN_CLIENT_ID', zkLoginClientId, ZKLOGIN_LIMITS.aud)
  if (clientProblem !== null) throw new ConfigError(clientProblem)
  const knsPackageId = objectId(env, 'KNS_PACKAGE_ID', network.knsPackageId)
  const smsDelivery = oneOf(env, 'SMS_DELIVERY', ['log', 'smpp', 'http'] as const, 'log')
  const smppUrl = url(env, 'SMPP_URL', undefined, ['smpp:', 'ssmpp:'])
  const smsHttpUrl = url(env, 'SMS_HTTP_URL', undefined, ['http:', 'https:'])
  const smsHttpMethod = (env.SMS_HTTP_METHOD || 'GET').toUpperCase()
  if (smsHttpMethod !== 'GET' && smsHttpMethod !== 'POST') throw new ConfigError(`SMS_HTTP_METHOD must be GET or POST, got ${JSON.stringify(env.SMS_HTTP_METHOD)}`)
  if (smsDelivery === 'smpp' && smppUrl === undefined) throw new ConfigError('SMS_DELIVERY=smpp needs SMPP_URL (smpp://system_id:password@host:2775)')
  if (smsDelivery === 'http' && smsHttpUrl === undefined) throw new ConfigError('SMS_DELIVERY=http needs SMS_HTTP_URL (e.g. Kannel\'s http://host:13013/cgi-bin/sendsms?username=..&password=..)')
  const databaseUrl = url(env, 'DATABASE_URL', undefined, ['postgres:', 'postgresql:'])
  const databaseDirectUrl = url(env, 'DATABASE_DIRECT_URL', undefined, ['postgres:', 'postgresql:'])
  if (databaseDirectUrl !== undefined && databaseUrl === undefined) {
    throw new ConfigError('DATABASE_DIRECT_URL is set but DATABASE_URL is not: DATABASE_URL is the pooled connection (PgBouncer), DATABASE_DIRECT_URL the direct one beside it')
  }
  return {
    port,
    // Loopback unless asked: a first `npm start` prints a key with every scope, and must not
    // offer it to the network. HOST=0.0.0.0 (or an address) for a deployment.
    host: env.HOST || '127.0.0.1',
    dataDir: env.DATA_DIR || './data',
    databaseUrl,
    databaseDirectUrl,
    publicBaseUrl,
    publicBaseUrlSet: env.PUBLIC_BASE_URL !== undefined && env.PUBLIC_BASE_URL !== '',
    ledger: oneOf(env, 'LEDGER', ['local', 'sui'] as const, 'local'),
    approvalTtlS: int(env, 'APPROVAL_TTL_S', 900, 1, 30 * 24 * 3600),
    approvalCommit: oneOf(env, 'APPROVAL_COMMIT', ['async', 'sync'] as const, 'async'),
    zkLoginIssuer,
    zkLoginIssuerSet: env.ZKLOGIN_ISSUER !== undefined && env.ZKLOGIN_ISSUER !== '',
    zkLoginClientId,
    zkLoginProverUrl: url(env, 'ZKLOGIN_PROVER_URL', undefined, ['http:', 'https:']),
    zkLoginProverTimeoutMs: int(env, 'ZKLOGIN_PROVER_TIMEOUT_MS', 30_000, 1000, 300_000),
    smsDelivery,
    smppUrl,
    smppSystemType: env.SMPP_SYSTEM_TYPE || undefined,
    smsFrom: env.SMS_FROM || undefined,
    smsHttpUrl,
    smsHttpMethod,
    smsTimeoutMs: int(env, 'SMS_TIMEOUT_MS', 10_000, 100, 120_000),
    loginSendsPerNumber: int(env, 'LOGIN_SENDS_PER_NUMBER', 5, 1, 1000),
    loginSendsPerNumberTotal: int(env, 'LOGIN_SENDS_PER_NUMBER_TOTAL', 20, 1, 100_000),
    loginSendsPerIp: int(env, 'LOGIN_SENDS_PER_IP', 20, 1, 1_000_000),
    loginSendsPerPrefix: int(env, 'LOGIN_SENDS_PER_PREFIX', 200, 1, 10_000_000),
    loginPrefixDigits: int(env, 'LOGIN_PREFIX_DIGITS', 7, 2, 15),
    loginResendCooldownS: int(env, 'LOGIN_RESEND_COOLDOWN_S', 30, 0, 3600),
    knsSecret,
    redisUrl: url(env, 'REDIS_URL', undefined, ['redis:', 'rediss:']),
    logLevel: oneOf(env, 'LOG_LEVEL', ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const, 'info'),
    logFormat: oneOf(env, 'LOG_FORMAT', ['auto', 'json', 'pretty'] as const, 'auto'),
    suiNetwork,
    suiGraphqlUrl: url(env, 'SUI_GRAPHQL_URL', network.graphqlUrl, ['http:', 'https:'])!,
    knsPackageId,
    knsLatestPackageId: objectId(env, 'KNS_LATEST_PACKAGE_ID', knsPackageId),
    keystorePackageId: objectId(env, 'SUI_KEYSTORE_PACKAGE_ID', network.keystorePackageId),
    mapPackageId: objectId(env, 'SUI_MAP_PACKAGE_ID', network.mapPackageId),
    idMapObjectId: objectId(env, 'SUI_ID_MAP_OBJECT_ID', network.idMapObjectId),
    idMapTableId: objectId(env, 'SUI_ID_MAP_TABLE_ID', network.idMapTableId),
    ledgerTimeoutMs: int(env, 'LEDGER_TIMEOUT_MS', 10_000, 100, 120_000),
    waitMaxS: int(env, 'WAIT_MAX_S', 60, 0, 60),
    ledgerWatchIntervalMs: int(env, 'LEDGER_WATCH_INTERVAL_MS', 1000, 50, 600_000),
    callerTrust: trustOrder(env),
    stiTrustAnchors: env.STI_TRUST_ANCHORS || undefined,
    stiCrl: oneOf(env, 'STI_CRL', ['off', 'soft', 'hard'] as const, 'soft'),
    stiCertPolicy: oneOf(env, 'STI_CERT_POLICY', ['off', 'warn', 'enforce'] as const, 'enforce'),
    sip: sipSettings(env),
    x5uAllowHttp: oneOf(env, 'X5U_ALLOW_HTTP', ['true', 'false'] as const, 'false') === 'true',
    x5uAllowPrivate: oneOf(env, 'X5U_ALLOW_PRIVATE', ['true', 'false'] as const, 'false') === 'true',
    webhookAllowPrivate: oneOf(env, 'WEBHOOK_ALLOW_PRIVATE', ['true', 'false'] as const, 'false') === 'true',
    webhookTimeoutMs: int(env, 'WEBHOOK_TIMEOUT_MS', 10_000, 100, 60_000),
    webhookRetryBaseMs: int(env, 'WEBHOOK_RETRY_BASE_MS', 5000, 10, 3_600_000),
    webhookGiveUpAfterS: int(env, 'WEBHOOK_GIVE_UP_AFTER_S', 86_400, 1, 30 * 86_400),
    webhookEndpointConcurrency: int(env, 'WEBHOOK_ENDPOINT_CONCURRENCY', 4, 1, 1000),
    webhookBreakerFailures: int(env, 'WEBHOOK_BREAKER_FAILURES', 5, 1, 1000),
    retentionDays: int(env, 'RETENTION_DAYS', 90, 0, 36_500),
    ledgerFreshnessMs: int(env, 'LEDGER_FRESHNESS_MS', 3_000, 0, 60_000),
    publicRateLimit: int(env, 'PUBLIC_RATE_LIMIT', 50, 0, 1_000_000),
    defaultKeyRate: int(env, 'DEFAULT_KEY_RATE', 100, 1, 1_000_000),
    trustProxy: trustProxySetting(env.TRUST_PROXY),
    hstsMaxAgeS: int(env, 'HSTS_MAX_AGE_S', 31_536_000, 0, 63_072_000),
    ledgerCacheTtlS: int(env, 'LEDGER_CACHE_TTL_S', 2, 0, 3600),
    callMaxAgeS: int(env, 'CALL_MAX_AGE_S', 60, 0, 86_400),
    requestTimeoutMs: int(env, 'REQUEST_TIMEOUT_MS', 10_000, 100, 600_000),
    headersTimeoutMs: int(env, 'HEADERS_TIMEOUT_MS', 5_000, 100, 600_000),
    keepAliveTimeoutMs: int(env, 'KEEP_ALIVE_TIMEOUT_MS', 72_000, 100, 600_000),
    maxConnections: int(env, 'MAX_CONNECTIONS', defaultMaxConnections(), 1, 1_000_000),
    maxConnectionsPerIp: int(env, 'MAX_CONNECTIONS_PER_IP', 256, 1, 1_000_000),
    maxInFlight: int(env, 'MAX_IN_FLIGHT', 64, 1, 100_000),
    queueBudgetMs: int(env, 'QUEUE_BUDGET_MS', 250, 0, 60_000),
    keepAliveBusyMs: int(env, 'KEEP_ALIVE_BUSY_MS', 5_000, 100, 600_000),
    shedLagMs: int(env, 'SHED_LAG_MS', 50, 0, 60_000),
    databaseConnectTimeoutMs: int(env, 'DATABASE_CONNECT_TIMEOUT_MS', 5000, 1, 3_600_000),
    databaseQueryTimeoutMs: env.DATABASE_QUERY_TIMEOUT_MS ? int(env, 'DATABASE_QUERY_TIMEOUT_MS', 0, 0, 3_600_000) : undefined,
    redisCommandTimeoutMs: int(env, 'REDIS_COMMAND_TIMEOUT_MS', 250, 1, 60_000),
  }
}
