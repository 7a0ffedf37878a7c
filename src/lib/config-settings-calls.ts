/**
 * Configuration definitions, part two: the ledger, caller verification and SIP, webhooks,
 * limits and overload, the Node.js process. Read after part one (config-settings-service.ts).
 */
import { choice, flag, suiObject, text, whole, type Setting } from './config-setting.ts'
import { defaultMaxConnections, oneOf, trustOrder, urlValue } from './config-values.ts'
import { sipSettings } from './sip-settings.ts'
import { SUI_NETWORKS } from './sui-networks.ts'

const LEDGER = 'Ledger'
const CALLERS = 'Caller verification'
const SIP = 'SIP redirect interface'
const WEBHOOKS = 'Events and webhooks'
const LIMITS = 'Limits, timeouts and overload'
const PROCESS = 'The Node.js process'

const network = (before: { suiNetwork?: keyof typeof SUI_NETWORKS }) => SUI_NETWORKS[before.suiNetwork!]

export const CALL_SETTINGS: Setting[] = [
  {
    name: 'LEDGER', section: LEDGER, ...choice('ledger', ['local', 'sui'], 'local'),
    description: '`local`: embedded ledger in the same database; `sui`: read Sui through GraphQL ([sui-ledger.md](sui-ledger.md))',
  },
  {
    name: 'SUI_NETWORK', section: LEDGER, values: '`mainnet` | `testnet`', default: '`testnet`',
    description: 'defaults for the Sui variables below ([domain.md](domain.md))',
    read: (env, name) => ({ suiNetwork: oneOf(env, name, ['mainnet', 'testnet'] as const, 'testnet') }),
  },
  {
    name: 'SUI_GRAPHQL_URL', section: LEDGER, values: 'URL (http, https)', default: 'per `SUI_NETWORK`',
    description: 'Sui GraphQL RPC endpoint (public endpoints are rate limited: use a paid provider in production)',
    read: (env, name, before) => ({ suiGraphqlUrl: urlValue(env, name, network(before).graphqlUrl, ['http:', 'https:'])! }),
  },
  {
    name: 'KNS_PACKAGE_ID', section: LEDGER, ...suiObject('knsPackageId', (b) => network(b).knsPackageId),
    description: '**original** ID of the KNS package: origin of the `kns::Kns` and `kns::ApprovalEvent` types (also the embedded ledger\'s types)',
  },
  {
    name: 'KNS_LATEST_PACKAGE_ID', section: LEDGER, ...suiObject('knsLatestPackageId', (b) => b.knsPackageId!, '`KNS_PACKAGE_ID`'),
    description: 'latest version of the KNS package: target of `kns::approve` calls from the approval page (set it after an upgrade)',
  },
  {
    name: 'SUI_KEYSTORE_PACKAGE_ID', section: LEDGER, ...suiObject('keystorePackageId', (b) => network(b).keystorePackageId),
    description: 'original ID of the keystore package: only its objects are keystores',
  },
  {
    name: 'SUI_MAP_PACKAGE_ID', section: LEDGER, ...suiObject('mapPackageId', (b) => network(b).mapPackageId),
    description: 'original ID of the map package (checked by `kns doctor` and at start)',
  },
  {
    name: 'SUI_ID_MAP_OBJECT_ID', section: LEDGER, ...suiObject('idMapObjectId', (b) => network(b).idMapObjectId),
    description: 'the shared ID map object (checked by `kns doctor` and at start)',
  },
  {
    name: 'SUI_ID_MAP_TABLE_ID', section: LEDGER, ...suiObject('idMapTableId', (b) => network(b).idMapTableId),
    description: 'the token -> keystores `Table` inside it (caller verification)',
  },
  { name: 'LEDGER_TIMEOUT_MS', section: LEDGER, ...whole('ledgerTimeoutMs', 10_000, 100, 120_000), description: 'deadline of every request to the Sui GraphQL service; past it, **503** `LEDGER_UNAVAILABLE`' },
  {
    name: 'LEDGER_FRESHNESS_MS', section: LEDGER, ...whole('ledgerFreshnessMs', 3_000, 0, 60_000),
    description: '`LEDGER=sui`: how long a decision re-reads a transaction not (yet) indexed or an owner that does not match before failing; 0 = off',
  },
  { name: 'LEDGER_CACHE_TTL_S', section: LEDGER, ...whole('ledgerCacheTtlS', 2, 0, 3600), description: 'how long a Sui object read may be reused' },
  {
    name: 'LEDGER_WATCH_INTERVAL_MS', section: LEDGER, ...whole('ledgerWatchIntervalMs', 1000, 50, 600_000),
    description: 'how often the ledger watcher reads the ledger\'s `ApprovalEvent`s once it has read them all ([events.md](events.md))',
  },

  {
    name: 'CALLER_TRUST', section: CALLERS, values: '`ledger`, `x5u`, or both in order', default: '`ledger,x5u`',
    description: 'where a call\'s key may come from, in the order tried ([shaken.md](shaken.md))',
    read: (env) => ({ callerTrust: trustOrder(env) }),
  },
  {
    name: 'STI_TRUST_ANCHORS', section: CALLERS, ...text('stiTrustAnchors', 'a PEM file or directory'),
    description: 'the STI-CA roots x5u certificates must chain to (besides those stored with `kns shaken trust add`)',
  },
  {
    name: 'STI_CRL', section: CALLERS, ...choice('stiCrl', ['off', 'soft', 'hard'], 'soft'),
    description: 'revocation of x5u leaves: `soft` fails only a revoked leaf, `hard` also when no current CRL can be had, `off`; a CRL counts when the leaf\'s issuer, a trust anchor or a CRL signer trusted with `kns shaken crl-signer add` signed it',
  },
  {
    name: 'STI_CERT_POLICY', section: CALLERS, ...choice('stiCertPolicy', ['off', 'warn', 'enforce'], 'enforce'),
    description: 'the SHAKEN certificate policy (2.16.840.1.114569.1.1.x, ATIS-1000080) in x5u leaves and intermediates: `enforce` refuses a path without it, `warn` reports it, `off` ([why enforce](shaken.md#the-checks-a-step-report-with-debug-true))',
  },
  { name: 'CALL_MAX_AGE_S', section: CALLERS, ...whole('callMaxAgeS', 60, 0, 86_400), description: 'oldest accepted PASSporT `iat` in seconds (RFC 8224); `0` = no age check' },
  {
    name: 'X5U_ALLOW_HTTP', section: CALLERS, ...flag('x5uAllowHttp'),
    description: '`true` lets x5u (and CRL) URLs be `http`: development and tests only (warned at start; `kns doctor --production` fails on it)',
  },
  {
    name: 'X5U_ALLOW_PRIVATE', section: CALLERS, ...flag('x5uAllowPrivate'),
    description: '`true` lets x5u (and CRL) URLs reach loopback/private addresses: development and tests only (warned at start; `kns doctor --production` fails on it)',
  },

  {
    name: 'SIP_LISTEN', section: SIP, values: '`host:port` (IP address; IPv6 `[::]:5060`)', default: 'unset (no SIP)',
    description: '`host:port` of the SIP redirect interface, UDP and TCP ([sip.md](sip.md))',
    read: (env) => ({ sip: sipSettings(env) }),
  },
  {
    name: 'SIP_TRUSTED_SOURCES', section: SIP, values: 'addresses and ranges (CIDR)', default: 'required with `SIP_LISTEN`', readBy: 'SIP_LISTEN',
    description: 'the SBC addresses and ranges (CIDR) it serves; others are dropped (`/0` is refused)',
  },
  {
    name: 'SIP_SIGNING_KEY', section: SIP, values: 'an API key id (16 hex digits)', default: 'unset (SIP signs nothing)', readBy: 'SIP_LISTEN',
    description: 'the id of the `signing` API key whose binding governs what SIP INVITEs may sign',
  },
  {
    name: 'SIP_BLOCK', section: SIP, values: '`failed`, `unverified`, both, or `off`', default: '`off`', readBy: 'SIP_LISTEN',
    description: '`failed` and/or `unverified` calls answered 603 Network Blocked (ATIS-1000099) instead of 302',
  },
  {
    name: 'SIP_REDRESS', section: SIP, values: '`https://...` | `tel:+E164` | `mailto:...`', default: 'unset; required with `SIP_BLOCK`', readBy: 'SIP_LISTEN',
    description: 'the redress contact a blocked call\'s answer names',
  },

  {
    name: 'WEBHOOK_ALLOW_PRIVATE', section: WEBHOOKS, ...flag('webhookAllowPrivate'),
    description: '`true` lets webhook URLs be `http` and reach loopback/private addresses: development and tests only (warned at start; `kns doctor --production` fails on it)',
  },
  { name: 'WEBHOOK_TIMEOUT_MS', section: WEBHOOKS, ...whole('webhookTimeoutMs', 10_000, 100, 60_000), description: 'deadline of one webhook delivery attempt (connect, send, answer)' },
  {
    name: 'WEBHOOK_RETRY_BASE_MS', section: WEBHOOKS, ...whole('webhookRetryBaseMs', 5000, 10, 3_600_000),
    description: 'first retry delay of a failed delivery; each next doubles (at most 4 h), with ±20 % jitter',
  },
  { name: 'WEBHOOK_GIVE_UP_AFTER_S', section: WEBHOOKS, ...whole('webhookGiveUpAfterS', 86_400, 1, 30 * 86_400), description: 'a delivery still failing this long after its event is marked failed' },
  {
    name: 'WEBHOOK_ENDPOINT_CONCURRENCY', section: WEBHOOKS, ...whole('webhookEndpointConcurrency', 4, 1, 1000),
    description: 'attempts in flight at once per subscription (over every process); endpoints are served round-robin, so one vendor\'s backlog or slow endpoint does not hold the others\'',
  },
  {
    name: 'WEBHOOK_BREAKER_FAILURES', section: WEBHOOKS, ...whole('webhookBreakerFailures', 5, 1, 1000),
    description: 'failed attempts in a row after which a subscription is paused (30 s, doubling per pause, at most 10 min), then probed one attempt at a time; nothing pending is given up while paused',
  },

  { name: 'PUBLIC_RATE_LIMIT', section: LIMITS, ...whole('publicRateLimit', 50, 0, 1_000_000), description: 'requests/s per client IP on endpoints without a key (0 = off)' },
  { name: 'DEFAULT_KEY_RATE', section: LIMITS, ...whole('defaultKeyRate', 100, 1, 1_000_000), description: 'requests/s for keys created without `--rate`, and each CAMARA client\'s budget on the CAMARA APIs (twice that as a burst)' },
  {
    name: 'REQUEST_TIMEOUT_MS', section: LIMITS, ...whole('requestTimeoutMs', 10_000, 100, 600_000),
    description: 'a whole request, headers and body, must arrive within this; a slower client gets **408** and the connection is closed (raise it for bulk uploads over slow links)',
  },
  {
    name: 'HEADERS_TIMEOUT_MS', section: LIMITS, ...whole('headersTimeoutMs', 5_000, 100, 600_000),
    description: 'a request\'s headers, and a new connection\'s first request, within this (idle or half-sent: **408**, closed). Checked every second',
  },
  {
    name: 'KEEP_ALIVE_TIMEOUT_MS', section: LIMITS, ...whole('keepAliveTimeoutMs', 72_000, 100, 600_000),
    description: 'an idle keep-alive connection is closed after this (longer than common load balancers\' 60 s idle timeout, so the balancer closes first)',
  },
  {
    name: 'KEEP_ALIVE_BUSY_MS', section: LIMITS, ...whole('keepAliveBusyMs', 5_000, 100, 600_000),
    description: 'idle keep-alive while more than half of `MAX_CONNECTIONS` are open (near the cap, idle connections are closed)',
  },
  {
    name: 'MAX_CONNECTIONS', section: LIMITS, ...whole('maxConnections', { text: '80 % of the descriptor limit − 100 (≤ 10 000; 1 000 where it cannot be read)', value: () => defaultMaxConnections() }, 1, 1_000_000),
    description: 'open client connections at most; past it a connection\'s request is answered 503 `OVERLOADED` and it is closed',
  },
  { name: 'MAX_CONNECTIONS_PER_IP', section: LIMITS, ...whole('maxConnectionsPerIp', 256, 1, 1_000_000), description: 'open connections per client address (a trusted proxy\'s own are not capped)' },
  {
    name: 'MAX_IN_FLIGHT', section: LIMITS, ...whole('maxInFlight', 64, 1, 100_000),
    description: 'requests worked on at once; more wait, by priority ([operations.md](operations.md#overload-what-is-shed-first))',
  },
  {
    name: 'MAX_IN_FLIGHT_PER_CLIENT', section: LIMITS, ...whole('maxInFlightPerClient', 0, 0, 100_000),
    description: 'of those, how many one client (its verified API key, else its address) may hold; its others wait their turn (0: half of `MAX_IN_FLIGHT`). A request holds its slot while its body arrives: without this, one address sending bodies slowly held every slot',
  },
  {
    name: 'MAX_REGISTRATIONS_IN_PROGRESS', section: LIMITS, ...whole('maxRegistrationsInProgress', 5, 1, 100_000),
    description: '`register-user-login` calls a process works on at once, from start to answer, four fifths of them for one client (its address group); one more is answered 503 `OVERLOADED` with `Retry-After` before its body is read, registered number or new alike ([operations.md](operations.md#overload-what-is-shed-first))',
  },
  { name: 'QUEUE_BUDGET_MS', section: LIMITS, ...whole('queueBudgetMs', 250, 0, 60_000), description: 'longest wait for a slot before 503 `OVERLOADED` with `Retry-After` (0: no waiting)' },
  {
    name: 'SHED_LAG_MS', section: LIMITS, ...whole('shedLagMs', 50, 0, 60_000),
    description: 'sustained event-loop lag (the least of five 10 ms samples) past which a client sending more than its share is shed before its request is parsed (0: never)',
  },

  {
    name: 'NODE_OPTIONS', section: PROCESS, values: 'Node.js options', default: '(none)', readBy: 'src/cli/node-flags.ts',
    description: '`kns serve` runs with `--max-semi-space-size=8` (a 2 x 8 MB young generation): started without it, the process re-executes itself with it (same pid, via `process.execve`). A value of your own, e.g. `NODE_OPTIONS=--max-semi-space-size=16`, wins. Why: [benchmarks.md](benchmarks.md#why-the-code-is-the-way-it-is)',
  },
  {
    name: 'UV_THREADPOOL_SIZE', section: PROCESS, values: '1-1024', default: 'CPU cores - 1 (at least 1)', readBy: 'src/lib/threadpool.ts',
    description: 'libuv thread pool, where ES256 call verification runs beside the event loop. Node\'s default of 4 oversubscribes small machines: on 2 cores, 4 threads measured 0.50 of the raw verify rate and a p99 of 11-17 ms at half the peak rate, 1 thread 0.64 and 5.6 ms. Read from the real environment only (not `.env`): it must be set before the pool starts',
  },
]
