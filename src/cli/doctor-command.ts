/**
 * `kns doctor`: what this configuration will meet, checked before it serves anyone, reading
 * only (it pins and creates nothing): the database exists, answers and is migrated; what the
 * database pinned on its first start agrees with this configuration (the server secret, the
 * zkLogin issuer and client, the public URL), so that "all checks passed" means `kns serve`
 * starts; and (LEDGER=sui) the ledger answers and the configured packages, ID map and table are
 * what they should be. With --production, also what must not reach production, each with its
 * fix. Exit 0 when all is well, 1 otherwise.
 */
import type { Config } from '../config.ts'
import { schemaVersion } from '../db/migrations.ts'
import { MIGRATIONS } from '../migrations.ts'
import { openDatabase } from '../db/open.ts'
import { refuseTransactionPooler } from '../db/pooler-check.ts'
import { PostgresDatabase } from '../db/postgres.ts'
import { ConfigError } from '../errors.ts'
import { createLedger } from '../ledger/create-ledger.ts'
import { checkLedger, type LedgerCheck } from '../ledger/ledger.ts'
import type { Output } from './output.ts'
import type { Database } from '../db/engine.ts'
import { getSetting, resolveServerSecret } from '../db/settings.ts'
import { addressesHandedOut, pinDecision, pinnedFrom, readPinnedIdentity, type PinDecision } from '../identity/issuer-pin.ts'
import { activeDevelopmentKey } from '../keys/development-key.ts'
import { productionFindings, type ProductionFacts } from '../lib/production-checks.ts'
import { databaseExists, describeDatabase } from './database-location.ts'

/** Why the database did not answer, in words that say what to do. */
function databaseProblem(config: Config, err: unknown): string {
  const code = (err as { code?: unknown })?.code
  const message = err instanceof Error ? err.message : String(err)
  if (code === '3D000') {
    const name = decodeURIComponent(new URL(config.databaseUrl!).pathname.slice(1))
    return `${describeDatabase(config)}: the database "${name}" does not exist: create it (\`createdb ${name}\`, or CREATE DATABASE), then \`kns migrate\``
  }
  if (code === '28P01' || code === '28000') return `${describeDatabase(config)}: the server refused the credentials in DATABASE_URL (${message})`
  return `${describeDatabase(config)} unreachable: ${message}`
}

/** How the doctor was asked: `--production`, and whether PORT was given (see publicUrlCheck). */
export interface DoctorOptions {
  production: boolean
  /** PORT is set in this environment (or .env): the default public URL means something. */
  portGiven: boolean
}

/**
 * The public URL, as `kns serve` resolves it (resolvePublicBaseUrl in src/service.ts): set, it
 * is used; unset, a server's default (http://localhost:$PORT) must be the URL the database
 * keeps. Without PORT either, this environment says nothing of the port a server runs on (a
 * second terminal beside `PORT=... npm start`): the kept URL is the one in effect, as for any
 * CLI command, and the check says what a server started here would need.
 */
function publicUrlCheck(config: Config, kept: string | undefined, options: DoctorOptions): { check: LedgerCheck; inEffect: string } {
  if (config.publicBaseUrlSet || kept === undefined || kept === config.publicBaseUrl) {
    const detail = kept !== undefined && kept !== config.publicBaseUrl
      ? `${config.publicBaseUrl} (changed from ${kept}: every process serving this database needs the new value)` : config.publicBaseUrl
    return { check: { name: 'public URL', ok: true, detail }, inEffect: config.publicBaseUrl }
  }
  if (!options.portGiven) {
    return {
      check: { name: 'public URL', ok: true, detail: `${kept} (kept in the database; PUBLIC_BASE_URL and PORT are not set here: a server started with this environment needs PUBLIC_BASE_URL=${kept} or its port)` },
      inEffect: kept,
    }
  }
  return {
    check: { name: 'public URL', ok: false, detail: `PUBLIC_BASE_URL is not set and this database is served as ${kept}, not ${config.publicBaseUrl}: the server refuses to start; set PUBLIC_BASE_URL=${kept}` },
    inEffect: kept,
  }
}

/** The pinned zkLogin identity, judged as a start would (pinDecision, src/identity/issuer-pin.ts). */
function identityCheck(config: Config, decision: PinDecision): LedgerCheck {
  const name = 'zkLogin identity'
  switch (decision.kind) {
    case 'pin': return { name, ok: true, detail: `not pinned yet: the first start pins ${config.zkLoginIssuer}, ${config.zkLoginClientId}` }
    case 'keep': return { name, ok: true, detail: `${decision.issuer}, ${config.zkLoginClientId}` }
    case 'repin': return { name, ok: true, detail: `${decision.from}, ${config.zkLoginClientId}; the next start re-pins the issuer to ${decision.issuer} (PUBLIC_BASE_URL changed, no address handed out yet)` }
    case 'refuse': return { name, ok: false, detail: `${decision.message}: the server refuses to start` }
  }
}

