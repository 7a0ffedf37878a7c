import type { FastifyInstance } from 'fastify'
import { Type } from 'typebox'
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client'
import type { DatabaseState } from '../db/engine.ts'
import { OverloadedError } from '../errors.ts'
import { clusterMetrics, ClusterMetricsUnavailable } from '../lib/cluster-metrics.ts'
import { RedisRateLimiter } from '../lib/rate-limiter.ts'
import { Tally } from '../lib/tally.ts'
import { ATTEMPT_FAILURES } from '../events/webhooks/attempt.ts'
import { oldestPendingAgeMs } from '../events/webhooks/deliveries.ts'
import { listSubscriptions } from '../events/webhooks/subscriptions.ts'
import type { Service } from '../service.ts'

declare module 'fastify' {
  interface FastifyInstance {
    /** This process's /metrics text (the machine's sum in a worker of `kns serve --workers`): what METRICS_LISTEN serves. */
    metrics: { render(): Promise<string> }
  }
}

/**
 * /healthz (process alive), /readyz (database reachable and writable) and Prometheus /metrics:
 * on the public port, or with METRICS_LISTEN only on a listener of its own (src/cli/serve.ts).
 */
export function registerObservability(app: FastifyInstance, service: Service, sources: Array<{ register(registry: Registry): void }> = []): void {
  const registry = new Registry()
  collectDefaultMetrics({ register: registry, prefix: 'kns_' })
  for (const source of sources) source.register(registry)
  const duration = new Histogram({
    name: 'kns_http_request_duration_seconds',
    help: 'HTTP request duration by route and status',
    labelNames: ['method', 'route', 'status'] as const,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    registers: [registry],
  })

  watchRateLimiter(app, service, registry)
  watchLedger(service, registry)
  watchEvents(service, registry)
  watchDatabase(service, registry)
  watchLoginCodes(service, registry)
  watchCalls(service, registry)
  logFailedDeliveries(app, service)

  app.addHook('onResponse', (request, reply, done) => {
    // The route pattern, never the raw URL: bounded label values, no secrets from queries.
    const route = request.routeOptions.url ?? 'unmatched'
    duration.observe({ method: request.method, route, status: String(reply.statusCode) }, reply.elapsedTime / 1000)
    done()
  })

  const hidden = { hide: true }
  app.get('/healthz', { schema: { ...hidden, response: { 200: Type.Object({ status: Type.String() }) } } },
    async () => ({ status: 'ok' }))

  // Ready means the database answers and takes writes. A remote ledger that does not answer
  // leaves the service ready (registration, statistics, transaction_details and the pages still
  // work) but is reported, so an operator sees it on the same probe.
  const Readiness = Type.Object({ status: Type.String(), ledger: Type.Optional(Type.String()), watcher: Type.Optional(Type.String()), sweeper: Type.Optional(Type.String()) })
  app.get('/readyz', { schema: { ...hidden, response: { 200: Readiness, 503: Readiness } } },
    async (_request, reply) => {
      const ledger = { ...ledgerState(service), ...watcherState(service), ...sweeperState(service) }
      let state: DatabaseState
      try {
        state = await service.db.ping()
      } catch {
        return reply.status(503).send({ status: 'database unreachable', ...ledger })
      }
      // A standby (the address moved during a failover, or not yet): writes would fail, so the
      // balancer must send this node nothing until it reaches the primary again.
      if (state === 'read-only') return reply.status(503).send({ status: 'database read-only', ...ledger })
      return { status: 'ready', ...ledger }
    })

  // Under `kns serve --workers`, the machine's series (every worker's, added up), whichever
  // worker is scraped: src/lib/cluster-metrics.ts.
  const metrics = clusterMetrics(registry)
  app.decorate('metrics', { render: () => metrics.render() })
  app.addHook('onClose', (_instance, done) => {
    metrics.close()
    done()
  })
  // On its own listener only: the public port answers 404, as for any unknown path.
  if (service.config.metricsListen !== undefined) return
  app.get('/metrics', { schema: hidden }, async (_request, reply) => {
    try {
      const text = await metrics.render()
      return reply.type(registry.contentType).send(text)
    } catch (err) {
      if (err instanceof ClusterMetricsUnavailable) throw new OverloadedError(`metrics: ${err.message}`, 5)
      throw err
    }
  })
}

/**
 * The shared (Redis) rate limiter's fallback: a warning on each switch (to in-process limits
 * and back), `kns_rate_limiter_fallback` (1 while in process) and the decisions taken in
 * process. With the in-process limiter only (no REDIS_URL), the gauge stays 0 and the counter has no series.
 */
