import { createServer, type Server, type ServerResponse } from 'node:http'
import { prometheusContentType } from 'prom-client'
import { ConfigError } from '../errors.ts'

/** How long a scrape may take before it is answered 503 (Prometheus' default scrape timeout is 10 s). */
const RENDER_TIMEOUT_MS = 8000

/**
 * METRICS_LISTEN: `GET /metrics` on a listener of its own, for a scraper on the operator's
 * network; the public port then answers 404 there (src/http/observability.ts). Nothing else is
 * served: every other path is 404, every other method 405. A plain node:http server: no API
 * key, no admission control, no request log (a scrape every few seconds would drown the log).
 * `render` is the process's registry, or under `kns serve --workers` the primary's sum of every
 * worker's (src/lib/cluster-metrics.ts). Resolves once listening; rejects when it cannot.
 */
export function listenForMetrics(address: { host: string; port: number }, render: () => Promise<string>): Promise<Server> {
  const server = createServer((request, response) => {
    const path = (request.url ?? '').split('?')[0]
    if (path !== '/metrics') return answer(response, 404, 'not found: only /metrics is served here\n')
    if (request.method !== 'GET' && request.method !== 'HEAD') {
      response.setHeader('allow', 'GET, HEAD')
      return answer(response, 405, 'method not allowed\n')
    }
    let timer: NodeJS.Timeout | undefined
    const late = new Promise<never>((_resolve, reject) => {
      timer = setTimeout(() => reject(new Error('the metrics could not be gathered in time')), RENDER_TIMEOUT_MS)
    })
    Promise.race([render(), late]).then(
      (text) => answer(response, 200, text, prometheusContentType),
      (err: unknown) => answer(response, 503, `metrics unavailable: ${err instanceof Error ? err.message : String(err)}\n`),
    ).finally(() => clearTimeout(timer))
  })
  // A scraper keeps its connection; nothing slow is expected of it.
  server.keepAliveTimeout = 75_000
  server.headersTimeout = 10_000
  server.requestTimeout = 15_000
  return new Promise<Server>((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) => {
      reject(new ConfigError(`METRICS_LISTEN ${address.host}:${address.port}: ${err.code === 'EADDRINUSE' ? 'in use' : err.code ?? err.message}`))
    })
    server.listen({ host: address.host, port: address.port, exclusive: true }, () => resolve(server))
  })
}

function answer(response: ServerResponse, status: number, body: string, type = 'text/plain; charset=utf-8'): void {
  response.writeHead(status, { 'content-type': type, 'content-length': Buffer.byteLength(body), 'cache-control': 'no-store' })
  response.end(body)
}
