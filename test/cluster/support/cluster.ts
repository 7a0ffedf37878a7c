/**
 * The whole KNS cluster of docs/cluster.md, brought up on network namespaces for a test file:
 *
 *   startCluster() -> hosts, etcd x3, Patroni x2 (PostgreSQL 15, synchronous), HAProxy (HTTP and
 *   PostgreSQL), Redis, the KNS database, three `kns serve` nodes, Kamailio's dispatcher
 *   cluster.stop()  -> every process, namespace, link and directory of the run removed
 *
 * Parts start in parallel where they do not depend on each other; every wait has a deadline
 * and fails with the part's log. `timings` says how long each stage took.
 */
import { randomBytes } from 'node:crypto'
import { join } from 'node:path'
import { ROOT } from '../../support/process.ts'
import { startEtcd, type Etcd } from './etcd.ts'
import { startHaproxy, type Haproxy } from './haproxy.ts'
import { baseEnv, BRIDGE_ADDRESS, Network, type CommandResult } from './hosts.ts'
import { dispatcherAddresses, startKamailio, type Kamailio } from './kamailio.ts'
import { KNS_HTTP_PORT, KNS_SIP_PORT, layOutApp, nodeEnv, runKnsOn, startKnsNode, type App, type KnsNode } from './kns-nodes.ts'
import { POSTGRES_PORT, startPatroni, type Patroni } from './patroni.ts'
import { startRedis, type Redis } from './redis.ts'

/** The hosts and the last octet of their addresses (10.77.0.<n>): docs/cluster.md's diagram. */
export const TOPOLOGY = { pg1: 11, pg2: 12, lb: 13, redis: 14, sip: 15, kns1: 21, kns2: 22, kns3: 23 } as const
export const NODE_NAMES = ['kns1', 'kns2', 'kns3'] as const

export interface ClusterSecrets {
  superuserPassword: string
  replicationPassword: string
  knsDatabasePassword: string
  redisPassword: string
  knsSecret: string
}

export interface ClusterOptions {
  /** More environment for every KNS node (SMS_DELIVERY, WEBHOOK_ALLOW_PRIVATE, ...). */
  nodeEnv?: Record<string, string>
  /**
   * Runs once the database is migrated and before the nodes start (create a signing key, a
   * credential...); what it returns is added to every node's environment.
   */
  prepare?: (cluster: PreparedCluster) => Promise<Record<string, string> | void>
}

/** What exists before the nodes start. */
export interface PreparedCluster {
  network: Network
  etcd: Etcd
  patroni: Patroni
  haproxy: Haproxy
  redis: Redis
  secrets: ClusterSecrets
  /** How the nodes run `kns` (the user files they read must belong to: `app.user`). */
  app: App
  /** The kns role's URL to its database, through HAProxy (what the nodes use). */
  databaseUrl: string
  /** The superuser's URL to the postgres database, through HAProxy. */
  superuserUrl: string
  /**
   * `kns <args>` with the nodes' environment, on a node's host (kns1's unless `on` names
   * another), as an operator on a node would run it.
   */
  kns(args: string[], on?: keyof typeof TOPOLOGY): Promise<CommandResult>
}

export interface Cluster extends PreparedCluster {
  nodes: KnsNode[]
  kamailio: Kamailio
  /** Seconds from the start of startCluster to each stage's end. */
  timings: Record<string, number>
  /** Kills everything and removes the run's namespaces, links and directory. */
  stop(): Promise<void>
}