/**
 * What the first start pinned, against this configuration, as the server would judge it
 * (src/service.ts, src/db/settings.ts), read-only; and with --production, what must not reach
 * production (src/lib/production-checks.ts, the findings a server warns of at start).
 */
async function pinnedChecks(db: Database, config: Config, options: DoctorOptions): Promise<LedgerCheck[]> {
  const checks: LedgerCheck[] = []
  try {
    await resolveServerSecret(db, config.knsSecret, { mayPin: false })
    checks.push({ name: 'server secret', ok: true, detail: config.knsSecret === undefined ? 'kept in the database (or made on the first start)' : 'KNS_SECRET matches the pinned one' })
  } catch (err) {
    checks.push({ name: 'server secret', ok: false, detail: err instanceof Error ? err.message : String(err) })
  }
  const kept = await getSetting(db, 'public_base_url')
  const pinned = await readPinnedIdentity(db)
  const decision = pinDecision(config, pinned, await pinnedFrom(db), pinned !== undefined && await addressesHandedOut(db))
  checks.push(identityCheck(config, decision))
  const url = publicUrlCheck(config, kept, options)
  checks.push(url.check)
  if (options.production) {
    const issuer = decision.kind === 'refuse' ? pinned!.issuer : decision.issuer
    const facts = { publicBaseUrl: url.inEffect, zkLoginIssuer: issuer, developmentKeyId: await activeDevelopmentKey(db) }
    checks.push(...productionChecks(config, facts))
  }
  return checks
}

/** A database with nothing pinned yet: what its first start would use. */
function unpinned(config: Config): ProductionFacts {
  return { publicBaseUrl: config.publicBaseUrl, zkLoginIssuer: config.zkLoginIssuer, developmentKeyId: null }
}

/** --production's findings as failed checks; "production" passed when there is none. */
function productionChecks(config: Config, facts: ProductionFacts): LedgerCheck[] {
  const findings = productionFindings(config, facts)
  if (findings.length === 0) return [{ name: 'production', ok: true, detail: 'nothing for development only' }]
  return findings.map((f) => ({ name: `production: ${f.name}`, ok: false, detail: f.detail }))
}

export async function doctorCommand(config: Config, out: Output, options: DoctorOptions = { production: false, portGiven: true }): Promise<number> {
  const checks: LedgerCheck[] = []
  if (!databaseExists(config)) {
    checks.push({ name: 'database', ok: false, detail: `${describeDatabase(config)} does not exist yet: \`npm start\` (or \`kns migrate\`) creates it` })
    if (options.production) checks.push(...productionChecks(config, unpinned(config)))
    return report(config, checks, out)
  }
  const db = openDatabase(config, 'tool')
  try {
    let migrated = false
    try {
      const readOnly = await db.ping() === 'read-only'
      const version = await schemaVersion(db)
      const latest = Math.max(...MIGRATIONS.map((m) => m.version))
      migrated = version > 0
      checks.push({ name: 'database', ok: version === latest && !readOnly, detail: readOnly
        ? `${db.engine}, schema version ${version}, read-only (a standby, or a primary during a failover): the server answers /readyz 503 until it reaches the primary`
        : version === latest
          ? `${db.engine}, schema version ${version}`
          : `${db.engine}, schema version ${version} of ${latest}: run \`kns migrate\` (the server migrates at start)` })
    } catch (err) {
      checks.push({ name: 'database', ok: false, detail: databaseProblem(config, err) })
    }
    if (migrated) checks.push(...await pinnedChecks(db, config, options))
    else if (options.production) checks.push(...productionChecks(config, unpinned(config)))
    if (migrated && db instanceof PostgresDatabase) {
      // What `kns serve` would refuse at start (pooler-check.ts).
      try {
        await refuseTransactionPooler(db)
        checks.push({ name: 'pooler', ok: true, detail: db.pooled ? 'DATABASE_URL pooled, DATABASE_DIRECT_URL reaches PostgreSQL' : 'no transaction pooler in the way' })
      } catch (err) {
        checks.push({ name: 'pooler', ok: false, detail: err instanceof ConfigError ? err.message : databaseProblem(config, err) })
      }
    }
    const ledger = createLedger(config, db)
    try {
      const report = await checkLedger(ledger)
      // The origin only: a provider's API key can be in the path or the query.
      if (report.unreachable !== undefined) checks.push({ name: 'ledger', ok: false, detail: `${new URL(config.suiGraphqlUrl).origin} cannot be asked: ${report.unreachable}` })
      checks.push(...report.checks)
    } finally {
      await ledger.close()
    }
  } finally {
    await db.close()
  }
  return report(config, checks, out)
}

function report(config: Config, checks: LedgerCheck[], out: Output): number {
  const ok = checks.every((c) => c.ok)
  const lines = checks.map((c) => `${c.ok ? 'ok  ' : 'FAIL'}  ${c.name}: ${c.detail}`)
  out.result({ ok, ledger: config.ledger, checks }, [...lines, ok ? 'all checks passed' : 'some checks failed'].join('\n'))
  return ok ? 0 : 1
}
