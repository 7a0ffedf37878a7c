// The part of autocannon's programmatic API the benchmark uses (the package ships no types).
declare module 'autocannon' {
  export interface Histogram {
    average: number
    mean: number
    stddev: number
    min: number
    max: number
    total: number
    p50: number
    p90: number
    p97_5: number
    p99: number
  }

  export interface RequestParams {
    method?: string
    path?: string
    headers?: Record<string, string>
    body?: string | Buffer
  }

  export interface Request extends RequestParams {
    setupRequest?: (request: RequestParams, context: Record<string, unknown>) => RequestParams | null
    /** After each response on the connection (the request's `context` is the connection's). */
    onResponse?: (status: number, body: string, context: Record<string, unknown>) => void
  }

  export interface Options {
    url: string
    connections?: number
    duration?: number
    /** Stop after this many requests (instead of `duration`). */
    amount?: number
    /** Requests per second over all connections (fixed-rate load; latencies corrected for coordinated omission). */
    overallRate?: number
    timeout?: number
    method?: string
    headers?: Record<string, string>
    body?: string
    requests?: Request[]
    verifyBody?: (body: string) => boolean
    skipAggregateResult?: boolean
  }

  export interface Result {
    requests: Histogram
    latency: Histogram
    duration: number
    errors: number
    timeouts: number
    mismatches: number
    non2xx: number
    '2xx': number
    statusCodeStats: Record<string, { count: number }>
  }

  /** A run with `skipAggregateResult`: histograms still encoded, to be merged with others. */
  export interface RawResult {
    totalCompletedRequests: number
    /** Seconds. */
    duration: number
    errors: number
    timeouts: number
    mismatches: number
    non2xx: number
    statusCodeStats: Record<string, { count: number }>
  }

  export interface Instance<T> extends Promise<T> {
    stop(): void
  }

  function autocannon(options: Options & { skipAggregateResult: true }): Instance<RawResult>
  function autocannon(options: Options): Instance<Result>
  namespace autocannon {
    /** Merges raw runs: latency percentiles over all of them (the requests histogram is not merged). */
    function aggregateResult(results: RawResult[], options: { url: string; connections?: number }): Result
  }
  export default autocannon
}
