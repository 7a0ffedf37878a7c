/**
 * One benchmark target, run as a child process of bench/api.bench.ts so the load generator
 * does not share the server's event loop. Listens on 127.0.0.1 (free port) and reports
 * `{ port }` over IPC; the message `cpu` answers `{ cpuUs }` (process CPU time so far), `vitals`
 * answers `{ heapUsed, loopDelayMaxMs }` (see below), and `stop` closes it cleanly (so
 * `--cpu-prof` is written).
 *
 *   BENCH_MODE=bare  a bare Fastify app with `GET /bare` (the baseline)
 *   BENCH_MODE=app   the real service, configured from the environment like `kns serve`
 *                    (traces too, when OTEL_EXPORTER_OTLP_ENDPOINT is set: bench/tracing.bench.ts)
 */
// First, as in `kns serve`: sizes the thread pool before anything can start it.
import '../src/lib/threadpool.ts'
import { monitorEventLoopDelay } from 'node:perf_hooks'
import Fastify, { type FastifyInstance } from 'fastify'
import { loadConfig } from '../src/config.ts'
import { buildApp } from '../src/http/app.ts'
import { openService, type Service } from '../src/service.ts'
import { SipServer } from '../src/sip/server.ts'
import { startTracing, stopTracing } from '../src/lib/tracing.ts'

if (process.send === undefined) {
  console.error('bench/server.ts is started by bench/api.bench.ts (it needs an IPC channel)')
  process.exit(2)
}

let app: FastifyInstance
let service: Service | undefined
let sip: SipServer | undefined
if (process.env.BENCH_MODE === 'bare') {
  app = Fastify({ logger: false })
  app.get('/bare', async () => ({ ok: true, service: 'kns', version: 1 }))
} else {
  // As `kns serve`: before the database opens, so its statements are traced; nothing without an endpoint.
  await startTracing()
  service = await openService(loadConfig(process.env))
  app = await buildApp(service, { logger: false })
  // The events benchmark measures what a server runs in the background (webhook deliveries).
  if (process.env.BENCH_EVENTS === '1') service.events.start()
}

await app.listen({ host: '127.0.0.1', port: 0 })
const address = app.server.address()
if (address === null || typeof address === 'string') throw new Error('no TCP address')
// With SIP_LISTEN (bench/sip.bench.ts): the SIP redirect interface too, as `kns serve` starts it.
if (service?.config.sip) {
  sip = new SipServer(service, service.config.sip)
  await sip.listen()
}
process.send({ port: address.port, ...(sip === undefined ? {} : { sipPort: sip.address.udp }) })

let stopping = false
let loopDelay: ReturnType<typeof monitorEventLoopDelay> | undefined
async function stop(): Promise<void> {
  if (stopping) return
  stopping = true
  await Promise.all([app.close(), sip?.close()])
  await service?.close()
  // Exports what is still buffered, as `kns serve` does at shutdown (the tracing bench counts it).
  await stopTracing()
  process.exit(0)
}
process.on('message', (message) => {
  if (message === 'stop') void stop()
  // CPU time used so far (µs, all threads): the bench divides it by requests served.
  if (message === 'cpu') { const { user, system } = process.cpuUsage(); process.send!({ cpuUs: user + system }) }
  // For the soak benchmark's minutes: V8 heap in use, and the longest event-loop delay since
  // the last question (a synchronous query, a GC pause, or the process waiting for a core).
  // Monitored only once asked, so `npm run bench` runs without its timer.
  if (message === 'vitals') {
    if (loopDelay === undefined) (loopDelay = monitorEventLoopDelay({ resolution: 10 })).enable()
    process.send!({ heapUsed: process.memoryUsage().heapUsed, loopDelayMaxMs: loopDelay.max / 1e6 })
    loopDelay.reset()
  }
})
// The parent went away (crash or Ctrl-C): do not linger.
process.on('disconnect', () => { void stop() })
