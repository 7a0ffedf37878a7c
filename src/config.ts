/**
 * The configuration: environment variables (and an optional .env), each defined once in
 * src/lib/config-settings-*.ts with what it takes, its default, what it does and its parser.
 * loadConfig reads them in order into a Config; docs/configuration.md is generated from the
 * same definitions (test/docs/configuration.test.ts).
 */
import { existsSync } from 'node:fs'
import type { Setting } from './lib/config-setting.ts'
import { CALL_SETTINGS } from './lib/config-settings-calls.ts'
import { SERVICE_SETTINGS } from './lib/config-settings-service.ts'
import type { Env } from './lib/config-values.ts'
import type { Config } from './lib/config-type.ts'

export type { Config } from './lib/config-type.ts'
export { SUI_NETWORKS, type SuiNetwork } from './lib/sui-networks.ts'
export { defaultMaxConnections, RESERVED_PATHS, trustProxySetting } from './lib/config-values.ts'

/** Every variable, in the order read and documented. */
export const SETTINGS: readonly Setting[] = [...SERVICE_SETTINGS, ...CALL_SETTINGS]

/** Reads `.env` (if present) without overriding variables already set in the environment. */
export function loadDotEnv(path = '.env'): void {
  if (existsSync(path)) process.loadEnvFile(path)
}

/** The configuration from this environment; a bad value throws a ConfigError naming its variable. */
export function loadConfig(env: Env = process.env): Config {
  const config: Partial<Config> = {}
  for (const setting of SETTINGS) {
    if (setting.read !== undefined) Object.assign(config, setting.read(env, setting.name, config))
  }
  return config as Config
}
