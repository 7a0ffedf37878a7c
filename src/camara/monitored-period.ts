import type { Config } from '../config.ts'

/**
 * The operator's monitored period in days (SIM_SWAP_MONITORED_DAYS): how far back SIM Swap and
 * Device Swap may answer, by law; older records are pruned. The one place the answers read it.
 */
export function monitoredDays(config: Config): number {
  return config.simSwapMonitoredDays
}