export async function startCluster(options: ClusterOptions = {}): Promise<Cluster> {
  const started = performance.now()
  const timings: Record<string, number> = {}
  const lap = (stage: string) => { timings[stage] = Math.round((performance.now() - started) / 100) / 10 }
  const secrets: ClusterSecrets = {
    superuserPassword: hex(), replicationPassword: hex(), knsDatabasePassword: hex(), redisPassword: hex(), knsSecret: hex(32),
  }
  const network = await Network.create(TOPOLOGY)
  try {
    lap('network')
    const host = (name: keyof typeof TOPOLOGY) => network.host(name)
    const nodeHosts = NODE_NAMES.map((name) => host(name))
    const listed = dispatcherAddresses()
    const sipAddresses = nodeHosts.map((h) => `${h.address}:${KNS_SIP_PORT}`)
    if (JSON.stringify(listed) !== JSON.stringify(sipAddresses)) {
      throw new Error(`deploy/kamailio/dispatcher.list names ${listed.join(', ')}, the cluster's nodes are ${sipAddresses.join(', ')}`)
    }

    const app = layOutApp(network)
    // Independent of the database: started first, ready by the time it is.
    const haproxy = startHaproxy(host('lb'), {
      knsNodes: nodeHosts.map((h) => `${h.address}:${KNS_HTTP_PORT}`),
      postgres: [host('pg1'), host('pg2')].map((h) => `${h.address}:${POSTGRES_PORT}`),
    })
    const kamailio = startKamailio(host('sip'))
    const redisReady = startRedis(host('redis'), secrets.redisPassword)

    const etcd = await startEtcd([host('pg1'), host('pg2'), host('lb')], `kns-${process.pid}`)
    lap('etcd')
    const patroni = await startPatroni([host('pg1'), host('pg2')], etcd.hosts, secrets)
    await patroni.waitHealthy()
    lap('patroni')
    await haproxy.waitServers('postgres_primary', (servers) => servers.filter((s) => s.status === 'UP').length === 1, 'one PostgreSQL primary UP')
    const superuserUrl = `postgres://postgres:${secrets.superuserPassword}@${haproxy.postgresAddress}/postgres`
    const databaseUrl = `postgres://kns:${secrets.knsDatabasePassword}@${haproxy.postgresAddress}/kns`
    await createDatabase(network, superuserUrl, secrets.knsDatabasePassword)
    lap('database')
    const redis = await redisReady
    const settings = {
      databaseUrl, redisUrl: redis.url, publicBaseUrl: haproxy.httpUrl, knsSecret: secrets.knsSecret,
      trustProxy: haproxy.host.address, sipTrustedSources: host('sip').address, extra: options.nodeEnv ?? {},
    }
    const prepared: PreparedCluster = {
      network, etcd, patroni, haproxy, redis, secrets, databaseUrl, superuserUrl,
      app,
      kns: (args, on = 'kns1') => runKnsOn(app, host(on), nodeEnv(app, host(on), settings), args),
    }
    // Once, before the nodes, as a deployment's migration job does.
    const migrated = await prepared.kns(['migrate'])
    if (migrated.code !== 0) throw new Error(`kns migrate failed: ${migrated.stderr}${migrated.stdout}`)
    const extra = (await options.prepare?.(prepared)) ?? {}
    // From now on the CLI has the nodes' whole environment too.
    settings.extra = { ...settings.extra, ...extra }
    lap('migrate')
    const nodes = await Promise.all(NODE_NAMES.map((name, i) =>
      startKnsNode(app, name, nodeHosts[i]!, nodeEnv(app, nodeHosts[i]!, settings))))
    lap('nodes')
    await haproxy.waitServers('kns_nodes', (servers) => servers.length === 3 && servers.every((s) => s.status === 'UP'), 'every KNS node UP')
    await kamailio.waitActive(sipAddresses)
    lap('balancers')
    return {
      ...prepared, nodes, kamailio, timings,
      stop: () => network.close(),
    }
  } catch (err) {
    await network.close()
    throw err
  }
}

/** deploy/postgres/create-database.sql, run by psql as the superuser through HAProxy. */
async function createDatabase(network: Network, superuserUrl: string, password: string): Promise<void> {
  const url = new URL(superuserUrl)
  const result = await network.host('lb').run('psql', [
    '-h', url.hostname, '-p', url.port, '-U', 'postgres', '-d', 'postgres', '-v', 'ON_ERROR_STOP=1', '-q',
    '-v', `kns_password=${password}`, '-f', join(ROOT, 'deploy', 'postgres', 'create-database.sql'),
  ], { env: baseEnv({ PGPASSWORD: decodeURIComponent(url.password), PGCONNECT_TIMEOUT: '5' }), timeoutMs: 30_000 })
  if (result.code !== 0) throw new Error(`create-database.sql failed: ${result.stderr}`)
}

function hex(bytes = 16): string {
  return randomBytes(bytes).toString('hex')
}

export { BRIDGE_ADDRESS }
