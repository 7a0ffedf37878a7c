/**
 * `/metrics` for the machine under `kns serve --workers N`: whichever worker a scrape reaches
 * answers with every worker's series added up, so Prometheus sees one target whose counters only
 * grow (one worker's own counters, answered in turn with another's, would read as resets).
 *
 *   worker (scraped) --ask--> primary --collect--> every serving worker --own--> primary --all--> worker
 *
 * Counters and histograms are summed, and stay monotonic: a worker that does not answer in
 * time counts with its last answer, and one that exits leaves its counts behind (retired), so
 * the sum never goes back when a worker dies or stalls. Gauges are summed too unless they say
 * otherwise (`aggregator`: figures every worker reads alike from the database take the max).
 * One collection at a time: scrapes that arrive during one share its answer, so a flood of
 * scrapes costs the workers no more than one.
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

export type Series = MetricObjectWithValues<MetricValue<string>>[]
interface Message { type?: unknown; id?: unknown; metrics?: unknown; text?: unknown; error?: unknown }

/**
 * Default metrics whose sum or average would mislead: a per-process limit is the same in every
 * worker, and one worker's stalled event loop (what its admission control sheds on) must show.
 */
const AGGREGATOR_OF: Record<string, 'max'> = {
  kns_process_max_fds: 'max',
  kns_nodejs_eventloop_lag_seconds: 'max',
  kns_nodejs_eventloop_lag_max_seconds: 'max',
  kns_nodejs_eventloop_lag_p90_seconds: 'max',
  kns_nodejs_eventloop_lag_p99_seconds: 'max',
}

const grows = (metric: Series[number]) => (metric.type as unknown as string) === 'counter' || (metric.type as unknown as string) === 'histogram'

/**
 * The machine's series from its workers' answers: what each live worker said last, plus what
 * the workers that exited had counted (counters and histograms only).
 */
export class MachineSeries {
  readonly #last = new Map<number, Series>()
  #retired: Series = []
  #retiring: Promise<void> = Promise.resolve()

  /** A worker's fresh answer. */
  update(worker: number, series: Series): void {
    this.#last.set(worker, series.map((metric) => (AGGREGATOR_OF[metric.name] === undefined ? metric : { ...metric, aggregator: AGGREGATOR_OF[metric.name]! })))
  }

  /** A worker exited: its counts stay in the sum; its gauges go. One at a time, in order. */
  retire(worker: number): Promise<void> {
    this.#retiring = this.#retiring.then(async () => {
      const last = this.#last.get(worker)
      if (last === undefined) return
      const retired = await AggregatorRegistry.aggregate([this.#retired, last.filter(grows)]).getMetricsAsJSON()
      // Both at once: no render sees the worker's counts twice or not at all.
      this.#retired = retired as Series
      this.#last.delete(worker)
    }).catch(() => { this.#last.delete(worker) })
    return this.#retiring
  }

  /** The sum, in Prometheus' text format, with how many workers run and answered this time. */
  async render(workers: number, reporting: number): Promise<string> {
    const pool = new Registry()
    new Gauge({ name: 'kns_workers', help: 'Worker processes the primary runs (kns serve --workers)', registers: [pool] }).set(workers)
    new Gauge({
      name: 'kns_workers_reporting',
      help: 'Worker processes that answered this scrape in time (the others count with their last answer)',
      registers: [pool],
    }).set(reporting)
    const all = [...this.#last.values(), this.#retired, (await pool.getMetricsAsJSON()) as Series]
    return AggregatorRegistry.aggregate(all).metrics()
  }
}

/** Whether this process is a worker of `kns serve --workers` (not of another cluster manager's). */
export const inWorkerPool = (): boolean => cluster.isWorker && process.env.KNS_WORKER === '1' && process.send !== undefined

/** Thrown when the machine's sum could not be had; the scrape fails rather than mislead. */
export class ClusterMetricsUnavailable extends Error {}

/** To the primary; a primary that has gone is the worker's end anyway, so a failed send is dropped. */
export function toPrimary(message: object): void {
  if (process.connected) process.send!(message, undefined, undefined, () => {})
}

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
        (metrics) => toPrimary({ type: OWN, id, metrics }),
        (err: Error) => toPrimary({ type: OWN, id, error: err.message }),
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
        toPrimary({ type: ASK, id })
      })
    },
    close() {
      process.off('message', onMessage)
      for (const request of waiting.values()) request.reject(new ClusterMetricsUnavailable('closing'))
      waiting.clear()
    },
  }
}

/** A message to a worker that may have just gone: a failed send is dropped, never thrown nor emitted. */
function send(worker: Worker, message: Message): void {
  if (worker.isConnected()) worker.send(message, undefined, undefined, () => {})
}

/** Who waits for a collection's sum: a worker that was scraped, or the primary's own METRICS_LISTEN. */
type Asker = (answer: { text: string } | { error: string }) => void

/**
 * In the primary: answers the workers' asks with the machine's series, and returns the same sum
 * for the primary itself (METRICS_LISTEN under `kns serve --workers` is served by the primary).
 * `serving` is the set of workers that have said they serve (one still starting has no one to answer yet).
 */
export function serveClusterMetrics(serving: ReadonlySet<number>): { render(): Promise<string> } {
  const machine = new MachineSeries()
  /** The collection under way: who asked, and whom it still waits for. */
  let current: { id: string; askers: Asker[]; waiting: Set<number>; reporting: number; timer: NodeJS.Timeout } | undefined
  const finish = () => {
    const collection = current
    if (collection === undefined) return
    current = undefined
    clearTimeout(collection.timer)
    machine.render(Object.keys(cluster.workers ?? {}).length, collection.reporting).then(
      (text) => { for (const asker of collection.askers) asker({ text }) },
      (err: Error) => { for (const asker of collection.askers) asker({ error: err.message }) },
    )
  }
  const ask = (asker: Asker) => {
    if (current !== undefined) {
      current.askers.push(asker)
      return
    }
    const workers = Object.values(cluster.workers ?? {}).filter((w): w is Worker => w !== undefined && w.isConnected() && serving.has(w.id))
    const id = randomUUID()
    current = { id, askers: [asker], waiting: new Set(workers.map((w) => w.id)), reporting: 0, timer: setTimeout(finish, COLLECT_TIMEOUT_MS) }
    for (const each of workers) send(each, { type: COLLECT, id })
    if (current.waiting.size === 0) finish()
  }
  cluster.on('message', (worker: Worker, message: Message) => {
    if (message?.type === ASK && typeof message.id === 'string') {
      const id = message.id
      ask((answer) => send(worker, { type: ALL, id, ...answer }))
    } else if (message?.type === OWN && current !== undefined && message.id === current.id) {
      if (!current.waiting.delete(worker.id)) return
      if (Array.isArray(message.metrics)) {
        machine.update(worker.id, message.metrics as Series)
        current.reporting++
      }
      if (current.waiting.size === 0) finish()
    }
  })
  cluster.on('exit', (worker: Worker) => {
    void machine.retire(worker.id)
    // Not waited for any longer.
    if (current !== undefined && current.waiting.delete(worker.id) && current.waiting.size === 0) finish()
  })
  return {
    render: () => new Promise<string>((resolve, reject) => {
      ask((answer) => ('text' in answer ? resolve(answer.text) : reject(new ClusterMetricsUnavailable(answer.error))))
    }),
  }
}
