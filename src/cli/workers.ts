/**
 * `kns serve --workers N` (or WORKERS=N): N server processes on one port, so a machine's every
 * core serves. Each worker listens on a socket of its own with SO_REUSEPORT (see `ownSockets`):
 * the kernel spreads connections (and SIP datagrams) by address, the primary accepts nothing
 * itself. Each worker is a whole server with its own database pool; what must happen once is
 * coordinated through the database as between machines: the ledger watcher by its leader lock,
 * webhook deliveries by their claims, migrations by their advisory lock (run once here first).
 * PostgreSQL only: SQLite has one writer, and its processes would queue behind each other.
 */
import cluster, { type Worker } from 'node:cluster'
import { createSocket } from 'node:dgram'
import { createServer, isIPv6 } from 'node:net'
import { availableParallelism } from 'node:os'
import type { Config } from '../config.ts'
import { ConfigError } from '../errors.ts'
import { listenForMetrics } from '../http/metrics-listener.ts'
import { serveClusterMetrics, toPrimary } from '../lib/cluster-metrics.ts'

/** Restarting a worker that keeps dying is slowed down to at most one a second... */
const RESPAWN_MIN_MS = 1000
/** ...and the primary gives the workers this long to finish in-flight requests on SIGTERM. */
const STOP_GRACE_MS = 15_000

/** `--workers` (wins) or WORKERS: a count, or `auto` for one per core. 1 when neither is set. */
export function workerCount(flag: string | undefined, env: NodeJS.ProcessEnv = process.env): number {
  const raw = (flag ?? env.WORKERS ?? '1').trim()
  if (raw === 'auto') return availableParallelism()
  const n = Number(raw)
  if (!Number.isInteger(n) || n < 1 || n > 256) throw new ConfigError(`--workers / WORKERS must be a whole number from 1 to 256, or auto; got ${JSON.stringify(raw)}`)
  return n
}

/** Refuses several workers on the embedded database, saying what to do instead. */
export function checkWorkers(count: number, config: Pick<Config, 'databaseUrl'>): void {
  if (count > 1 && config.databaseUrl === undefined) {
    throw new ConfigError(`--workers ${count} needs PostgreSQL (DATABASE_URL): the embedded SQLite database has one writer, ` +
      'so its processes would only queue behind each other. Serve SQLite with one process, or move to PostgreSQL')
  }
}

export const isWorker = (): boolean => cluster.isWorker

/**
 * Before the workers bind with SO_REUSEPORT: their ports must be free. Sockets with
 * SO_REUSEPORT share a port with any other of the same user that asks alike, so a second
 * `kns serve --workers` (another version, another database) would silently take half the
 * traffic; a plain bind here fails on a port anyone holds, and the start stops saying so.
 */
export async function checkPortsFree(config: Pick<Config, 'host' | 'port' | 'sip'>): Promise<void> {
  const probes: Array<{ what: string; host: string; port: number; udp: boolean }> = []
  if (config.port !== 0) probes.push({ what: 'PORT', host: config.host, port: config.port, udp: false })
  if (config.sip !== null && config.sip.port !== 0) {
    probes.push({ what: 'SIP_LISTEN (TCP)', host: config.sip.host, port: config.sip.port, udp: false })
    probes.push({ what: 'SIP_LISTEN (UDP)', host: config.sip.host, port: config.sip.port, udp: true })
  }
  for (const probe of probes) {
    try {
      await new Promise<void>((resolve, reject) => {
        if (probe.udp) {
          const socket = createSocket(isIPv6(probe.host) ? 'udp6' : 'udp4')
          socket.once('error', reject)
          socket.bind(probe.port, probe.host, () => socket.close(() => resolve()))
        } else {
          const server = createServer()
          server.once('error', reject)
          server.listen({ port: probe.port, host: probe.host, exclusive: true }, () => server.close(() => resolve()))
        }
      })
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code
      throw new ConfigError(`${probe.what}: ${probe.host}:${probe.port} is ${code === 'EADDRINUSE' ? 'in use (another kns serve?)' : `not available (${code ?? (err as Error).message})`}; ` +
        'the workers share a port only among themselves')
    }
  }
}

