/**
 * The KNS nodes: `kns serve` on a host each, as production runs it. Where the runnable app
 * comes from is `layOutApp()` alone.
 */
import { spawnSync } from 'node:child_process'
import { mkdirSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { NODE, ROOT } from '../../support/process.ts'
import { baseEnv, chownTree, type CommandResult, type Host, type HostProcess, type Network, type SpawnOptions } from './hosts.ts'
import { httpGet, waitFor } from './wait.ts'

export const KNS_HTTP_PORT = 8080
export const KNS_SIP_PORT = 5060

/** How to run `kns`: the interpreter, the script, the user it runs as, V8's code cache. */
export interface App {
  node: string
  script: string
  /** The system user the nodes and their CLI run as (deploy/install.sh user). */
  user: string
  /** NODE_COMPILE_CACHE of every node: the type-stripped modules compiled once, each start faster. */
  compileCache: string
}

const INSTALL = join(ROOT, 'deploy', 'install.sh')
const APP_USER = 'kns'

/**
 * The app the nodes run, laid out as the image is (deploy/docker/Dockerfile): `install.sh
 * build <runDir>/app` (the pages built, production dependencies only) and `install.sh user`;
 * the nodes run `<runDir>/app/bin/kns.js` as kns. Node 24 is the test runner's (the image's
 * base brings its own). A kns user this run had to create is removed with the run.
 */
export function layOutApp(network: Network): App {
  const out = join(network.runDir, 'app')
  const built = spawnSync('bash', [INSTALL, 'build', out], { cwd: ROOT, encoding: 'utf8', timeout: 300_000 })
  if (built.status !== 0) throw new Error(`deploy/install.sh build failed: ${built.stderr}${built.stdout}`)
  if (spawnSync('getent', ['passwd', APP_USER]).status !== 0) {
    const made = spawnSync('bash', [INSTALL, 'user'], { encoding: 'utf8', timeout: 60_000 })
    if (made.status !== 0) throw new Error(`deploy/install.sh user failed: ${made.stderr}${made.stdout}`)
    network.onCleanup(() => {
      spawnSync('userdel', [APP_USER], { stdio: 'ignore' })
      spawnSync('groupdel', [APP_USER], { stdio: 'ignore' })
      rmSync('/var/lib/kns', { recursive: true, force: true })
    })
  }
  return withCompileCache(network.runDir, { node: NODE, script: join(out, 'bin', 'kns.js'), user: APP_USER })
}

function withCompileCache(runDir: string, app: Omit<App, 'compileCache'>): App {
  const compileCache = join(runDir, 'node-compile-cache')
  mkdirSync(compileCache, { recursive: true })
  chownTree(compileCache, app.user)
  return { ...app, compileCache }
}

export interface KnsNode {
  name: string
  host: Host
  process: HostProcess
  /** http://<address>:8080, the node itself (not through HAProxy). */
  url: string
  /** <address>:5060, its SIP redirect interface (UDP and TCP). */
  sipAddress: string
  /** Its environment (without the process basics). */
  env: Record<string, string>
  /** Starts it again (after a stop or a kill) and waits until it is ready. */
  start(): Promise<void>
}

/** The settings shared by every node: the database, Redis, the public URL, the secret, the proxies. */
export interface NodeSettings {
  databaseUrl: string
  redisUrl: string
  publicBaseUrl: string
  knsSecret: string
  /** HAProxy's address: the only peer whose X-Forwarded-For is believed. */
  trustProxy: string
  /** Kamailio's address: the only SIP source answered. */
  sipTrustedSources: string
  /** More variables for every node (a test's own: SMS_DELIVERY, WEBHOOK_ALLOW_PRIVATE, ...). */
  extra?: Record<string, string>
}

/** A node's environment on `host`; its DATA_DIR made there, the app's user's. */
export function nodeEnv(app: App, host: Host, settings: NodeSettings): Record<string, string> {
  const dataDir = join(host.dir, 'kns')
  mkdirSync(dataDir, { recursive: true })
  chownTree(dataDir, app.user)
  return {
    HOST: '0.0.0.0',
    PORT: String(KNS_HTTP_PORT),
    DATA_DIR: dataDir,
    DATABASE_URL: settings.databaseUrl,
    REDIS_URL: settings.redisUrl,
    PUBLIC_BASE_URL: settings.publicBaseUrl,
    KNS_SECRET: settings.knsSecret,
    TRUST_PROXY: settings.trustProxy,
    SIP_LISTEN: `0.0.0.0:${KNS_SIP_PORT}`,
    SIP_TRUSTED_SOURCES: settings.sipTrustedSources,
    LOG_LEVEL: 'info',
    ...settings.extra,
  }
}

/** `kns <args>` on a host with a node's environment (a CLI command against the cluster's database). */
export function runKnsOn(app: App, host: Host, env: Record<string, string>, args: string[], timeoutMs = 60_000): Promise<CommandResult> {
  return host.run(app.node, [app.script, ...args], { ...spawnOptions(app, env), timeoutMs })
}

function spawnOptions(app: App, env: Record<string, string>): SpawnOptions {
  return {
    env: baseEnv({ HOME: env.DATA_DIR!, NODE_NO_WARNINGS: '1', NODE_COMPILE_CACHE: app.compileCache, ...env }),
    cwd: env.DATA_DIR,
    user: app.user,
  }
}

export async function startKnsNode(app: App, name: string, host: Host, env: Record<string, string>): Promise<KnsNode> {
  const launch = () => host.spawn(name, app.node, [app.script, 'serve'], spawnOptions(app, env))
  const node: KnsNode = {
    name, host, env,
    process: launch(),
    url: `http://${host.address}:${KNS_HTTP_PORT}`,
    sipAddress: `${host.address}:${KNS_SIP_PORT}`,
    async start() {
      if (node.process.running()) await node.process.stop()
      node.process = launch()
      await waitReady(node)
    },
  }
  await waitReady(node)
  return node
}

/** /readyz 200: listening, and its database answers. */
export function waitReady(node: KnsNode, timeoutMs = 60_000): Promise<true> {
  return waitFor(`KNS node ${node.name}`, async () => ((await httpGet(`${node.url}/readyz`)).status === 200 ? true : undefined),
    { timeoutMs, processes: [node.process] })
}

/**
 * The sum of a counter's series on one node's /metrics, over the series that carry every label
 * given (e.g. `kns_sip_requests_total`, `{ method: 'INVITE' }`). 0 when there is none yet.
 */
export async function nodeMetric(node: KnsNode, name: string, labels: Record<string, string> = {}): Promise<number> {
  const { status, text } = await httpGet(`${node.url}/metrics`)
  if (status !== 200) throw new Error(`GET ${node.url}/metrics: ${status}`)
  const wanted = Object.entries(labels).map(([label, value]) => `${label}="${value}"`)
  const labelsOf = (series: string) => series.slice(1, -1).split(/,(?=[a-zA-Z_]\w*=")/)
  let sum = 0
  for (const line of text.split('\n')) {
    const match = /^([a-zA-Z_:][\w:]*)(\{[^}]*\})? (\S+)$/.exec(line)
    if (match?.[1] !== name) continue
    const series = match[2] ?? ''
    const present = labelsOf(series)
    if (wanted.every((pair) => present.includes(pair))) sum += Number(match[3])
  }
  return sum
}
