import type { Config } from './config.ts'
import { ConfigError } from './errors.ts'
import type { Database } from './db/engine.ts'
import { migrate } from './db/migrations.ts'
import { openDatabase } from './db/open.ts'
import { getOrInitSetting, resolveServerSecret } from './db/settings.ts'
import { KeyDirectory } from './caller/key-directory.ts'
import { ChangeWatcher } from './db/change-signal.ts'
import { CALLER_TOPIC } from './identity/numbers.ts'
import { PhoneLinks } from './identity/phone-links.ts'
import { LEDGER_TOPIC, LocalLedger } from './ledger/local-ledger.ts'
import { ApiKeyAuthenticator } from './keys/api-keys.ts'
import { createLedger } from './ledger/create-ledger.ts'
import type { Ledger } from './ledger/ledger.ts'
import { createRateLimiter, type RateLimiter } from './lib/rate-limiter.ts'

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
  /** Phone number -> token link, cached for approvals (see PhoneLinks). */
  phoneLinks: PhoneLinks
  close(): Promise<void>
}

/**
 * zkLogin addresses depend on the issuer and client ID. The first values used are kept in
 * the database; starting later with different ones would silently give every user a new
 * wallet, so it is refused.
 */
async function pinZkLoginIdentity(db: Database, config: Config): Promise<void> {
  const pinned = await getOrInitSetting(db, 'zklogin_identity', () => JSON.stringify([config.zkLoginIssuer, config.zkLoginClientId]))
  const [issuer, clientId] = JSON.parse(pinned) as [string, string]
  if (issuer !== config.zkLoginIssuer || clientId !== config.zkLoginClientId) {
    throw new ConfigError(`ZKLOGIN_ISSUER/ZKLOGIN_CLIENT_ID differ from the values this database was created with ` +
      `(${issuer}, ${clientId}); changing them would change every user's zkAddress`)
  }
}

/** Safety net for the embedded ledger, whose changes are signalled anyway. */
const LOCAL_KEY_CACHE_TTL_MS = 5 * 60_000

export interface OpenOptions {
  ledger?: Ledger
  migrate?: boolean
  /** Listen for cross-process cache invalidations (servers: yes; one-shot CLI commands: no). */
  watchChanges?: boolean
}

export async function openService(config: Config, options: OpenOptions = {}): Promise<Service> {
  const db = openDatabase(config)
  try {
    if (options.migrate !== false) await migrate(db)
    const secret = await resolveServerSecret(db, config.knsSecret)
    await pinZkLoginIdentity(db, config)
    const ledger = options.ledger ?? createLedger(config, db)
    const rateLimiter = createRateLimiter(config.redisUrl)
    // Caches that other processes' writes invalidate need the change signal; a process that
    // does not watch (a one-shot CLI command) does not cache what it cannot invalidate.
    const changes = options.watchChanges === false ? null : new ChangeWatcher(db, [CALLER_TOPIC, LEDGER_TOPIC])
    const keyDirectory = new KeyDirectory(db, ledger, {
      ttlMs: ledger.kind === 'sui' ? config.ledgerCacheTtlS * 1000 : changes === null ? 0 : LOCAL_KEY_CACHE_TTL_MS,
    })
    const phoneLinks = new PhoneLinks(db)
    if (changes !== null) {
      keyDirectory.subscribe(changes)
      phoneLinks.subscribe(changes)
      if (ledger instanceof LocalLedger) ledger.subscribe(changes)
      await changes.start()
    }
    return {
      config, db, ledger, secret, rateLimiter, keyDirectory, phoneLinks,
      apiKeys: new ApiKeyAuthenticator(db),
      async close() {
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
