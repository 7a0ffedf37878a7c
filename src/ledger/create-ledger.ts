import type { Config } from '../config.ts'
import type { Database } from '../db/engine.ts'
import type { Ledger } from './ledger.ts'
import { LocalLedger } from './local-ledger.ts'
import { SuiLedger } from './sui-ledger.ts'

export function createLedger(config: Config, db: Database): Ledger {
  if (config.ledger === 'local') return new LocalLedger(db, config.knsPackageId)
  return new SuiLedger({
    graphqlUrl: config.suiGraphqlUrl,
    knsPackageId: config.knsPackageId,
    knsLatestPackageId: config.knsLatestPackageId,
    keystorePackageId: config.keystorePackageId,
    mapPackageId: config.mapPackageId,
    idMapObjectId: config.idMapObjectId,
    idMapTableId: config.idMapTableId,
    cacheTtlS: config.ledgerCacheTtlS,
    timeoutMs: config.ledgerTimeoutMs,
    freshnessMs: config.ledgerFreshnessMs,
  })
}
