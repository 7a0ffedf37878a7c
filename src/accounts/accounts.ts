import type { JsonWebKey } from 'node:crypto'
import type { Config } from '../config.ts'
import type { ChangeWatcher } from '../db/change-signal.ts'
import type { Database } from '../db/engine.ts'
import type { Ledger } from '../ledger/ledger.ts'
import type { ZkLoginProviders } from '../ledger/zklogin/verify-clear.ts'
import { SealedBox } from '../lib/sealed-box.ts'
import { Clients } from './clients.ts'
import { LoginCodes } from './login-codes.ts'
import { prove, type ProveRequest } from './prove.ts'
import { sweepExpired } from './provider-adapter.ts'
import { PairwiseSubjects } from './pairwise-subjects.ts'
import { LoginProvider } from './provider.ts'
import { saltFor } from './salt.ts'
import { SigningKeys, type PublicJwk } from './signing-keys.ts'
import { createSmsSender } from './sms/create-sms-sender.ts'
import type { SmsLogger, SmsSender } from './sms/sms-sender.ts'

/** How often expired protocol state and login codes past every limit window are deleted. */
const SWEEP_MS = 10 * 60_000

/** Published keys are re-read at most this often by the ledger's zkLogin check (a rotation signals anyway). */
const KEY_CACHE_MS = 5000

/**
 * The login provider area as the rest of the service sees it: signing keys, clients, the
 * provider itself, login codes and their SMS delivery, the salt service and the prover step.
 */
export class Accounts {
  readonly keys: SigningKeys
  readonly clients: Clients
  /** The pairwise `sub` of CAMARA three-legged clients (and the user behind one). */
  readonly subjects: PairwiseSubjects
  readonly provider: LoginProvider
  readonly codes: LoginCodes
  readonly sms: SmsSender
  readonly #config: Config
  readonly #secret: () => Buffer
  #log: SmsLogger = { info: () => {}, warn: () => {} }
  #published: { at: number; keys: PublicJwk[] } | undefined
  #sweeper: NodeJS.Timeout | undefined
  readonly #db: Database

  constructor(config: Config, db: Database, secret: () => Buffer) {
    this.#config = config
    this.#secret = secret
    this.#db = db
    const box = (purpose: string) => () => new SealedBox(secret(), purpose)
    this.keys = new SigningKeys(db, box('oidc-signing-keys'))
    this.clients = new Clients(db, box('oidc-client-secrets'), { clientId: config.zkLoginClientId, redirectUri: `${config.publicBaseUrl}/approve` })
    this.subjects = new PairwiseSubjects(secret)
    this.provider = new LoginProvider({ config, db, keys: this.keys, clients: this.clients, subjects: this.subjects, secret })
    // The server's logger arrives with the app (useLogger); until then nothing is sent anyway.
    const log: SmsLogger = { info: (o, m) => this.#log.info(o, m), warn: (o, m) => this.#log.warn(o, m) }
    this.sms = createSmsSender({
      delivery: config.smsDelivery, timeoutMs: config.smsTimeoutMs,
      ...(config.smppUrl === undefined ? {} : { smppUrl: config.smppUrl }),
      ...(config.smppSystemType === undefined ? {} : { smppSystemType: config.smppSystemType }),
      ...(config.smsFrom === undefined ? {} : { smsFrom: config.smsFrom }),
      ...(config.smsHttpUrl === undefined ? {} : { httpUrl: config.smsHttpUrl }),
      httpMethod: config.smsHttpMethod,
    }, log)
    this.codes = new LoginCodes({
      db, secret, sms: this.sms, host: new URL(config.publicBaseUrl).host,
      limits: {
        perNumber: config.loginSendsPerNumber, perNumberTotal: config.loginSendsPerNumberTotal, perIp: config.loginSendsPerIp, perPrefix: config.loginSendsPerPrefix,
        prefixDigits: config.loginPrefixDigits, cooldownS: config.loginResendCooldownS,
      },
      onDeliveryError: (err) => this.#log.warn({ err }, 'a login code could not be delivered'),
    })
  }

  useLogger(logger: SmsLogger): void {
    this.#log = logger
    this.provider.onRefused = (refused) => this.#log.info(refused, `login provider refused a ${refused.endpoint} request: ${refused.error}`)
  }

  /** What an operator must hear at start. */
  warnings(): string[] {
    const warnings: string[] = []
    // SMS_DELIVERY=log is a production finding (src/lib/production-checks.ts), warned with the others.
    if (this.#config.ledger === 'sui' && this.#config.zkLoginProverUrl === undefined) {
      warnings.push('LEDGER=sui without ZKLOGIN_PROVER_URL: owners cannot approve with their phone number (no zkLogin proofs)')
    }
    const issuer = new URL(this.#config.zkLoginIssuer)
    if (issuer.origin !== new URL(this.#config.publicBaseUrl).origin) {
      warnings.push(`ZKLOGIN_ISSUER ${this.#config.zkLoginIssuer} is not under PUBLIC_BASE_URL: its discovery and keys are served here at ` +
        `${issuer.pathname}; route ${issuer.origin}${issuer.pathname} to this server for relying parties and Sui to find them`)
    }
    return warnings
  }

  /** The embedded ledger's view of this provider: the one issuer it lists, and the keys it publishes. */
  zkLoginProviders(): ZkLoginProviders {
    return {
      lists: (iss) => iss === this.#config.zkLoginIssuer,
      jwk: async (iss, kid) => {
        if (iss !== this.#config.zkLoginIssuer) return null
        const now = Date.now()
        if (this.#published === undefined || now - this.#published.at > KEY_CACHE_MS || !this.#published.keys.some((k) => k.kid === kid)) {
          this.#published = { at: now, keys: await this.keys.published(now) }
        }
        return (this.#published.keys.find((k) => k.kid === kid) as JsonWebKey | undefined) ?? null
      },
    }
  }

  async start(changes: ChangeWatcher | null): Promise<void> {
    // A process that does not watch changes (a CLI command) reads every client afresh.
    if (changes !== null) this.clients.subscribe(changes)
    await this.provider.start(changes)
    // Reads ignore expired rows already; this only keeps the tables from growing. A failure (the database away) waits for the next round.
    this.#sweeper = setInterval(() => {
      void sweepExpired(this.#db).catch(() => {})
      void this.codes.sweep().catch(() => {})
    }, SWEEP_MS).unref()
  }

  salt(token: string): Promise<{ salt: string }> {
    return saltFor({ issuer: this.#config.zkLoginIssuer, keys: this.keys, clients: this.clients, secret: this.#secret }, token)
  }

  prove(ledger: Ledger, request: ProveRequest) {
    return prove({
      issuer: this.#config.zkLoginIssuer, keys: this.keys, clients: this.clients, ledger,
      proverUrl: this.#config.zkLoginProverUrl, proverTimeoutMs: this.#config.zkLoginProverTimeoutMs,
    }, request)
  }

  async close(): Promise<void> {
    this.provider.close()
    clearInterval(this.#sweeper)
    await this.sms.close()
  }
}
