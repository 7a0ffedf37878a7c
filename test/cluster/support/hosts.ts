/**
 * Hosts for the cluster test: Linux network namespaces on one bridge. The bridge lives in the
 * root namespace with 10.77.0.1/24, so the test process reaches every host directly; each host
 * is a namespace with a veth pair on the bridge, its own address and its loopback up. What runs
 * "on" a host is started through `ip netns exec`, optionally as another user (setpriv, which
 * execs: the pid we hold is the part's own, so `kill -9` kills the part, not a wrapper).
 *
 * Every name the run makes starts with `kc<pid>`: namespaces `kc<pid>-<host>`, the bridge
 * `kc<pid>br`, the bridge-side veths `kc<pid>v<n>` (<= 15 characters, the kernel's limit), the
 * data directory `<tmp>/kns-cluster-<pid>-*`. A later run removes what a crashed one left (its
 * pid no longer alive) before it starts; this run removes its own on `cleanup()`, which the
 * SIGINT/SIGTERM handlers installed here also call.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { closeSync, existsSync, mkdirSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { collectOutput, processAlive } from '../../support/process.ts'

export const SUBNET = '10.77.0'
/** The bridge's address in the root namespace: the test process, as every host sees it. */
export const BRIDGE_ADDRESS = `${SUBNET}.1`

const PREFIX = `kc${process.pid}`
const OWNED_NAME = /^kc(\d+)(?:-|br$|v\d+$|p\d+$)/
const RUN_DIR = /^kns-cluster-(\d+)-/

export interface CommandResult {
  code: number | null
  signal: NodeJS.Signals | null
  stdout: string
  stderr: string
}

export interface SpawnOptions {
  /** Run as this user (and its group), dropping root after entering the namespace. */
  user?: string
  env?: Record<string, string>
  cwd?: string
  /** [source, target] bind mounts private to this process (a host's own /run/postgresql, say). */
  binds?: Array<[string, string]>
}

export interface HostProcess {
  readonly name: string
  readonly host: Host
  readonly pid: number
  readonly logFile: string
  /** Resolves when the process has exited. */
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>
  running(): boolean
  /** Everything it wrote to stdout and stderr so far. */
  log(): string
  /** The last `lines` lines of its log, for a failure message. */
  tail(lines?: number): string
  kill(signal?: NodeJS.Signals): void
  /** SIGTERM, then SIGKILL after `timeoutMs`; resolves on exit. */
  stop(timeoutMs?: number): Promise<void>
}

export class Host {
  readonly name: string
  readonly address: string
  readonly netns: string
  /** The bridge side of the host's veth pair (the switch port): link down cuts the host off. */
  readonly bridgePort: string
  /** A directory of the run for this host's data and logs. */
  readonly dir: string
  readonly #network: Network

  constructor(network: Network, name: string, address: string, index: number) {
    this.#network = network
    this.name = name
    this.address = address
    this.netns = `${PREFIX}-${name}`
    this.bridgePort = `${PREFIX}v${index}`
    this.dir = join(network.runDir, name)
  }

