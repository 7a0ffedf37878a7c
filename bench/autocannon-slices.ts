/**
 * autocannon runs as the benchmarks measure them (bench/api.bench.ts, bench/tracing.bench.ts):
 * one run against a server child with the CPU time that server spent meanwhile (a slice), and
 * the summary over several slices, flagging anything that was not a clean 2xx.
 */
import autocannon, { type RawResult } from 'autocannon'
import type { Endpoint, Summary, Target } from './bench-server.ts'

/** One autocannon run and the CPU time the server spent meanwhile. */
export interface Slice { raw: RawResult; cpuUs: number }

export interface AutocannonSlices {
  /** One run of `endpoint` for `seconds` (at most `overallRate` requests/s when given). */
  cannon(port: number, endpoint: Endpoint, seconds: number, overallRate?: number): Promise<RawResult>
  slice(server: Target, endpoint: Endpoint, seconds: number, overallRate?: number): Promise<Slice>
  /** Throughput over all slices, p99 over all their latencies, and anything that was not a clean 2xx. */
  summarize(slices: Slice[]): Summary
}

/** The three, with `connections` concurrent connections. */
export function autocannonSlices(connections: number): AutocannonSlices {
  const cannon = (port: number, endpoint: Endpoint, seconds: number, overallRate?: number): Promise<RawResult> => autocannon({
    url: `http://127.0.0.1:${port}`,
    connections,
    duration: seconds,
    ...(overallRate === undefined ? {} : { overallRate }),
    timeout: 10,
    skipAggregateResult: true,
    requests: [{
      method: endpoint.method,
      headers: endpoint.headers,
      setupRequest(request) {
        const next = endpoint.next()
        request.path = next.path
        if (next.body !== undefined) request.body = next.body
        return request
      },
    }],
    verifyBody: endpoint.ok,
  })

  return {
    cannon,
    async slice(server, endpoint, seconds, overallRate) {
      const before = await server.cpu()
      const raw = await cannon(server.port, endpoint, seconds, overallRate)
      return { raw, cpuUs: await server.cpu() - before }
    },
    summarize(slices) {
      const raws = slices.map((s) => s.raw)
      const completed = raws.reduce((n, r) => n + r.totalCompletedRequests, 0)
      const seconds = raws.reduce((n, r) => n + r.duration, 0)
      const cpuUs = slices.reduce((n, s) => n + s.cpuUs, 0) / completed
      const result = autocannon.aggregateResult(raws, { url: 'http://127.0.0.1', connections })
      const problems: string[] = []
      const statuses = Object.entries(result.statusCodeStats).filter(([code]) => !code.startsWith('2'))
      if (statuses.length > 0) problems.push(statuses.map(([code, s]) => `${code}x${s.count}`).join(' '))
      const badBodies = result.mismatches - result.non2xx
      if (badBodies > 0) problems.push(`${badBodies} unexpected 2xx bodies`)
      if (result.errors > 0) problems.push(`${result.errors} socket errors (${result.timeouts} timeouts)`)
      return { rps: completed / seconds, p99: result.latency.p99, problems: problems.join(', '), cpuUs }
    },
  }
}