function watchRateLimiter(app: FastifyInstance, service: Service, registry: Registry): void {
  const limiter = service.rateLimiter instanceof RedisRateLimiter ? service.rateLimiter : undefined
  new Gauge({
    name: 'kns_rate_limiter_fallback',
    help: '1 while the shared rate limiter (Redis) is unreachable and limits are enforced per process, else 0',
    registers: [registry],
    aggregator: 'max',
    collect() { this.set(limiter?.fallback === true ? 1 : 0) },
  })
  const reported = { allowed: 0, limited: 0 }
  new Counter({
    name: 'kns_rate_limiter_fallback_decisions_total',
    help: 'Rate-limit decisions taken in process because the shared rate limiter (Redis) was unreachable, by result',
    labelNames: ['result'] as const,
    registers: [registry],
    collect() {
      if (limiter === undefined) return
      for (const result of ['allowed', 'limited'] as const) {
        this.inc({ result }, limiter.fallbackDecisions[result] - reported[result])
        reported[result] = limiter.fallbackDecisions[result]
      }
    },
  })
  if (limiter === undefined) return
  const log = (fallback: boolean, cause: unknown) => {
    if (fallback) app.log.warn({ err: cause }, 'rate limiter: Redis unreachable; limits are enforced per process until it is back')
    else app.log.warn('rate limiter: Redis reachable again; limits are shared again')
  }
  if (limiter.fallback) log(true, limiter.fallbackCause)
  limiter.on('fallback', log)
  app.addHook('onClose', (_instance, done) => {
    limiter.off('fallback', log)
    done()
  })
}

/** The remote ledger's state as /readyz says it (nothing for the embedded ledger). */
function ledgerState(service: Service): { ledger?: string } {
  const health = service.ledger.health
  if (health === undefined) return {}
  if (health.reachable === null) return { ledger: 'not asked yet' }
  if (health.reachable) return { ledger: 'reachable' }
  const failure = health.lastFailure!
  return { ledger: `unreachable since ${new Date(failure.at).toISOString()} (${failure.outcome} on ${failure.operation})` }
}

/**
 * The remote ledger's requests by operation and outcome (`ok`, `rejected` = the ledger said the
 * input is wrong, e.g. a signature that does not verify; `error`, `timeout`, `unreachable` =
 * an outage), and `kns_ledger_unavailable`: 1 while the latest request failed.
 */
function watchLedger(service: Service, registry: Registry): void {
  const health = service.ledger.health
  if (health === undefined) return
  const reported = new Map<string, number>()
  new Counter({
    name: 'kns_ledger_requests_total',
    help: 'Requests to the Sui GraphQL service by operation and outcome (ok, rejected, error, timeout, unreachable)',
    labelNames: ['operation', 'outcome'] as const,
    registers: [registry],
    collect() {
      for (const [operation, outcome, count] of health.counts()) {
        const key = `${operation}|${outcome}`
        this.inc({ operation, outcome }, count - (reported.get(key) ?? 0))
        reported.set(key, count)
      }
    },
  })
  new Gauge({
    name: 'kns_ledger_unavailable',
    help: '1 while the latest request to the Sui GraphQL service failed (error, timeout or no connection), else 0',
    registers: [registry],
    aggregator: 'max',
    collect() { this.set(health.reachable === false ? 1 : 0) },
  })
}

/** The ledger watcher as /readyz says it: reported, never a reason to be unready. */
/** Whether this process sweeps expiries or stands by (one at a time: its leader lock). */
function sweeperState(service: Service): { sweeper?: string } {
  if (!service.events.started) return {}
  return { sweeper: service.events.sweeper.sweeping ? 'sweeping' : 'standby (another process sweeps expiries)' }
}

function watcherState(service: Service): { watcher?: string } {
  const watcher = service.events.watcher
  if (!service.events.started) return {}
  switch (watcher.state) {
    case 'starting': return { watcher: 'starting' }
    case 'standby': return { watcher: 'standby (another process watches the ledger)' }
    case 'stopped': return {}
    case 'unreachable': return { watcher: `ledger unreachable, retrying: ${watcher.lastError ?? ''}`.trim() }
    case 'failing': return { watcher: `retrying after an error: ${watcher.lastError ?? ''}`.trim() }
    case 'watching': {
      if (!watcher.leading) return { watcher: 'standby (the lock was lost; asking for it again)' }
      const lag = watcher.lagSeconds()
      return { watcher: lag === null ? 'watching' : `watching (${lag.toFixed(1)} s behind)` }
    }
  }
}

