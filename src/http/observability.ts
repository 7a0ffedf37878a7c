import type { FastifyInstance } from 'fastify'
import { Type } from 'typebox'
import { collectDefaultMetrics, Histogram, Registry } from 'prom-client'
import type { Service } from '../service.ts'

/** /healthz (process alive), /readyz (database reachable) and Prometheus /metrics. */
export function registerObservability(app: FastifyInstance, service: Service): void {
  const registry = new Registry()
  collectDefaultMetrics({ register: registry, prefix: 'kns_' })
  const duration = new Histogram({
    name: 'kns_http_request_duration_seconds',
    help: 'HTTP request duration by route and status',
    labelNames: ['method', 'route', 'status'] as const,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    registers: [registry],
  })

  app.addHook('onResponse', (request, reply, done) => {
    // The route pattern, never the raw URL: bounded label values, no secrets from queries.
    const route = request.routeOptions.url ?? 'unmatched'
    duration.observe({ method: request.method, route, status: String(reply.statusCode) }, reply.elapsedTime / 1000)
    done()
  })

  const hidden = { hide: true }
  app.get('/healthz', { schema: { ...hidden, response: { 200: Type.Object({ status: Type.String() }) } } },
    async () => ({ status: 'ok' }))

  app.get('/readyz', { schema: { ...hidden, response: { 200: Type.Object({ status: Type.String() }), 503: Type.Object({ status: Type.String() }) } } },
    async (_request, reply) => {
      try {
        await service.db.ping()
        return { status: 'ready' }
      } catch {
        return reply.status(503).send({ status: 'database unreachable' })
      }
    })

  app.get('/metrics', { schema: hidden }, async (_request, reply) => {
    reply.type(registry.contentType)
    return registry.metrics()
  })
}