  /** Starts a long-running process on this host; its output goes to `<host dir>/<name>.log`. */
  spawn(name: string, command: string, args: string[], options: SpawnOptions = {}): HostProcess {
    const logFile = join(this.dir, `${name}.log`)
    const fd = openSync(logFile, 'a')
    let child: ChildProcess
    try {
      child = spawn('ip', this.#argv(command, args, options), {
        cwd: options.cwd ?? this.dir, env: options.env ?? baseEnv(), stdio: ['ignore', fd, fd], detached: true,
      })
    } finally {
      closeSync(fd)
    }
    const proc = trackProcess(name, this, child, logFile)
    this.#network.processes.add(proc)
    return proc
  }

  /** Runs a command on this host to completion (output captured). */
  run(command: string, args: string[], options: SpawnOptions & { timeoutMs?: number } = {}): Promise<CommandResult> {
    const child = spawn('ip', this.#argv(command, args, options), { cwd: options.cwd ?? this.dir, env: options.env ?? baseEnv(), stdio: ['ignore', 'pipe', 'pipe'] })
    return collectOutput(child, `${command} ${args.join(' ')} on ${this.name}`, options.timeoutMs ?? 60_000)
  }

  /** Cuts the host off the network (its switch port down): its processes keep running, nothing reaches them. */
  cutLink(): void {
    ip('link', 'set', this.bridgePort, 'down')
  }

  restoreLink(): void {
    ip('link', 'set', this.bridgePort, 'up')
  }

  /** Every process running on this host (in its namespace), whoever started it. */
  pids(): number[] {
    return namespacePids(this.netns)
  }

  /** Signals every process on the host: with SIGKILL, the host crashing (its data stays). */
  killAll(signal: NodeJS.Signals = 'SIGKILL'): void {
    for (const pid of this.pids()) {
      try { process.kill(pid, signal) } catch { /* gone */ }
    }
  }

  #argv(command: string, args: string[], options: SpawnOptions): string[] {
    let argv = [command, ...args]
    if (options.user !== undefined) argv = ['setpriv', `--reuid=${options.user}`, `--regid=${loginGroup(options.user)}`, '--init-groups', ...argv]
    if (options.binds !== undefined && options.binds.length > 0) {
      // `ip netns exec` gives the process a mount namespace of its own: these mounts stay in it.
      const mounts = options.binds.map((_, i) => `mount --bind "$${2 * i + 1}" "$${2 * i + 2}"`).join(' && ')
      const shift = options.binds.length * 2
      argv = ['sh', '-c', `${mounts} && shift ${shift} && exec "$@"`, 'sh', ...options.binds.flat(), ...argv]
    }
    return ['netns', 'exec', this.netns, ...argv]
  }
}

/** The bridge, the hosts on it, the run's directory, and every process started on a host. */
export class Network {
  readonly runDir: string
  readonly bridge = `${PREFIX}br`
  readonly hosts = new Map<string, Host>()
  readonly processes = new Set<HostProcess>()
  readonly #cleanups: (() => void)[] = []
  #cleaned = false

  private constructor(runDir: string) {
    this.runDir = runDir
  }

  /**
   * Removes a crashed run's leftovers, makes the bridge and the hosts. `hosts`: name -> last
   * octet of its address (10.77.0.<n>). The addresses are fixed (deploy/kamailio/dispatcher.list
   * names them), so a cluster run of another live process on this machine is waited for.
   */
  static async create(hosts: Record<string, number>, options: { waitForOtherRunMs?: number } = {}): Promise<Network> {
    const deadline = Date.now() + (options.waitForOtherRunMs ?? 15 * 60_000)
    for (let said = false; ; said = true) {
      sweepOrphans()
      const busy = addressHolder()
      if (busy === undefined) break
      if (Date.now() > deadline) throw new Error(`${BRIDGE_ADDRESS} is still on ${busy}: another cluster run is using ${SUBNET}.0/24`)
      if (!said) process.stderr.write(`# ${BRIDGE_ADDRESS} is on ${busy} (another cluster run): waiting until it is done\n`)
      await new Promise((resolve) => setTimeout(resolve, 2000))
    }
    const network = new Network(mkdtempSync(join(tmpdir(), `kns-cluster-${process.pid}-`)))
    live.add(network)
    installSignalHandlers()
    try {
      spawnSync('chmod', ['755', network.runDir])
      ip('link', 'add', network.bridge, 'type', 'bridge')
      ip('addr', 'add', `${BRIDGE_ADDRESS}/24`, 'dev', network.bridge)
      ip('link', 'set', network.bridge, 'up')
      let index = 0
      for (const [name, octet] of Object.entries(hosts)) network.#addHost(name, `${SUBNET}.${octet}`, index++)
      return network
    } catch (err) {
      network.cleanup()
      throw err
    }
  }

  host(name: string): Host {
    const host = this.hosts.get(name)
    if (host === undefined) throw new Error(`no host ${name}`)
    return host
  }

