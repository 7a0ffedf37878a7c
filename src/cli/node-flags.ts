/**
 * The V8 settings `kns serve` runs with. V8 reads them only when the process starts, so a
 * server started without them re-executes itself with them (same pid, stdio and environment:
 * to a supervisor it is one process).
 *
 * A young generation of 2 x 8 MB instead of V8's 2 x 32 MB default on large machines: under
 * load a request's objects outlive a few milliseconds (they wait for the database or the
 * thread pool), so a big young generation holds megabytes of them at every collection, and
 * each scavenge took 10-35 ms to copy and promote them: every request in flight waited that
 * long. With 8 MB the scavenges average 1.7 ms and the process spends less CPU per request
 * (call verification on 2 cores: half-peak p99 24-38 ms -> 4.1 ms; docs/benchmarks.md).
 */
export const SERVER_NODE_FLAGS: readonly string[] = ['--max-semi-space-size=8']

/** V8 takes `--a-b` and `--a_b` alike. */
const flagName = (arg: string) => arg.split('=')[0]!.replaceAll('_', '-')

/** The flags of SERVER_NODE_FLAGS that neither the command line nor NODE_OPTIONS already set (an operator's own value wins). */
export function missingServerFlags(execArgv: readonly string[], nodeOptions: string | undefined): string[] {
  const given = new Set([...execArgv, ...(nodeOptions ?? '').split(/\s+/)].filter(Boolean).map(flagName))
  return SERVER_NODE_FLAGS.filter((flag) => !given.has(flagName(flag)))
}

/** Re-executes this process with the missing server flags; returns only when none is missing or the platform cannot (Windows: V8's defaults). */
export function ensureServerFlags(): void {
  // A cluster worker inherits the primary's flags, and must keep its IPC channel (no exec).
  if (process.env.KNS_WORKER === '1') return
  const missing = missingServerFlags(process.execArgv, process.env.NODE_OPTIONS)
  if (missing.length === 0 || typeof process.execve !== 'function') return
  try {
    process.execve(process.execPath, [process.execPath, ...missing, ...process.execArgv, ...process.argv.slice(1)], process.env)
  } catch {
    // The exec itself failed (e.g. a sandbox forbids it): serve with V8's defaults rather than not at all.
  }
}