/**
 * Whether this process binds sockets of its own with SO_REUSEPORT on `port`: a worker does,
 * unless the port is 0 (each would get another port). Not the primary's shared socket, because
 * node:cluster hands connections out in a way that either loses one handed to a worker that
 * has just died (round-robin) or leaves most kept-alive connections with one worker (a shared
 * accept queue: measured 31 of 33). The kernel hashes each connection's (and datagram's)
 * addresses over the workers' sockets: even, with no hop through the primary; a worker's queued
 * connections are reset when it dies, never left hanging; an SBC's SIP datagrams from one
 * address keep reaching one worker, so its UDP transactions stay matched.
 */
export const ownSockets = (port: number): boolean => cluster.isWorker && port !== 0

/** A worker tells the primary it serves (a listener of its own is not seen by node:cluster). */
export function announceListening(): void {
  if (cluster.isWorker) toPrimary({ kns: 'listening' })
}

/**
 * The primary: forks `count` workers (each runs `kns serve` as a worker), replaces one that
 * dies, and on SIGTERM/SIGINT stops them all (each finishes its requests) and exits. With
 * METRICS_LISTEN it serves /metrics there itself (every worker's sum), listening before any
 * worker starts, so a taken address stops the start.
 */
export async function runPrimary(count: number, log: (line: Record<string, unknown>) => void, metricsListen?: Config['metricsListen']): Promise<void> {
  // A listener that does not take a socket of its own (port 0) shares the primary's, and the
  // workers accept from it themselves: node:cluster's default on Linux (round-robin: the primary
  // accepts and hands each connection over) loses a connection handed to a worker that has just
  // died, never answered nor closed (measured: 3 of 1000 opened as a worker was killed).
  cluster.schedulingPolicy = cluster.SCHED_NONE
  let stopping = false
  const started = new Map<number, number>()
  /** The workers that have said they serve. */
  const serving = new Set<number>()
  const fork = () => {
    const worker = cluster.fork({ KNS_WORKER: '1' })
    // A message to a worker that has just died fails with an 'error' event: not the pool's end.
    worker.on('error', () => {})
    started.set(worker.id, Date.now())
  }
  cluster.on('exit', (worker: Worker, code, signal) => {
    serving.delete(worker.id)
    if (stopping) {
      if (Object.keys(cluster.workers ?? {}).length === 0) process.exit(0)
      return
    }
    const lived = Date.now() - (started.get(worker.id) ?? 0)
    started.delete(worker.id)
    log({ level: 'error', msg: 'worker exited; starting another', pid: worker.process.pid, code, signal })
    setTimeout(fork, Math.max(0, RESPAWN_MIN_MS - lived))
  })
  const stop = (signal: NodeJS.Signals) => {
    if (stopping) return
    stopping = true
    log({ level: 'info', msg: 'shutting down the workers', signal })
    for (const worker of Object.values(cluster.workers ?? {})) worker?.process.kill('SIGTERM')
    setTimeout(() => process.exit(1), STOP_GRACE_MS).unref()
    if (Object.keys(cluster.workers ?? {}).length === 0) process.exit(0)
  }
  const machine = serveClusterMetrics(serving)
  if (metricsListen !== undefined) {
    await listenForMetrics(metricsListen, () => machine.render())
    log({ level: 'info', msg: '/metrics served on METRICS_LISTEN only (every worker\'s sum)', metrics: `${metricsListen.host}:${metricsListen.port}` })
  }
  cluster.on('message', (worker: Worker, message: unknown) => {
    if ((message as { kns?: unknown } | null)?.kns !== 'listening') return
    serving.add(worker.id)
    log({ level: 'info', msg: 'worker listening', pid: worker.process.pid })
  })
  process.once('SIGTERM', () => stop('SIGTERM'))
  process.once('SIGINT', () => stop('SIGINT'))
  for (let i = 0; i < count; i++) fork()
  log({ level: 'info', msg: `serving with ${count} worker processes`, workers: count })
}