  #addHost(name: string, address: string, index: number): void {
    const host = new Host(this, name, address, index)
    this.hosts.set(name, host)
    mkdirSync(host.dir, { mode: 0o755 })
    const peer = `${PREFIX}p${index}`
    ip('netns', 'add', host.netns)
    ip('link', 'add', host.bridgePort, 'type', 'veth', 'peer', 'name', peer)
    ip('link', 'set', host.bridgePort, 'master', this.bridge, 'up')
    ip('link', 'set', peer, 'netns', host.netns)
    ip('-n', host.netns, 'link', 'set', peer, 'name', 'eth0')
    ip('-n', host.netns, 'addr', 'add', `${address}/24`, 'dev', 'eth0')
    ip('-n', host.netns, 'link', 'set', 'eth0', 'up')
    ip('-n', host.netns, 'link', 'set', 'lo', 'up')
  }

  /**
   * cleanup(), then waits (at most 5 s) until the processes it killed have exited, and checks
   * that nothing of the run is left: a namespace, a link or the directory would be a bug here.
   */
  async close(): Promise<void> {
    const exits = [...this.processes].map((p) => p.exited)
    this.cleanup()
    await Promise.race([Promise.all(exits), new Promise((resolve) => setTimeout(resolve, 5000))])
    const namespaces = (spawnSync('ip', ['netns', 'list'], { encoding: 'utf8' }).stdout ?? '').split('\n').filter((l) => l.startsWith(`${PREFIX}-`))
    const links = (spawnSync('ip', ['-o', 'link', 'show'], { encoding: 'utf8' }).stdout ?? '').split('\n')
      .map((l) => /^\d+:\s+([^:@\s]+)/.exec(l)?.[1] ?? '').filter((name) => name.startsWith(PREFIX))
    const left = [...namespaces, ...links, ...(existsSync(this.runDir) ? [this.runDir] : [])]
    if (left.length > 0) throw new Error(`the cluster run left ${left.join(', ')}`)
  }

  /** Something of the run outside its namespaces and directory, undone by cleanup() (synchronously). */
  onCleanup(undo: () => void): void {
    this.#cleanups.push(undo)
  }

  /**
   * Kills every process in the run's namespaces (whoever started it), deletes the namespaces,
   * the veths, the bridge and the run's directory. Synchronous, so a signal handler can call
   * it; safe to call twice.
   */
  cleanup(): void {
    if (this.#cleaned) return
    this.#cleaned = true
    live.delete(this)
    for (const proc of this.processes) proc.kill('SIGKILL')
    for (const host of this.hosts.values()) removeNamespace(host.netns)
    for (const host of this.hosts.values()) spawnSync('ip', ['link', 'del', host.bridgePort], { stdio: 'ignore' })
    spawnSync('ip', ['link', 'del', this.bridge], { stdio: 'ignore' })
    rmSync(this.runDir, { recursive: true, force: true })
    for (const undo of this.#cleanups.splice(0)) undo()
  }
}

/** A minimal environment for a part: nothing of the test's own (DATABASE_URL, ...) leaks in. */
export function baseEnv(extra: Record<string, string> = {}): Record<string, string> {
  return { PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin', LANG: 'C.UTF-8', ...extra }
}

/** Gives a directory (and what is in it) to a user and its login group: a part that drops root writes there. */
export function chownTree(path: string, user: string): void {
  const result = spawnSync('chown', ['-R', `${user}:`, path], { encoding: 'utf8' })
  if (result.status !== 0) throw new Error(`chown -R ${user} ${path} failed: ${result.stderr}`)
}

const groups = new Map<string, string>()

/** The user's login group (its gid), as setpriv needs it named. */
function loginGroup(user: string): string {
  let gid = groups.get(user)
  if (gid === undefined) {
    const result = spawnSync('id', ['-g', user], { encoding: 'utf8' })
    if (result.status !== 0) throw new Error(`no user ${user}: ${result.stderr}`)
    gid = result.stdout.trim()
    groups.set(user, gid)
  }
  return gid
}

function ip(...args: string[]): void {
  const result = spawnSync('ip', args, { encoding: 'utf8' })
  if (result.status !== 0) throw new Error(`ip ${args.join(' ')} failed: ${result.stderr || result.error?.message}`)
}

function trackProcess(name: string, host: Host, child: ChildProcess, logFile: string): HostProcess {
  let exitState: { code: number | null; signal: NodeJS.Signals | null } | undefined
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.on('exit', (code, signal) => { exitState = { code, signal }; resolve(exitState) })
    child.on('error', () => { exitState = { code: null, signal: null }; resolve(exitState) })
  })
  child.unref()
  const read = () => {
    try {
      return readFileSync(logFile, 'utf8')
    } catch {
      return ''
    }
  }
  const proc: HostProcess = {
    name, host, logFile, exited,
    pid: child.pid ?? -1,
    running: () => exitState === undefined,
    log: read,
    tail: (lines = 40) => read().split('\n').slice(-lines - 1).join('\n'),
    kill(signal = 'SIGTERM') {
      if (exitState !== undefined) return
      try {
        // The process group (detached): a part's own children go with it.
        process.kill(-proc.pid, signal)
      } catch {
        try { child.kill(signal) } catch { /* gone */ }
      }
    },
    async stop(timeoutMs = 10_000) {
      proc.kill('SIGTERM')
      const timer = setTimeout(() => proc.kill('SIGKILL'), timeoutMs)
      try {
        await exited
      } finally {
        clearTimeout(timer)
      }
    },
  }
  return proc
}

