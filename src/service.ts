import type { Config } from './config.ts'
import { ConfigError } from './errors.ts'
import type { Database } from './db/engine.ts'
import { migrate } from './db/migrations.ts'
import { MIGRATIONS } from './migrations.ts'
import { openCheckedDatabase } from './db/open.ts'
import { adoptServerOutboundRules } from './db/outbound-rules.ts'
import { getOrInitSetting, getSetting, NO_SECRET_MESSAGE, NO_SECRET_YET, resolveServerSecret } from './db/settings.ts'
import { resolveIssuerPin } from './identity/issuer-pin.ts'
import { activeDevelopmentKey } from './keys/development-key.ts'
import { productionFindings } from './lib/production-checks.ts'
import { KeyDirectory } from './caller/key-directory.ts'
import { CertificateTrust } from './caller/shaken/certificate-trust.ts'
import { CallVerifier } from './caller/call-verifier.ts'
import { Credentials } from './caller/shaken/credentials.ts'
import { SealedBox } from './lib/sealed-box.ts'
import { ChangeWatcher } from './db/change-signal.ts'
import { PhoneLinks } from './identity/phone-links.ts'
import { DecisionWaiters } from './approvals/decision-waiters.ts'
import { LocalLedger } from './ledger/local-ledger.ts'
import { APPROVAL_TOPIC, TOPICS } from './db/change-topics.ts'
import { Events } from './events/events.ts'
import { ApiKeyAuthenticator } from './keys/api-keys.ts'
import { createLedger } from './ledger/create-ledger.ts'
import type { Ledger } from './ledger/ledger.ts'
import { createRateLimiter, type RateLimiter } from './lib/rate-limiter.ts'
import { Accounts } from './accounts/accounts.ts'
import { SwapRecords } from './swaps/swap-records.ts'
import { CamaraSubscriptions } from './camara/subscriptions/subscriptions.ts'
import { AddressWorkers } from './identity/address-workers.ts'

/** Everything a request handler or CLI command needs, opened once per process. */
export interface Service {
  config: Config
  db: Database
  ledger: Ledger
  /** Server secret: key for derived salts and hashes. Never logged, never returned. */
  secret: Buffer
  rateLimiter: RateLimiter
  apiKeys: ApiKeyAuthenticator
  /** Caller verification's number -> keys cache. */
  keyDirectory: KeyDirectory
  /** Caller verification's certificate side (x5u, trust anchors, CRLs). */
  certificateTrust: CertificateTrust
  /** STI-AS: the operator's signing credentials (keys opened with the server secret). */
  shakenCredentials: Credentials
  /** Call verification with this service's trust sources (every interface that verifies calls). */
  callVerifier: CallVerifier
  /** Phone number -> token link, cached for approvals (see PhoneLinks). */
  phoneLinks: PhoneLinks
  /** `transaction_details?wait=`: requests waiting for a decision, woken by the change signal. */
  decisionWaiters: DecisionWaiters
  /** Ledger watcher, expiry events and webhook deliveries; running once `events.start()` (servers). */
  events: Events
  /** The login provider: OpenID provider, clients and keys, login codes, salt and prover step (served by servers). */
  accounts: Accounts
  /** The SIM and device change records the operator reports (the SIM Swap and Device Swap answers' source). */
  swaps: SwapRecords
  /** CAMARA SIM Swap Subscriptions: told of every recorded change; their sweeper runs once `start()` (servers). */
  camaraSubscriptions: CamaraSubscriptions
  /** New registrations' zkLogin addresses, derived on a worker thread (started at the first one). */
  addressWorkers: AddressWorkers
  /** What an operator must hear at start (a server logs them as warnings). */
  warnings: string[]
  close(): Promise<void>
}

/**
 * Every process serving one database must sign approval messages for the same public URL
 * (`Service: <url>` is part of the signed text), or an approval signed through one process
 * fails on another. The URL last used is kept in the database:
 * - PUBLIC_BASE_URL set: it is used and kept; a change is reported (every process needs the new value).
 * - unset, in a server: the default (http://localhost:$PORT) is used only if it is the URL kept,
 *   or none is; a server whose default differs (another PORT, a second process on the same
 *   database) refuses to start rather than sign a message the other processes do not.
 * - unset, in a CLI command: the kept URL, so that what it signs verifies on the server.
 */
async function resolvePublicBaseUrl(db: Database, config: Config, role: 'server' | 'tool', warnings: string[]): Promise<void> {
  const kept = await getSetting(db, 'public_base_url')
  if (config.publicBaseUrlSet) {
    if (kept !== config.publicBaseUrl) {
      await db.run(`INSERT INTO settings (name, value) VALUES ($1, $2) ON CONFLICT (name) DO UPDATE SET value = excluded.value`,
        ['public_base_url', config.publicBaseUrl])
      if (kept !== undefined) {
        warnings.push(`PUBLIC_BASE_URL changed from ${kept} to ${config.publicBaseUrl}: every process serving this database must use the new value`)
      }
    }
    return
  }
  if (role === 'tool') {
    if (kept !== undefined) config.publicBaseUrl = kept
    return
  }
  const pinned = await getOrInitSetting(db, 'public_base_url', () => config.publicBaseUrl)
  if (pinned !== config.publicBaseUrl) {
    throw new ConfigError(`PUBLIC_BASE_URL is not set, and this database is served as ${pinned}, not ${config.publicBaseUrl} ` +
      `(another PORT, or a second process on the same database). Set PUBLIC_BASE_URL to the service's public URL, ` +
      `the same on every process (PUBLIC_BASE_URL=${pinned} to keep the current one)`)
  }
  // Unset is also a production finding (src/lib/production-checks.ts), warned with the others.
}

