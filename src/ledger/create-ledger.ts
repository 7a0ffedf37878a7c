import type { Config } from '../config.ts'
import type { Database } from '../db/engine.ts'
import type { Ledger } from './ledger.ts'
import { withLedgerSpans } from './ledger-spans.ts'
import { LocalLedger } from './local-ledger.ts'
import { SuiLedger } from './sui-ledger.ts'
import type { ZkLoginProviders } from './zklogin/verify-clear.ts'

/** `zkLoginProviders`: the OpenID providers the embedded ledger verifies zkLogin signatures of (Sui lists its own). */
export function createLedger(config: Config, db: Database, options: { zkLoginProviders?: ZkLoginProviders } = {}): Ledger {
  // With tracing, a span per read (ledger-spans.ts).
  if (config.ledger === 'local') return withLedgerSpans(new LocalLedger(db, config.knsPackageId, options.zkLoginProviders === undefined ? {} : { zkLoginProviders: options.zkLoginProviders }))
  return withLedgerSpans(new SuiLedger({
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
  }))
}