/**
 * The events subsystem: webhook deliveries by result (this process's), the age of the oldest
 * delivery still pending (all processes'), the ledger watcher's lag, events and errors, and
 * the waits for a decision held here.
 */
function watchEvents(service: Service, registry: Registry): void {
  const events = service.events
  const watcher = events.watcher
  const idle = { delivered: 0, retried: 0, failed: 0 }
  countsOf(registry, 'kns_webhook_deliveries_total',
    'Webhook delivery attempts by result: delivered (2xx), retried (failed, scheduled again), failed (given up)',
    'result', () => (events.started ? events.deliveries.counts : idle), ['delivered', 'retried', 'failed'])
  const idleFailures = new Tally<'reason'>(['reason'], ATTEMPT_FAILURES.map((reason) => ({ reason })))
  tallyOf(registry, 'kns_webhook_failed_attempts_total',
    'Failed webhook delivery attempts (retried or given up) by reason: http_3xx, http_4xx, http_5xx, http_other, timeout, network, refused, removed, secret',
    () => (events.started ? events.deliveries.failures : idleFailures))
  new Gauge({
    name: 'kns_webhook_oldest_pending_age_seconds',
    help: 'Age of the oldest webhook delivery not yet delivered nor given up (0 when none)',
    registers: [registry],
    aggregator: 'max', // the database's, read alike by every worker
    async collect() {
      try {
        this.set((await oldestPendingAgeMs(service.db, Date.now())) / 1000)
      } catch { /* the database is down: /readyz says so */ }
    },
  })
  new Gauge({
    name: 'kns_webhook_endpoint_paused',
    help: 'Per webhook subscription: 1 while its circuit breaker is open (paused after failed attempts in a row), else 0',
    labelNames: ['webhook'] as const,
    registers: [registry],
    aggregator: 'max',
    async collect() {
      try {
        const now = Date.now()
        this.reset()
        for (const s of await listSubscriptions(service.db)) this.set({ webhook: s.id }, s.pausedUntil !== null && s.pausedUntil > now ? 1 : 0)
      } catch { /* the database is down: /readyz says so */ }
    },
  })
  new Gauge({
    name: 'kns_ledger_watch_lag_seconds',
    help: 'How far the ledger watcher is behind: time since it last read the ApprovalEvent feed to its end (-1 in a process that does not watch)',
    registers: [registry],
    aggregator: 'max', // the watching worker's; the others say -1
    collect() { this.set(watcher.lagSeconds() ?? -1) },
  })
  countsOf(registry, 'kns_ledger_watch_events_total',
    'ApprovalEvents the ledger watcher read, by outcome: approved, rejected (a check failed), skipped (unknown or not pending)',
    'outcome', () => watcher.counts, ['approved', 'rejected', 'skipped'])
  countsOf(registry, 'kns_ledger_watch_errors_total', 'Reads of the ledger feed (or applications of an event) that failed and will be retried',
    null, () => ({ total: watcher.counts.errors }), ['total'])
  countsOf(registry, 'kns_approvals_expired_total', 'Approvals this process marked expired (each with its approval.expired event)',
    null, () => ({ total: events.sweeper.expired }), ['total'])
  new Gauge({
    name: 'kns_decision_waits',
    help: 'transaction_details?wait= requests this process holds now, each waiting for a decision (its own or another process\'s)',
    registers: [registry],
    collect() { this.set(service.decisionWaiters.size) },
  })
}

/**
 * The database as /readyz judges it, asked on each scrape: `kns_database_state{state}` is 1 for
 * the state it is in (ready, read_only: a standby, e.g. during a failover; unreachable) and 0 for
 * the others, so an alert reads `kns_database_state{state="ready"} == 0`.
 */
function watchDatabase(service: Service, registry: Registry): void {
  const states = ['ready', 'read_only', 'unreachable'] as const
  new Gauge({
    name: 'kns_database_state',
    help: 'The database as /readyz judges it: 1 for the state it is in (ready, read_only: a standby, unreachable), 0 for the others',
    labelNames: ['state'] as const,
    registers: [registry],
    aggregator: 'min', // under --workers: a state is shown only if every worker is in it
    async collect() {
      let now: typeof states[number]
      try {
        now = (await service.db.ping()) === 'read-only' ? 'read_only' : 'ready'
      } catch {
        now = 'unreachable'
      }
      for (const state of states) this.set({ state }, state === now ? 1 : 0)
    },
  })
}

