/**
 * A server span per HTTP request (docs/operations.md, Traces), continuing the caller's trace
 * (`traceparent`/`tracestate`). Named by the route's template (`POST /numsys/verify_signature`),
 * never the path itself (a path can carry an interaction's id); `http.route`, the method and
 * the status; a 5xx marks it failed. Only installed when tracing is on; /healthz, /readyz and
 * /metrics are not traced.
 */
import type { IncomingMessage, ServerResponse } from 'node:http'
import type { FastifyInstance } from 'fastify'
import { activeSpan, markFailed, serverSpan, tracingOn } from '../lib/tracing.ts'

type Handler = (req: IncomingMessage, res: ServerResponse) => void

/** Probes and scrapes, every few seconds from each balancer and Prometheus: not traced. */
const PROBES = /^\/(healthz|readyz|metrics)(\?|$)/

/**
 * The whole of a request's handling, Fastify's own work included (its log lines, the body
 * read), runs in the span's context: the server's request listeners are wrapped, rather than
 * a hook, which would start after Fastify began (and after its 'incoming request' line).
 */
export function traceRequests(app: FastifyInstance): void {
  if (!tracingOn()) return
  const server = app.server
  const handlers = server.listeners('request') as Handler[]
  server.removeAllListeners('request')
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    const method = req.method ?? 'GET'
    const traced = PROBES.test(req.url ?? '') ? null : serverSpan(method, req.headers, { 'http.request.method': method, 'url.scheme': 'http' })
    if (traced === null) {
      for (const handler of handlers) handler.call(server, req, res)
      return
    }
    res.once('close', () => {
      traced.span.setAttribute('http.response.status_code', res.statusCode)
      if (res.statusCode >= 500) markFailed(traced.span, String(res.statusCode))
    })
    traced.run([req, res], res, () => { for (const handler of handlers) handler.call(server, req, res) })
  })
  // Routing is done before the first hook: the span takes the route's template as its name.
  app.addHook('onRequest', (request, _reply, done) => {
    const route = request.routeOptions.url
    if (route !== undefined) activeSpan().updateName(`${request.method} ${route}`).setAttribute('http.route', route)
    activeSpan().setAttribute('kns.request_id', String(request.id))
    done()
  })
}
