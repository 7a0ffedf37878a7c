/**
 * An open-loop load generator at a steady rate, for latency at a given load.
 *
 * autocannon's `overallRate` is not one: each connection sends its per-second quota
 * back-to-back as soon as its one-second window opens (all windows open together), so at
 * "half the peak rate" the server runs flat out for half of every second and idles the
 * other half; and its coordinated-omission correction uses an expected interval of
 * ceil(1 / rate) = 1 ms, so a response taking L ms is recorded L times (L, L-1, ... 1 ms),
 * which weights the tail by its own length.
 *
 * Here request i is sent at start + i / rate, spread evenly, whether or not earlier ones
 * have been answered (waiting for a free socket counts in its latency). Latency runs from
 * when it was sent: on a shared machine this process is itself descheduled at times, and
 * timing from the due time would charge that to the server (a late tick sends the overdue
 * requests at once, so they still load it).
 */
import { Agent, request } from 'node:http'
import type { Summary } from './api.bench.ts'

export interface PacedOptions {
  port: number
  /** Requests per second. */
  rate: number
  seconds: number
  /** Keep-alive sockets at most; requests beyond them queue (and their wait counts). */
  sockets: number
  method: string
  headers: Record<string, string>
  next(): { path: string; body?: string }
  ok(body: string): boolean
}

export interface PacedResult {
  sent: number
  /** Milliseconds from sending to the end of the response, for 2xx responses. */
  latencies: number[]
  statuses: Record<string, number>
  badBodies: number
  errors: number
  seconds: number
  /** Server CPU time meanwhile, µs, when the caller measured it. */
  cpuUs?: number
}

export async function paced(opts: PacedOptions): Promise<PacedResult> {
  const agent = new Agent({ keepAlive: true, maxSockets: opts.sockets })
  const result: PacedResult = { sent: 0, latencies: [], statuses: {}, badBodies: 0, errors: 0, seconds: opts.seconds }
  const total = Math.round(opts.rate * opts.seconds)
  const interval = 1000 / opts.rate
  let done = 0
  let finish!: () => void
  const finished = new Promise<void>((resolve) => { finish = resolve })
  const settle = () => { if (++done === total) finish() }

  const fire = () => {
    const sentAt = performance.now()
    const { path, body } = opts.next()
    const req = request({ agent, host: '127.0.0.1', port: opts.port, method: opts.method, path, headers: opts.headers, timeout: 10_000 }, (res) => {
      const chunks: Buffer[] = []
      res.on('data', (chunk: Buffer) => chunks.push(chunk))
      res.on('end', () => {
        const code = String(res.statusCode)
        result.statuses[code] = (result.statuses[code] ?? 0) + 1
        if (code.startsWith('2')) {
          result.latencies.push(performance.now() - sentAt)
          if (!opts.ok(Buffer.concat(chunks).toString('utf8'))) result.badBodies++
        }
        settle()
      })
    })
    req.on('timeout', () => req.destroy(new Error('timeout')))
    req.on('error', () => { result.errors++; settle() })
    req.end(body)
  }

  const start = performance.now()
  const tick = () => {
    const now = performance.now()
    for (; result.sent < total && start + result.sent * interval <= now; result.sent++) fire()
    if (result.sent < total) setTimeout(tick, Math.max(0, Math.min(1, start + result.sent * interval - performance.now())))
  }
  tick()
  if (total > 0) await finished
  agent.destroy()
  return result
}

/** The p-th percentile (0-100) of `values`, in their unit; null when there are none. */
export function percentile(values: number[], p: number): number | null {
  if (values.length === 0) return null
  const sorted = Float64Array.from(values).sort()
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!
}

/** Achieved req/s, p99 (0.1 ms) and anything that was not a clean 2xx, as in the table. */
export function summarizePaced(runs: PacedResult[]): Summary {
  const latencies = runs.flatMap((r) => r.latencies)
  const statuses = new Map<string, number>()
  for (const r of runs) for (const [code, n] of Object.entries(r.statuses)) statuses.set(code, (statuses.get(code) ?? 0) + n)
  const problems: string[] = []
  const failed = [...statuses].filter(([code]) => !code.startsWith('2'))
  if (failed.length > 0) problems.push(failed.map(([code, n]) => `${code}x${n}`).join(' '))
  const badBodies = runs.reduce((n, r) => n + r.badBodies, 0)
  if (badBodies > 0) problems.push(`${badBodies} unexpected 2xx bodies`)
  const errors = runs.reduce((n, r) => n + r.errors, 0)
  if (errors > 0) problems.push(`${errors} socket errors or timeouts`)
  const p99 = percentile(latencies, 99)
  const seconds = runs.reduce((n, r) => n + r.seconds, 0)
  const cpuUs = runs.every((r) => r.cpuUs !== undefined) ? runs.reduce((n, r) => n + r.cpuUs!, 0) / latencies.length : null
  return { rps: latencies.length / seconds, p99: p99 === null ? null : Math.round(p99 * 10) / 10, problems: problems.join(', '), cpuUs }
}