function namespacePids(netns: string): number[] {
  const out = spawnSync('ip', ['netns', 'pids', netns], { encoding: 'utf8' }).stdout ?? ''
  return out.split('\n').filter((p) => /^\d+$/.test(p)).map(Number)
}

/** Kills whatever runs in the namespace (`ip netns pids`), then deletes it. */
function removeNamespace(netns: string): void {
  for (let attempt = 0; attempt < 20; attempt++) {
    const pids = namespacePids(netns)
    if (pids.length === 0) break
    for (const pid of pids) {
      try { process.kill(pid, 'SIGKILL') } catch { /* gone */ }
    }
    spawnSync('sleep', ['0.05'])
  }
  spawnSync('ip', ['netns', 'del', netns], { stdio: 'ignore' })
}

/** Namespaces, links and run directories named after a process that no longer runs. */
export function sweepOrphans(): void {
  const orphan = (name: string) => {
    const pid = OWNED_NAME.exec(name)?.[1]
    return pid !== undefined && !processAlive(Number(pid))
  }
  const namespaces = spawnSync('ip', ['netns', 'list'], { encoding: 'utf8' }).stdout ?? ''
  for (const line of namespaces.split('\n')) {
    const name = line.trim().split(/\s+/)[0] ?? ''
    if (orphan(name)) removeNamespace(name)
  }
  const links = spawnSync('ip', ['-o', 'link', 'show'], { encoding: 'utf8' }).stdout ?? ''
  for (const line of links.split('\n')) {
    const name = /^\d+:\s+([^:@\s]+)/.exec(line)?.[1] ?? ''
    if (orphan(name)) spawnSync('ip', ['link', 'del', name], { stdio: 'ignore' })
  }
  for (const entry of readdirSync(tmpdir())) {
    const pid = RUN_DIR.exec(entry)?.[1]
    if (pid !== undefined && !processAlive(Number(pid))) rmSync(join(tmpdir(), entry), { recursive: true, force: true })
  }
}

/** The interface that holds the bridge address already (another live run), if any. */
function addressHolder(): string | undefined {
  const listed = spawnSync('ip', ['-o', '-4', 'addr', 'show'], { encoding: 'utf8' })
  // A failed listing is not a free address (seen once: spawnSync ip ELOOP while another run held it).
  if (listed.status !== 0) return `(unknown: ip addr show failed: ${listed.stderr || listed.error?.message})`
  const out = listed.stdout
  return out.split('\n').find((line) => line.includes(` ${BRIDGE_ADDRESS}/`))?.split(/\s+/)[1]
}

const live = new Set<Network>()
let handlersInstalled = false

/** On SIGINT/SIGTERM (a CI timeout, Ctrl-C): clean up, then die of the signal as we would have. */
function installSignalHandlers(): void {
  if (handlersInstalled) return
  handlersInstalled = true
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.once(signal, () => {
      for (const network of [...live]) network.cleanup()
      process.kill(process.pid, signal)
    })
  }
  process.once('exit', () => {
    for (const network of [...live]) network.cleanup()
  })
}