/**
 * The login codes (sent, verified, refused by step and reason) and their texts (accepted or not
 * by the SMSC or gateway, by delivery and reason): src/accounts/login-code-counts.ts.
 */
function watchLoginCodes(service: Service, registry: Registry): void {
  const counts = service.accounts.codes.counts
  tallyOf(registry, 'kns_sms_sent_total', 'Texts (login codes) the SMSC or gateway accepted, by delivery (log: written to the log instead)', counts.smsSent)
  tallyOf(registry, 'kns_sms_failed_total',
    'Texts (login codes) not accepted, by delivery and reason (timeout, network, refused, throttled, rejected, closed, other)', counts.smsFailed)
  tallyOf(registry, 'kns_login_codes_sent_total', 'Login codes issued (answered 202; texted only to a number with an account)', counts.sent)
  tallyOf(registry, 'kns_login_codes_verified_total', 'Login codes checked right (the login goes on)', counts.verified)
  tallyOf(registry, 'kns_login_codes_refused_total',
    'Login codes refused, by step: send (over a budget: cooldown, number_and_requester, number, requester, prefix) or verify (no_code, expired, used, no_tries_left, wrong_code)',
    counts.refused)
}

/** Call verifications by verstat and failure code (every interface), and PASSporTs signed by credential. */
function watchCalls(service: Service, registry: Registry): void {
  tallyOf(registry, 'kns_call_verifications_total', 'Call verifications by verstat and failure code (none when verified): HTTP and SIP alike', service.callVerifier.counts)
  const credentials = service.shakenCredentials
  tallyOf(registry, 'kns_shaken_signatures_total', 'PASSporTs signed (STI-AS, HTTP and SIP) by credential name and ppt (shaken, div)', credentials.signatures,
    // The credentials are read once (then cached): each one's series exist from the first scrape.
    async () => { await credentials.all().catch(() => {}) })
}

/**
 * Each failed webhook delivery attempt, as a warning: whose (subscription), what (event), which
 * attempt, why (status, reason class) and when it is tried again. Never the URL (its query may
 * hold a token), the secret, or what the endpoint answered (its text is in the deliveries list).
 */
function logFailedDeliveries(app: FastifyInstance, service: Service): void {
  service.events.onDeliveryFailed = (failed) => {
    const next = failed.nextAttemptAt === null ? null : new Date(failed.nextAttemptAt).toISOString()
    app.log.warn({
      webhook: failed.subscriptionId, eventId: failed.eventId, attempt: failed.attempt, status: failed.status, reason: failed.reason, nextAttemptAt: next,
    }, next === null ? 'webhook delivery failed; given up (kns webhook deliveries --failed)' : `webhook delivery attempt failed; retrying at ${next}`)
  }
  app.addHook('onClose', (_instance, done) => {
    service.events.onDeliveryFailed = undefined
    done()
  })
}

/**
 * A Prometheus counter that shows a Tally (src/lib/tally.ts): on each scrape, its counts as
 * they are (they only grow). `before` runs first (e.g. to learn the label values to show at 0).
 */
function tallyOf<L extends string>(registry: Registry, name: string, help: string, source: Tally<L> | (() => Tally<L>), before?: () => Promise<void>): void {
  const read = typeof source === 'function' ? source : () => source
  const tally = read()
  new Counter({
    name, help, registers: [registry], labelNames: tally.labels,
    async collect() {
      await before?.()
      this.reset()
      for (const { values, count } of read().entries()) {
        if (tally.labels.length === 0) this.inc(count)
        else this.inc(values as Partial<Record<L, string>>, count)
      }
    },
  })
}

/**
 * A Prometheus counter that follows counts kept elsewhere (plain numbers that only grow): on
 * each scrape it adds what they grew by. With `label` null, the one count `total`, unlabelled.
 */
function countsOf<K extends string>(
  registry: Registry, name: string, help: string, label: string | null, read: () => Record<K, number>, keys: readonly K[],
): void {
  const reported = new Map<K, number>()
  new Counter({
    name, help, registers: [registry], labelNames: label === null ? [] : [label],
    collect() {
      const now = read()
      for (const key of keys) {
        const grew = now[key] - (reported.get(key) ?? 0)
        if (label === null) this.inc(grew)
        else this.inc({ [label]: key }, grew)
        reported.set(key, now[key])
      }
    },
  })
}
