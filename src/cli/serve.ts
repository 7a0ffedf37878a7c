import { spawnSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { existsSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { FastifyInstance } from 'fastify'
import { recordOutboundRules } from '../db/outbound-rules.ts'
import { buildApp } from '../http/app.ts'
import { listenForMetrics } from '../http/metrics-listener.ts'
import { inWorkerPool } from '../lib/cluster-metrics.ts'
import { createDevelopmentKey } from '../keys/development-key.ts'
import { checkLedger } from '../ledger/ledger.ts'
import { stopTracing } from '../lib/tracing.ts'
import type { Service } from '../service.ts'
import { SipServer } from '../sip/server.ts'
import { logOutput } from './log-output.ts'
import { announceListening, ownSockets } from './workers.ts'

const SHUTDOWN_GRACE_MS = 10_000

/**
 * First start on an empty embedded database: one development key with every scope,
 * printed once (stdout, never the log) with a ready-to-paste request, so a newcomer can
 * try every endpoint at once. Never on PostgreSQL: that is a deployment, not a laptop.
 */
async function issueDevelopmentKey(service: Service): Promise<void> {
  if (service.db.engine !== 'sqlite') return
  const key = await createDevelopmentKey(service.db, service.config.defaultKeyRate)
  if (key === null) return
  const base = service.config.publicBaseUrl
  process.stdout.write([
    '',
    '  First start: created a development API key (all scopes). It is shown only this once:',
    '',
    `    ${key.key}`,
    '',
    '  Try it:',
    `    curl -s ${base}/numsys/register-user-login -H 'content-type: application/json' \\`,
    `      -d '{"email":"ada@example.com","phoneNumber":"+14155550100"}'`,
    `    curl -s ${base}/numsys/approval-phone -H 'content-type: application/json' -H 'x-api-key: ${key.key}' \\`,
    `      -d '{"title":"SIM replacement","message":"Approve the new SIM card","successRedirectUrl":"https://example.com/ok",`,
    `           "cancelRedirectUrl":"https://example.com/cancel","referenceNumber":"first-${randomBytes(3).toString('hex')}","method":"sign","phoneNumber":"+14155550100"}'`,
    '',
    '  Then approve as the number\'s owner: open the approvalUrl it answers in a browser, choose',
    '  "Approve with your phone number" and type +14155550100. The login code is not texted in',
    '  development (SMS_DELIVERY=log): it appears in this log. From the command line instead (the',
    '  last command: the vendor checks the signature the owner made, and the approval is decided):',
    `    npx kns phone-login send-code --phone +14155550100 --url ${base}`,
    '    npx kns phone-login finish --code <the code from this log>',
    '    npx kns phone-login sign-approval --ref <approvalNumber>',
    `    curl -s ${base}/numsys/verify_signature -H 'content-type: application/json' \\`,
    `      -d '{"approvalNumber":"<approvalNumber>","signature":"<the signature sign-approval printed>"}'`,
    '',
    `  API reference: ${base}/docs    The whole tour: docs/tour.sh (README)`,
    `  Before production: npx kns api-key revoke ${key.id}   (kns doctor --production lists what else)`,
    '',
  ].join('\n') + '\n')
}

/** Stops accepting connections, lets in-flight requests finish, then closes the database. */
function closeGracefully(app: FastifyInstance, service: Service, sip: SipServer | undefined): void {
  let closing = false
  const stop = (signal: string) => {
    if (closing) return
    closing = true
    app.log.info({ signal }, 'shutting down')
    const force = setTimeout(() => {
      app.log.error('shutdown grace period over; exiting')
      process.exit(1)
    }, SHUTDOWN_GRACE_MS)
    force.unref()
    // app.close() closes the connections idle at that moment only; a keep-alive connection
    // whose request was in flight stays open after its response and would hold the process
    // until the grace period ends. Close such connections as soon as they fall idle.
    const idle = setInterval(() => app.server.closeIdleConnections(), 100)
    idle.unref()
    Promise.all([app.close(), sip?.close()])
      .then(() => service.close())
      // The spans still buffered are exported before the exit (a no-op without tracing).
      .then(() => stopTracing())
      .then(() => process.exit(0), (err: unknown) => {
        app.log.error({ err }, 'error during shutdown')
        process.exit(1)
      })
  }
  process.once('SIGTERM', () => stop('SIGTERM'))
  process.once('SIGINT', () => stop('SIGINT'))
}

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..')

/**
 * `kns serve` (and so `npm start`) builds the pages when their sources changed since the last
 * build (a child process: the build needs Vite, a dev dependency, which a deployment that ships
 * dist/web does not have). When it cannot, it says what to run; the API serves either way and
 * the pages answer 503 until they are built. Here rather than in an npm prestart script, so
 * that `npm ci --omit=dev && npm start` serves instead of failing on the missing Vite.
 */
export function buildPagesIfStale(): void {
  const script = join(ROOT, 'web', 'build.ts')
  if (!existsSync(script)) return // a deployment with dist/web only
  const result = spawnSync(process.execPath, [script, '--if-stale'], { stdio: ['ignore', 'ignore', 'pipe'], encoding: 'utf8', timeout: 300_000 })
  if (result.status !== 0) {
    process.stderr.write(`kns: the web pages could not be built (${(result.stderr ?? '').trim().split('\n').at(-1) || `exit ${result.status}`}): ` +
      'run `npm run build:web` (it needs the dev dependencies: npm ci). The API serves; the pages answer 503 until then.\n')
  }
}

export async function serve(service: Service): Promise<FastifyInstance> {
  await recordOutboundRules(service.db, service.config)
  await issueDevelopmentKey(service)
  const sip = service.config.sip === null ? undefined : new SipServer(service, service.config.sip)
  const output = await logOutput(service.config.logFormat)
  const app = await buildApp(service, { metrics: sip === undefined ? [] : [sip], ...(output === undefined ? {} : { logger: output }) })
  closeGracefully(app, service, sip)
  const { port } = service.config
  // Before anything listens (a failure here exits, leaving no listener behind), and before the
  // first request: a first registration that started the thread would take a quarter of a
  // second, which tells that its number was new.
  await service.addressWorkers.start()
  await serveMetricsApart(app, service)
  await app.listen({ port, host: service.config.host, ...(ownSockets(port) ? { exclusive: true, reusePort: true } : {}) })
  if (sip !== undefined) {
    await sip.listen({ ownSocket: ownSockets(service.config.sip!.port) })
    const { host } = service.config.sip!
    app.log.info({ udp: `${host}:${sip.address.udp}`, tcp: `${host}:${sip.address.tcp}`, trusted: service.config.sip!.trustedSources },
      'SIP redirect interface listening (docs/sip.md)')
    if (service.config.sip!.signingKeyId === null) app.log.warn('SIP_SIGNING_KEY is unset: SIP INVITEs asking to sign are refused (403)')
  }
  // After listening: a process that cannot serve must not be the one watching the ledger.
  service.events.watcher.onStateChange = (state, err) => {
    if (state === 'watching') app.log.info({ source: service.events.watcher.source }, 'ledger watcher: watching the ledger\'s ApprovalEvents')
    else if (state === 'standby') app.log.info('ledger watcher: standing by (another process watches)')
    else if (state === 'unreachable' || state === 'failing') app.log.warn({ err }, 'ledger watcher: cannot read the ledger\'s events; retrying with backoff (nothing is skipped)')
  }
  service.events.start()
  // Subscriptions end on time (their expiry, their sink token's), one process sweeping.
  service.camaraSubscriptions.start()
  // The monitored period (SIM_SWAP_MONITORED_DAYS), hourly like the retention prune.
  service.swaps.start()
  for (const warning of service.warnings) app.log.warn(warning)
  app.log.info({ engine: service.db.engine, ledger: service.ledger.kind, publicBaseUrl: service.config.publicBaseUrl }, 'kns ready')
  announceListening()
  void reportLedger(app, service)
  return app
}

/**
 * METRICS_LISTEN: /metrics on its own listener, closed with the API's; before the API listens,
 * so an address that cannot be had stops the start with nothing served. Under `kns serve
 * --workers` the primary listens instead (src/cli/workers.ts), answering with every worker's sum.
 */
async function serveMetricsApart(app: FastifyInstance, service: Service): Promise<void> {
  const address = service.config.metricsListen
  if (address === undefined || inWorkerPool()) return
  let server
  try {
    server = await listenForMetrics(address, () => app.metrics.render())
  } catch (err) {
    await app.close()
    await service.close()
    throw err
  }
  const listener = server
  app.server.once('close', () => listener.close())
  app.log.info({ metrics: `${address.host}:${address.port}` }, '/metrics served on METRICS_LISTEN only')
}

/**
 * The ledger's start-up check, in the background: the API serves while the ledger is slow or
 * down (registration, statistics, lookups of stored approvals), so a failed check is logged
 * loudly, not fatal. `kns doctor` runs the same check on demand.
 */
async function reportLedger(app: FastifyInstance, service: Service): Promise<void> {
  if (service.ledger.check === undefined) return
  const report = await checkLedger(service.ledger)
  if (report.unreachable !== undefined) {
    app.log.error({ reason: report.unreachable }, 'ledger check: the Sui GraphQL service cannot be asked; requests that need the ledger answer 503 LEDGER_UNAVAILABLE until it can')
    return
  }
  for (const check of report.checks.filter((c) => !c.ok)) app.log.error({ check: check.name }, `ledger check failed: ${check.detail}`)
  if (report.ok) app.log.info({ checks: report.checks.map((c) => `${c.name}: ${c.detail}`) }, 'ledger check passed')
}
