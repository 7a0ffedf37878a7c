/**
 * What the service is configured with: read from the environment by loadConfig (src/config.ts)
 * through the definitions in config-settings-*.ts. Here, apart, so that the definitions can
 * name its fields without importing the module that reads them.
 */
import type { SipSettings } from './sip-settings.ts'
import type { SuiNetwork } from './sui-networks.ts'

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
  /**
   * METRICS_LISTEN: /metrics on a listener of its own (and then only there); undefined: on the
   * public port.
   */
  metricsListen: { host: string; port: number } | undefined
  /** False when PUBLIC_BASE_URL was left unset (the default follows PORT): see resolvePublicBaseUrl. */
  publicBaseUrlSet: boolean
  ledger: 'local' | 'sui'
  approvalTtlS: number
  /** How a new (pending) approval is committed: see APPROVAL_COMMIT in docs/configuration.md. */
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
  webhookBreakerFailures: number
  /** RETENTION_DAYS: finished deliveries, events and read ledger feed rows older than this are deleted (0: kept forever). */
  retentionDays: number
  /** SIM_SWAP_MONITORED_DAYS: how far back SIM and device changes are kept and answered (CAMARA's monitored period). */
  simSwapMonitoredDays: number
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
  /** MAX_IN_FLIGHT_PER_CLIENT: of those, at most this many for one client (0: half of MAX_IN_FLIGHT). */
  maxInFlightPerClient: number
  /** MAX_REGISTRATIONS_IN_PROGRESS: register-user-login calls a process works on at once (four fifths for one client). */
  maxRegistrationsInProgress: number
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
