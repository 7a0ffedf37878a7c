import type { Config } from '../config.ts'

/** SIM_SWAP_MONITORED_DAYS's default: the period the answers cover when the operator sets none. */
export const DEFAULT_MONITORED_DAYS = 100

/**
 * The operator's monitored period in days (SIM_SWAP_MONITORED_DAYS): how far back SIM Swap and
 * Device Swap may answer, by law; older records are pruned. The one place the answers read it.
 */
export function monitoredDays(config: Config): number {
  const days = (config as Config & { simSwapMonitoredDays?: number }).simSwapMonitoredDays
  return typeof days === 'number' && days > 0 ? days : DEFAULT_MONITORED_DAYS
}
