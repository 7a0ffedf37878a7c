/**
 * Configuration definitions, part one: the server, the database, identity and login, approvals.
 * Read in this order (a default may follow a setting above it); docs/configuration.md is
 * generated from them (test/docs/configuration.test.ts).
 */
import { ConfigError } from '../errors.ts'
import { choice, link, text, whole, type Setting } from './config-setting.ts'
import type { Config } from './config-type.ts'
import { given, issuerValue, listenAddress, trustProxySetting, urlValue, wholeNumber } from './config-values.ts'
import { claimProblem, ZKLOGIN_LIMITS } from './zklogin-limits.ts'

const SERVER = 'Server'
const DATABASE = 'Database and shared state'
const IDENTITY = 'Identity and phone-number login'
const APPROVALS = 'Approvals'

/** The URL of an SMS gateway, required when SMS_DELIVERY names that gateway. */
function smsGatewayUrl(field: 'smppUrl' | 'smsHttpUrl', protocols: string[], delivery: Config['smsDelivery'], missing: string): Setting['read'] {
  return (env, name, before) => {
    const value = urlValue(env, name, undefined, protocols)
    if (before.smsDelivery === delivery && value === undefined) throw new ConfigError(missing)
    return { [field]: value }
  }
}

export const SERVICE_SETTINGS: Setting[] = [
  { name: 'PORT', section: SERVER, ...whole('port', 8080, 0, 65535), description: 'the HTTP port of the API and the web pages' },
  {
    name: 'HOST', section: SERVER, values: 'an address', default: '`127.0.0.1`',
    description: 'listen address: loopback by default (a first start prints a development key with every scope); `0.0.0.0` for every interface (containers, a proxy on another host)',
    // Loopback unless asked: a first `npm start` prints a key with every scope, and must not
    // offer it to the network.
    read: (env) => ({ host: env.HOST || '127.0.0.1' }),
  },
  {
    name: 'PUBLIC_BASE_URL', section: SERVER, values: 'URL (http, https)', default: '`http://localhost:$PORT`',
    description: 'public origin; approval URLs are `$PUBLIC_BASE_URL/approve?ref=<approvalNumber>`, and signed approval messages name it, so every process serving one database must use the same value. ' +
      'The value in use is kept in the database: unset, a server whose default differs from it (another `PORT`, a second process) **refuses to start** and names the URL to set; ' +
      'a CLI command (`kns doctor` included) uses the kept URL; a new explicit value replaces it (with a warning). Unset, the server warns at start. ' +
      'Production: https and a public name (`kns doctor --production`)',
    read: (env, name, before) => ({
      publicBaseUrl: urlValue(env, name, `http://localhost:${before.port}`, ['http:', 'https:'])!.replace(/\/+$/, ''),
      publicBaseUrlSet: given(env, name) !== undefined,
    }),
  },
  {
    name: 'WORKERS', section: SERVER, values: '1-256 | `auto`', default: '`1`', readBy: 'src/cli/workers.ts',
    description: 'server processes on the port (`kns serve --workers` wins; `auto`: one per core); PostgreSQL only ([operations.md](operations.md#several-processes))',
  },
  {
    name: 'METRICS_LISTEN', section: SERVER, values: '`[host:]port` (IPv6: `[::1]:9464`)', default: 'unset (`/metrics` on the public port)',
    description: '`/metrics` on a listener of its own, and then only there; without a host, `HOST`\'s. Unset, `/metrics` is served on the public port: block it at the proxy ([operations.md](operations.md#metrics)); `kns doctor --production` fails on it',
    read: (env, name, before) => ({ metricsListen: listenAddress(env, name, before.host!) }),
  },
  {
    name: 'TRUST_PROXY', section: SERVER, values: '`false` | hops (0-10) | addresses and ranges', default: '`false`',
    description: 'behind reverse proxies: their number (`1` for one load balancer: the client is the address it appended to `X-Forwarded-For`) or their addresses and ranges (`10.0.0.0/8,192.0.2.7`, `loopback`, `linklocal`, `uniquelocal`); the client address so derived is what limits and logs use. `true` is refused (it would believe any client\'s header)',
    read: (env) => ({ trustProxy: trustProxySetting(env.TRUST_PROXY) }),
  },
  {
    name: 'HSTS_MAX_AGE_S', section: SERVER, ...whole('hstsMaxAgeS', 31_536_000, 0, 63_072_000),
    description: '`Strict-Transport-Security: max-age=<n>` on every answer when `PUBLIC_BASE_URL` is https; `0`: none (let the proxy send it)',
  },
  {
    name: 'LOG_LEVEL', section: SERVER, ...choice('logLevel', ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'], 'info'),
    description: 'pino level (`silent` to mute)',
  },
  {
    name: 'LOG_FORMAT', section: SERVER, ...choice('logFormat', ['auto', 'json', 'pretty'], 'auto'),
    description: 'how log lines are written: `auto` readable (pino-pretty) when stdout is a terminal, JSON lines otherwise (a container, systemd, a pipe); `json` and `pretty` force one',
  },

  { name: 'DATA_DIR', section: DATABASE, values: 'a directory', default: '`./data`', description: 'embedded database directory (`$DATA_DIR/kns.db`, SQLite WAL)', read: (env) => ({ dataDir: env.DATA_DIR || './data' }) },
  { name: 'DATABASE_URL', section: DATABASE, ...link('databaseUrl', ['postgres:', 'postgresql:']), description: '`postgres://...` selects PostgreSQL instead of SQLite' },
  {
    name: 'DATABASE_DIRECT_URL', section: DATABASE, values: 'URL (postgres, postgresql)', default: 'unset',
    description: 'with PgBouncer (transaction mode) at `DATABASE_URL`: PostgreSQL itself, for LISTEN and the leader locks; the pool then sends no named prepared statements. Through a transaction pooler without it the service refuses to start ([operations.md](operations.md#pgbouncer))',
    read: (env, name, before) => {
      const databaseDirectUrl = urlValue(env, name, undefined, ['postgres:', 'postgresql:'])
      if (databaseDirectUrl !== undefined && before.databaseUrl === undefined) {
        throw new ConfigError('DATABASE_DIRECT_URL is set but DATABASE_URL is not: DATABASE_URL is the pooled connection (PgBouncer), DATABASE_DIRECT_URL the direct one beside it')
      }
      return { databaseDirectUrl }
    },
  },
  {
    name: 'DATABASE_CONNECT_TIMEOUT_MS', section: DATABASE, ...whole('databaseConnectTimeoutMs', 5000, 1, 3_600_000),
    description: 'PostgreSQL: longest wait for a connection (a free one from the pool, or a new one opened and started); past it the request answers **503** `DATABASE_UNAVAILABLE`. node-postgres would wait forever. While PostgreSQL is down, connections are refused at once, so requests fail in milliseconds, and the service recovers by itself when it is back (tested: `test/faults/postgres-outage.test.ts`)',
  },
  {
    name: 'DATABASE_QUERY_TIMEOUT_MS', section: DATABASE, values: '0-3600000', default: '`30000` in `kns serve`; none in CLI commands',
    description: 'PostgreSQL: longest wait for the answer to one statement (client side, `query_timeout`); past it the connection is dropped and the request answers **503** `DATABASE_UNAVAILABLE`. Bounds the wait on a server that accepts connections but answers nothing (frozen, overloaded, network partition): a request waits at most about twice this plus twice the connect timeout (behind a stuck statement, for a connection, then for its own statement). CLI commands (`kns stats import`, `kns migrate`, ...) wait as long as their statements take unless it is set. `0` = no limit. `/readyz` waits at most 2 s whatever the value',
    read: (env, name) => ({ databaseQueryTimeoutMs: given(env, name) === undefined ? undefined : wholeNumber(env, name, 0, 0, 3_600_000) }),
  },
  {
    name: 'APPROVAL_COMMIT', section: DATABASE, ...choice('approvalCommit', ['async', 'sync'], 'async'),
    description: 'PostgreSQL: `async` commits a new approval without waiting for the disk, through a pool of its own (up to 4 more connections per process, `application_name` `kns-async`, shared with the webhook worker\'s bookkeeping); a database crash within ~0.6 s can lose it, see [design/storage.md](design/storage.md#durability). `sync` waits, as the other writes do. No effect on SQLite, whose commits do not wait for the disk',
  },
  {
    name: 'RETENTION_DAYS', section: DATABASE, ...whole('retentionDays', 90, 0, 36_500),
    description: 'finished webhook deliveries, events with no delivery left, ledger feed rows the watcher has read and ended CAMARA subscriptions are deleted after this many days (hourly in the server, or `kns prune`); `0` keeps everything',
  },
  {
    name: 'SIM_SWAP_MONITORED_DAYS', section: DATABASE, ...whole('simSwapMonitoredDays', 100, 1, 3650),
    description: 'the operator\'s monitored period for SIM Swap and Device Swap: how far back a change may be answered (as the law where it operates allows). ' +
      'SIM and device change records older than this are deleted (hourly in the server, or `kns prune` / `kns sim-changes prune`); a change reported older than this only makes its line known (docs/camara.md). ' +
      'The default, 100 days (2400 hours), is the longest `maxAge` CAMARA\'s SIM Swap takes',
  },
  { name: 'REDIS_URL', section: DATABASE, ...link('redisUrl', ['redis:', 'rediss:']), description: '`redis://...`: share the rate limits between processes' },
  {
    name: 'REDIS_COMMAND_TIMEOUT_MS', section: DATABASE, ...whole('redisCommandTimeoutMs', 250, 1, 60_000),
    description: 'with `REDIS_URL`: longest wait for Redis per rate-limit decision. While Redis is unreachable, not yet connected, or past this timeout, decisions are taken by an in-process limiter with the same rates (so N processes allow up to N x the rate; never fail-open), one request a second tries Redis again, and nothing queues for it; back to the shared limits once Redis answers. Each switch is logged once (warning); `/metrics` has `kns_rate_limiter_fallback` (1 while in process) and `kns_rate_limiter_fallback_decisions_total{result="allowed"|"limited"}` (tested: `test/faults/redis-outage.test.ts`)',
  },

  {
    name: 'KNS_SECRET', section: IDENTITY, values: 'at least 32 bytes', default: 'generated',
    description: 'server secret: derives every zkLogin salt and the statistics client hashes. If unset, 32 random bytes are generated on first start and kept in the database (then the database backup is a copy of it; `kns doctor --production` fails on it). **Pinned**: the database keeps a fingerprint of the first secret, and a start with another one (changed, set where it was generated, or unset where it was set) is refused, since it would give every user a new wallet',
    read: (env, name) => {
      const knsSecret = env[name] === '' ? undefined : env[name]
      if (knsSecret !== undefined && Buffer.byteLength(knsSecret) < 32) {
        throw new ConfigError('KNS_SECRET must be at least 32 bytes (e.g. `openssl rand -hex 32`)')
      }
      return { knsSecret }
    },
  },
  {
    name: 'ZKLOGIN_ISSUER', section: IDENTITY, values: 'URL (https; http for development) with a path', default: 'the pinned one; on a new database `$PUBLIC_BASE_URL/oidc`',
    description: 'the OpenID issuer of every zkLogin address: this service\'s own provider, served at the issuer\'s path ([accounts.md](accounts.md)); at most 156 characters, no character JSON escapes. **Pinned** on the first start (see [Pinned settings](#pinned-settings))',
    read: (env, name, before) => {
      const set = given(env, name)
      return { zkLoginIssuer: issuerValue(set ?? `${before.publicBaseUrl}/oidc`, set !== undefined ? name : 'PUBLIC_BASE_URL + /oidc'), zkLoginIssuerSet: set !== undefined }
    },
  },
  {
    name: 'ZKLOGIN_CLIENT_ID', section: IDENTITY, values: 'text', default: '`kns`',
    description: 'the built-in OpenID client (the audience of every zkAddress; the approval page\'s); at most 145 characters. **Pinned** like the issuer',
    read: (env, name) => {
      const zkLoginClientId = env[name] || 'kns'
      const problem = claimProblem(name, zkLoginClientId, ZKLOGIN_LIMITS.aud)
      if (problem !== null) throw new ConfigError(problem)
      return { zkLoginClientId }
    },
  },
  {
    name: 'ZKLOGIN_PROVER_URL', section: IDENTITY, ...link('zkLoginProverUrl', ['http:', 'https:']),
    description: 'Mysten\'s zkLogin prover API (`POST`, the `/v1` request): proofs for `LEDGER=sui`. Unset with `LEDGER=sui`: owners cannot approve with their phone number (warned at start). The embedded ledger needs none',
  },
  { name: 'ZKLOGIN_PROVER_TIMEOUT_MS', section: IDENTITY, ...whole('zkLoginProverTimeoutMs', 30_000, 1000, 300_000), description: 'deadline of one proof request; past it **503** `PROVER_UNAVAILABLE`' },
  {
    name: 'SMS_DELIVERY', section: IDENTITY, ...choice('smsDelivery', ['log', 'smpp', 'http'], 'log'),
    description: 'how login codes reach phones: `log` (development: written to the server log, warned at start; `kns doctor --production` fails on it), `smpp` (the operator\'s SMSC), `http` (an HTTP gateway such as Kannel)',
  },
  {
    name: 'SMPP_URL', section: IDENTITY, values: 'URL (smpp, ssmpp)', default: 'unset',
    description: '`SMS_DELIVERY=smpp`: `smpp://system_id:password@host:2775` (`ssmpp://` for TLS)',
    read: smsGatewayUrl('smppUrl', ['smpp:', 'ssmpp:'], 'smpp', 'SMS_DELIVERY=smpp needs SMPP_URL (smpp://system_id:password@host:2775)'),
  },
  { name: 'SMPP_SYSTEM_TYPE', section: IDENTITY, ...text('smppSystemType'), default: 'empty', description: 'the SMPP bind\'s system_type, if the SMSC wants one' },
  { name: 'SMS_FROM', section: IDENTITY, ...text('smsFrom'), description: 'the sender ID: `+number`, a short code, or up to 11 letters and digits' },
  {
    name: 'SMS_HTTP_URL', section: IDENTITY, values: 'URL (http, https)', default: 'unset',
    description: '`SMS_DELIVERY=http`: the gateway URL with its fixed parameters, e.g. `http://kannel:13013/cgi-bin/sendsms?username=kns&password=...`; `to` and `text` are added',
    read: smsGatewayUrl('smsHttpUrl', ['http:', 'https:'], 'http', 'SMS_DELIVERY=http needs SMS_HTTP_URL (e.g. Kannel\'s http://host:13013/cgi-bin/sendsms?username=..&password=..)'),
  },
  {
    name: 'SMS_HTTP_METHOD', section: IDENTITY, values: '`GET` | `POST`', default: '`GET`',
    description: '`SMS_DELIVERY=http`: `GET` with `to` and `text` in the query (Kannel\'s `sendsms`), or `POST` as a form',
    read: (env, name) => {
      const smsHttpMethod = (env[name] || 'GET').toUpperCase()
      if (smsHttpMethod !== 'GET' && smsHttpMethod !== 'POST') throw new ConfigError(`SMS_HTTP_METHOD must be GET or POST, got ${JSON.stringify(env[name])}`)
      return { smsHttpMethod }
    },
  },
  { name: 'SMS_TIMEOUT_MS', section: IDENTITY, ...whole('smsTimeoutMs', 10_000, 100, 120_000), description: 'deadline of one SMS send (and of an SMPP bind)' },
  { name: 'LOGIN_SENDS_PER_NUMBER', section: IDENTITY, ...whole('loginSendsPerNumber', 5, 1, 1000), description: 'login codes sent to one number from one client address (an IPv6 /64) per hour' },
  {
    name: 'LOGIN_SENDS_PER_NUMBER_TOTAL', section: IDENTITY, ...whole('loginSendsPerNumberTotal', 20, 1, 100_000),
    description: 'login codes sent to one number from all addresses per hour, except to an address that logged in to it ([accounts.md](accounts.md))',
  },
  {
    name: 'LOGIN_SENDS_PER_IP', section: IDENTITY, ...whole('loginSendsPerIp', 20, 1, 1_000_000),
    description: 'login code texts sent for one client address (an IPv6 /64) per hour (a number without an account is not texted, not counted)',
  },
  {
    name: 'LOGIN_SENDS_PER_PREFIX', section: IDENTITY, ...whole('loginSendsPerPrefix', 200, 1, 10_000_000),
    description: 'login code texts sent to numbers sharing the first `LOGIN_PREFIX_DIGITS` digits per hour (SMS pumping)',
  },
  { name: 'LOGIN_PREFIX_DIGITS', section: IDENTITY, ...whole('loginPrefixDigits', 7, 2, 15), description: 'digits (country code included) that make a number\'s prefix' },
  {
    name: 'LOGIN_RESEND_COOLDOWN_S', section: IDENTITY, ...whole('loginResendCooldownS', 30, 0, 3600),
    description: 'seconds before another code may be sent to the same number from the same client address',
  },

  { name: 'APPROVAL_TTL_S', section: APPROVALS, ...whole('approvalTtlS', 900, 1, 30 * 24 * 3600), description: 'seconds until a pending approval expires' },
  {
    name: 'WAIT_MAX_S', section: APPROVALS, ...whole('waitMaxS', 60, 0, 60),
    description: 'the longest `transaction_details?wait=` honoured, in seconds; a longer one is shortened to it (keep it under a proxy\'s read timeout)',
  },
]

