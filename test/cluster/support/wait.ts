/**
 * Waiting for a part of the cluster to be ready: poll a probe until it says so, or fail at a
 * deadline with what the probe last saw and the part's log.
 */
import type { HostProcess } from './hosts.ts'

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

export interface WaitOptions {
  timeoutMs: number
  intervalMs?: number
  /** Processes whose exit means it will never be ready, and whose logs explain a failure. */
  processes?: HostProcess[]
  /** More to say on failure (a status page, a cluster view). */
  diagnostics?: () => Promise<string> | string
}

/**
 * Polls `probe` until it returns a value other than undefined (the value is returned). A probe
 * that throws counts as "not yet"; its last error is part of the failure message.
 */
export async function waitFor<T>(what: string, probe: () => Promise<T | undefined>, options: WaitOptions): Promise<T> {
  const deadline = Date.now() + options.timeoutMs
  let last = 'no answer yet'
  for (;;) {
    const dead = options.processes?.find((p) => !p.running())
    if (dead !== undefined) throw new Error(`${what}: ${dead.name} on ${dead.host.name} exited\n${await explain(options)}`)
    try {
      const value = await probe()
      if (value !== undefined) return value
      last = 'not ready'
    } catch (err) {
      last = err instanceof Error ? err.message : String(err)
    }
    if (Date.now() >= deadline) throw new Error(`${what}: not ready after ${options.timeoutMs / 1000} s (last: ${last})\n${await explain(options)}`)
    await sleep(options.intervalMs ?? 200)
  }
}

async function explain(options: WaitOptions): Promise<string> {
  const parts: string[] = []
  if (options.diagnostics !== undefined) {
    try {
      parts.push(await options.diagnostics())
    } catch (err) {
      parts.push(`(diagnostics failed: ${err instanceof Error ? err.message : String(err)})`)
    }
  }
  for (const p of options.processes ?? []) parts.push(`--- ${p.name} on ${p.host.name} (${p.logFile}), last lines:\n${p.tail()}`)
  return parts.join('\n')
}

/** GET `url` with a short timeout: the status and the body as text, or the network error thrown. */
export async function httpGet(url: string, timeoutMs = 2000): Promise<{ status: number; text: string }> {
  const res = await fetch(url, { signal: AbortSignal.timeout(timeoutMs) })
  return { status: res.status, text: await res.text() }
}
