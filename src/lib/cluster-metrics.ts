/**
 * `/metrics` for the machine under `kns serve --workers N`: whichever worker a scrape reaches
 * answers with every worker's series added up, so Prometheus sees one target whose counters only
 * grow (one worker's own counters, answered in turn with another's, would read as resets).
 *
 *   worker (scraped) --ask--> primary --collect--> every worker --own--> primary --all--> worker
 *
 * Counters and histograms are summed; gauges too, unless they say otherwise (`aggregator`: a
 * database-wide figure that every worker reads alike is `max`, process start times `omit`).
 * A worker that does not answer within COLLECT_TIMEOUT_MS is left out of that scrape and
 * `kns_workers_reporting` says how many made it, beside `kns_workers`.
 */
import cluster, { type Worker } from 'node:cluster'
import { randomUUID } from 'node:crypto'
import { AggregatorRegistry, Gauge, Registry, type MetricObjectWithValues, type MetricValue } from 'prom-client'

const ASK = 'kns:metrics:ask'
const COLLECT = 'kns:metrics:collect'
const OWN = 'kns:metrics:own'
const ALL = 'kns:metrics:all'

/** How long the primary waits for each worker's series... */
const COLLECT_TIMEOUT_MS = 2_000
/** ...and a scraped worker for the primary's sum, after which the scrape fails (503). */
const ASK_TIMEOUT_MS = 4_000

type Series = MetricObjectWithValues<MetricValue<string>>[]
interface Message { type?: unknown; id?: unknown; metrics?: unknown; text?: unknown; error?: unknown }

/** Whether this process is a worker of `kns serve --workers` (not of another cluster manager's). */
export const inWorkerPool = (): boolean => cluster.isWorker && process.env.KNS_WORKER === '1' && process.send !== undefined

/** Thrown when the machine's sum could not be had; the scrape fails rather than mislead. */
export class ClusterMetricsUnavailable extends Error {}

/**
 * In a worker: answers the primary's requests for this registry's series, and returns the
 * scrape function: the machine's sum, by way of the primary. Elsewhere: the registry's own.
 */
export function clusterMetrics(registry: Registry): { render(): Promise<string>; close(): void } {
  if (!inWorkerPool()) return { render: () => registry.metrics(), close() {} }
  const waiting = new Map<string, { resolve(text: string): void; reject(err: Error): void }>()
  const onMessage = (message: Message) => {
    if (message?.type === COLLECT && typeof message.id === 'string') {
      const id = message.id
      registry.getMetricsAsJSON().then(
        (metrics) => process.send!({ type: OWN, id, metrics }),
        (err: Error) => process.send!({ type: OWN, id, error: err.message }),
      )
    } else if (message?.type === ALL && typeof message.id === 'string') {
      const request = waiting.get(message.id)
      waiting.delete(message.id)
      if (typeof message.text === 'string') request?.resolve(message.text)
      else request?.reject(new ClusterMetricsUnavailable(String(message.error ?? 'no answer')))
    }
  }
  process.on('message', onMessage)
  return {
    render() {
      const id = randomUUID()
      return new Promise<string>((resolve, reject) => {
        const timer = setTimeout(() => {
          waiting.delete(id)
          reject(new ClusterMetricsUnavailable('the primary process did not add up the workers\' metrics in time'))
        }, ASK_TIMEOUT_MS)
        waiting.set(id, {
          resolve: (text) => { clearTimeout(timer); resolve(text) },
          reject: (err) => { clearTimeout(timer); reject(err) },
        })
        process.send!({ type: ASK, id })
      })
    },
    close() {
      process.off('message', onMessage)
      for (const request of waiting.values()) request.reject(new ClusterMetricsUnavailable('closing'))
      waiting.clear()
    },
  }
}

/** The pool's own two gauges: how many workers run, and how many this answer adds up. */
function poolSeries(workers: number, reporting: number): Promise<Series> {
  const registry = new Registry()
  new Gauge({ name: 'kns_workers', help: 'Worker processes the primary runs (kns serve --workers)', registers: [registry] }).set(workers)
  new Gauge({ name: 'kns_workers_reporting', help: 'Worker processes whose series this answer adds up (the others did not answer in time)', registers: [registry] }).set(reporting)
  return registry.getMetricsAsJSON() as Promise<Series>
}

/** In the primary: gathers the workers' series for each worker that asks, and sends back their sum. */
export function serveClusterMetrics(): void {
  const pending = new Map<string, { series: Series[]; waiting: Set<number>; asker: Worker; timer: NodeJS.Timeout }>()
  const finish = (id: string) => {
    const request = pending.get(id)
    if (request === undefined) return
    pending.delete(id)
    clearTimeout(request.timer)
    const workers = Object.keys(cluster.workers ?? {}).length
    poolSeries(workers, request.series.length)
      .then((pool) => AggregatorRegistry.aggregate([...request.series, pool]).metrics())
      .then(
        (text) => send(request.asker, { type: ALL, id, text }),
        (err: Error) => send(request.asker, { type: ALL, id, error: err.message }),
      )
  }
  cluster.on('message', (worker: Worker, message: Message) => {
    if (message?.type === ASK && typeof message.id === 'string') {
      const id = message.id
      const workers = Object.values(cluster.workers ?? {}).filter((w): w is Worker => w !== undefined && w.isConnected())
      const timer = setTimeout(() => finish(id), COLLECT_TIMEOUT_MS)
      pending.set(id, { series: [], waiting: new Set(workers.map((w) => w.id)), asker: worker, timer })
      for (const each of workers) send(each, { type: COLLECT, id })
    } else if (message?.type === OWN && typeof message.id === 'string') {
      const request = pending.get(message.id)
      if (request === undefined || !request.waiting.delete(worker.id)) return
      if (Array.isArray(message.metrics)) request.series.push(message.metrics as Series)
      if (request.waiting.size === 0) finish(message.id)
    }
  })
  // A worker that dies while asked is not waited for.
  cluster.on('exit', (worker: Worker) => {
    for (const [id, request] of pending) if (request.waiting.delete(worker.id) && request.waiting.size === 0) finish(id)
  })
}

/** A message to a worker that may have just gone: dropped rather than thrown. */
function send(worker: Worker, message: Message): void {
  try {
    if (worker.isConnected()) worker.send(message)
  } catch {
    // the worker is gone; its asker (if it was the one) has gone with it
  }
}
