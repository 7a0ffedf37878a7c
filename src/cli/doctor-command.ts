/**
 * `kns doctor`: what this configuration will meet, checked before it serves anyone, reading
 * only (it pins and creates nothing): the database exists, answers and is migrated; what the
 * database pinned on its first start agrees with this configuration (the server secret, the
 * zkLogin issuer and client, the public URL), so that "all checks passed" means `kns serve`
 * starts; and (LEDGER=sui) the ledger answers and the configured packages, ID map and table are
 * what they should be. Exit 0 when all is well, 1 otherwise.
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

/**
 * What the first start pinned, against this configuration, as the server would judge it
 * (src/service.ts, src/db/settings.ts), read-only.
 */
async function pinnedChecks(db: Database, config: Config): Promise<LedgerCheck[]> {
  const checks: LedgerCheck[] = []
  try {
    await resolveServerSecret(db, config.knsSecret, { mayPin: false })
    checks.push({ name: 'server secret', ok: true, detail: config.knsSecret === undefined ? 'kept in the database (or made on the first start)' : 'KNS_SECRET matches the pinned one' })
  } catch (err) {
    checks.push({ name: 'server secret', ok: false, detail: err instanceof Error ? err.message : String(err) })
  }
  const identity = await getSetting(db, 'zklogin_identity')
  if (identity === undefined) {
    checks.push({ name: 'zkLogin identity', ok: true, detail: `not pinned yet: the first start pins ${config.zkLoginIssuer}, ${config.zkLoginClientId}` })
  } else {
    const [issuer, clientId] = JSON.parse(identity) as [string, string]
    const ok = (!config.zkLoginIssuerSet || config.zkLoginIssuer === issuer) && config.zkLoginClientId === clientId
    checks.push({ name: 'zkLogin identity', ok, detail: ok ? `${issuer}, ${clientId}`
      : `ZKLOGIN_ISSUER/ZKLOGIN_CLIENT_ID (${config.zkLoginIssuer}, ${config.zkLoginClientId}) differ from the pinned ${issuer}, ${clientId}: the server refuses to start (every zkAddress would change)` })
  }
  const kept = await getSetting(db, 'public_base_url')
  if (config.publicBaseUrlSet || kept === undefined || kept === config.publicBaseUrl) {
    checks.push({ name: 'public URL', ok: true, detail: kept !== undefined && kept !== config.publicBaseUrl
      ? `${config.publicBaseUrl} (changed from ${kept}: every process serving this database needs the new value)` : config.publicBaseUrl })
  } else {
    checks.push({ name: 'public URL', ok: false, detail: `PUBLIC_BASE_URL is not set and this database is served as ${kept}, not ${config.publicBaseUrl}: the server refuses to start; set PUBLIC_BASE_URL=${kept}` })
  }
  return checks
}

export async function doctorCommand(config: Config, out: Output): Promise<number> {
  const checks: LedgerCheck[] = []
  if (!databaseExists(config)) {
    checks.push({ name: 'database', ok: false, detail: `${describeDatabase(config)} does not exist yet: \`npm start\` (or \`kns migrate\`) creates it` })
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
    if (migrated) checks.push(...await pinnedChecks(db, config))
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