/** Safety net for the embedded ledger, whose changes are signalled anyway. */
const LOCAL_KEY_CACHE_TTL_MS = 5 * 60_000

export interface OpenOptions {
  ledger?: Ledger
  migrate?: boolean
  /** Listen for cross-process cache invalidations (servers: yes; one-shot CLI commands: no). */
  watchChanges?: boolean
  /** A server (the default) or a one-shot tool: see resolvePublicBaseUrl. */
  role?: 'server' | 'tool'
  /** Extra TLS roots for fetching x5u certificates and CRLs (tests' own PKI). */
  x5uTlsCa?: string
  /**
   * May this process generate the server secret and pin it (a server, or `kns seed`; default:
   * servers only)? A one-off command verifies against the pin and never chooses the secret.
   */
  pinSecret?: boolean
}

export async function openService(config: Config, options: OpenOptions = {}): Promise<Service> {
  const db = await openCheckedDatabase(config, options.role ?? 'server')
  try {
    if (options.migrate !== false) await migrate(db, MIGRATIONS)
    const resolved = await resolveServerSecret(db, config.knsSecret, { mayPin: options.pinSecret ?? (options.role ?? 'server') === 'server' })
    const warnings: string[] = []
    await resolveIssuerPin(db, config, options.role ?? 'server', warnings)
    await resolvePublicBaseUrl(db, config, options.role ?? 'server', warnings)
    if ((options.role ?? 'server') === 'server') {
      const facts = { publicBaseUrl: config.publicBaseUrl, zkLoginIssuer: config.zkLoginIssuer, developmentKeyId: await activeDevelopmentKey(db) }
      warnings.push(...productionFindings(config, facts).map((f) => f.detail))
    }
    // A CLI command judges outbound URLs as the server that will use them (src/db/outbound-rules.ts).
    if (options.role === 'tool') await adoptServerOutboundRules(db, config)
    const secret = (): Buffer => {
      if (resolved === NO_SECRET_YET) throw new ConfigError(NO_SECRET_MESSAGE)
      return resolved
    }
    const accounts = new Accounts(config, db, secret)
    const ledger = options.ledger ?? createLedger(config, db, { zkLoginProviders: accounts.zkLoginProviders() })
    const rateLimiter = createRateLimiter(config.redisUrl, config.redisCommandTimeoutMs)
    // Caches that other processes' writes invalidate need the change signal; a process that
    // does not watch (a one-shot CLI command) does not cache what it cannot invalidate.
    const changes = options.watchChanges === false ? null : new ChangeWatcher(db, [...TOPICS])
    const keyDirectory = new KeyDirectory(db, ledger, {
      ttlMs: ledger.kind === 'sui' ? config.ledgerCacheTtlS * 1000 : changes === null ? 0 : LOCAL_KEY_CACHE_TTL_MS,
    })
    const phoneLinks = new PhoneLinks(db)
    let certificateTrust: CertificateTrust
    try {
      certificateTrust = new CertificateTrust(db, {
        order: config.callerTrust, crlMode: config.stiCrl, policyMode: config.stiCertPolicy, allowHttp: config.x5uAllowHttp, allowPrivate: config.x5uAllowPrivate,
        ...(config.stiTrustAnchors === undefined ? {} : { anchorsPath: config.stiTrustAnchors }),
        ...(options.x5uTlsCa === undefined ? {} : { tlsCa: options.x5uTlsCa }),
      })
    } catch (err) {
      throw new ConfigError(err instanceof Error ? err.message : String(err))
    }
    const decisionWaiters = new DecisionWaiters()
    const events = new Events(config, db, ledger, secret)
    const shakenCredentials = new Credentials(db, () => new SealedBox(secret(), 'shaken-credentials'))
    const swaps = new SwapRecords(db, config.simSwapMonitoredDays)
    const camaraSubscriptions = new CamaraSubscriptions(config, db, events)
    const addressWorkers = new AddressWorkers(secret, { inProgress: config.maxRegistrationsInProgress })
    // A SIM change's `swapped` events are queued in the transaction that records it (the outbox).
    swaps.onRecorded(async (tx, recorded) => { await camaraSubscriptions.changesRecorded(tx, recorded) })
    if (changes !== null) {
      changes.on('change', (topic) => { if (topic === APPROVAL_TOPIC) events.decided() })
      keyDirectory.subscribe(changes)
      phoneLinks.subscribe(changes)
      certificateTrust.anchors.subscribe(changes)
      certificateTrust.crlSignerSet.subscribe(changes)
      shakenCredentials.subscribe(changes)
      decisionWaiters.subscribe(changes)
      if (ledger instanceof LocalLedger) ledger.subscribe(changes)
      await changes.start()
    }
    if ((options.role ?? 'server') === 'server') {
      await accounts.start(changes)
      warnings.push(...accounts.warnings())
    }
    return {
      config, db, ledger, rateLimiter, keyDirectory, certificateTrust, shakenCredentials, phoneLinks,
      callVerifier: new CallVerifier(keyDirectory, certificateTrust, config), decisionWaiters, events, warnings, accounts, swaps, camaraSubscriptions, addressWorkers,
      get secret(): Buffer {
        return secret()
      },
      apiKeys: new ApiKeyAuthenticator(db),
      async close() {
        swaps.stop()
        await camaraSubscriptions.stop()
        await events.stop()
        await accounts.close()
        await addressWorkers.close()
        await changes?.close()
        await ledger.close()
        await rateLimiter.close()
        await db.close()
      },
    }
  } catch (err) {
    await db.close().catch(() => {})
    throw err
  }
}
