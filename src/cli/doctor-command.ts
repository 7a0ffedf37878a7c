/**
 * `kns doctor`: what this configuration will meet, checked before it serves anyone: the
 * database answers and is migrated, and (LEDGER=sui) the ledger answers and the configured
 * packages, ID map and table are what they should be. Exit 0 when all is well, 1 otherwise.
 */
import type { Config } from '../config.ts'
import { schemaVersion } from '../db/migrations.ts'
import { MIGRATIONS } from '../migrations.ts'
import { openDatabase } from '../db/open.ts'
import { createLedger } from '../ledger/create-ledger.ts'
import { checkLedger, type LedgerCheck } from '../ledger/ledger.ts'
import type { Output } from './output.ts'

export async function doctorCommand(config: Config, out: Output): Promise<number> {
  const checks: LedgerCheck[] = []
  const db = openDatabase(config, 'tool')
  try {
    try {
      await db.ping()
      const version = await schemaVersion(db)
      const latest = Math.max(...MIGRATIONS.map((m) => m.version))
      checks.push({ name: 'database', ok: version === latest, detail: version === latest
        ? `${db.engine}, schema version ${version}`
        : `${db.engine}, schema version ${version} of ${latest}: run \`kns migrate\` (the server migrates at start)` })
    } catch (err) {
      checks.push({ name: 'database', ok: false, detail: `${db.engine} unreachable: ${err instanceof Error ? err.message : String(err)}` })
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
  const ok = checks.every((c) => c.ok)
  const lines = checks.map((c) => `${c.ok ? 'ok  ' : 'FAIL'}  ${c.name}: ${c.detail}`)
  out.result({ ok, ledger: config.ledger, checks }, [...lines, ok ? 'all checks passed' : 'some checks failed'].join('\n'))
  return ok ? 0 : 1
}
