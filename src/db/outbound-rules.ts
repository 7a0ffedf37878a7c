import type { Config } from '../config.ts'
import type { Executor } from './engine.ts'

/**
 * The development switches of the outbound rules (WEBHOOK_ALLOW_PRIVATE, X5U_ALLOW_HTTP,
 * X5U_ALLOW_PRIVATE) as the server runs with them. A server records them at start; a CLI
 * command judges URLs with the recorded ones, not with its own environment, which may differ
 * (a second terminal without the server's variables): `kns webhook add` then accepts what the
 * server will deliver to and refuses what it will not, and `kns shaken credential add` takes
 * the x5u the server will fetch. Before any server has started, the CLI's own environment.
 */
export interface OutboundRules { webhookAllowPrivate: boolean; x5uAllowHttp: boolean; x5uAllowPrivate: boolean }

const SETTING = 'server_outbound_rules'

/** At a server's start: the switches it runs with (the last server started wins). */
export async function recordOutboundRules(db: Executor, config: Config): Promise<void> {
  const rules: OutboundRules = { webhookAllowPrivate: config.webhookAllowPrivate, x5uAllowHttp: config.x5uAllowHttp, x5uAllowPrivate: config.x5uAllowPrivate }
  await db.run('INSERT INTO settings (name, value) VALUES ($1, $2) ON CONFLICT (name) DO UPDATE SET value = excluded.value', [SETTING, JSON.stringify(rules)])
}

/** In a CLI command: the server's recorded switches replace the environment's (see above); returns them, or null when none is recorded. */
export async function adoptServerOutboundRules(db: Executor, config: Config): Promise<OutboundRules | null> {
  const row = await db.get<{ value: string }>('SELECT value FROM settings WHERE name = $1', [SETTING])
  if (row === undefined) return null
  const recorded = JSON.parse(row.value) as Partial<OutboundRules>
  const rules: OutboundRules = {
    webhookAllowPrivate: recorded.webhookAllowPrivate === true, x5uAllowHttp: recorded.x5uAllowHttp === true, x5uAllowPrivate: recorded.x5uAllowPrivate === true,
  }
  Object.assign(config, rules)
  return rules
}
