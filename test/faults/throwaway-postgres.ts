/**
 * A PostgreSQL cluster of the test's own, to stop, start and freeze at will: the shared one
 * on 5432 serves every other test and must never go down. Debian's wrappers
 * (pg_createcluster, pg_ctlcluster, pg_dropcluster) create it as the postgres user, which
 * needs root.
 */
import { execFile } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { appendFileSync, existsSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { freePort, processAlive } from '../support/process.ts'

const run = promisify(execFile)
const WRAPPERS = ['/usr/bin/pg_createcluster', '/usr/bin/pg_ctlcluster', '/usr/bin/pg_dropcluster']

export interface ThrowawayCluster {
  name: string
  port: number
  /** Superuser connection to its `postgres` database (trust authentication on 127.0.0.1). */
  url: string
  /** Its data directory (owned by postgres); the configuration is in /etc/postgresql. */
  dataDir: string
  /** `pg_ctlcluster stop -m fast`: every session is terminated, the log flushed, then the server exits. */
  stop(): Promise<void>
  start(): Promise<void>
  /** A standby (createThrowawayCluster({ standbyOf })) becomes a primary: `pg_ctlcluster promote`. */
  promote(): Promise<void>
  /** Listens on `address` too (besides 127.0.0.1), trusting clients in `cidr`; restarts the server. */
  listenOn(address: string, cidr: string): Promise<void>
  /** SIGSTOP to the postmaster and every backend: connections stay open, nothing answers. */
  freeze(): void
  thaw(): void
  /**
   * Stops the server, empties its data directory, lets `fill` lay another server's files in
   * it (a base backup), gives them to postgres, and starts it: the cluster keeps its name,
   * port and configuration, and serves the other server's data.
   */
  replaceData(fill: (dataDir: string) => Promise<void>): Promise<void>
  /** Stops (thawing first) and deletes the cluster, its data and its log. Safe to call twice. */
  drop(): Promise<void>
}

/** Why the cluster cannot be made here, or undefined when it can. */
export function unavailableReason(): string | undefined {
  if (process.platform !== 'linux') return 'needs Linux (Debian postgresql-common wrappers)'
  const missing = WRAPPERS.filter((path) => !existsSync(path))
  if (missing.length > 0) return `${missing.join(', ')} not installed (Debian postgresql-common)`
  if (process.getuid?.() !== 0) return 'pg_createcluster needs root (it creates the cluster as the postgres user)'
  if (serverVersion() === undefined) return 'no PostgreSQL server under /usr/lib/postgresql'
  return undefined
}

function serverVersion(): string | undefined {
  if (!existsSync('/usr/lib/postgresql')) return undefined
  const versions = readdirSync('/usr/lib/postgresql').filter((v) => existsSync(`/usr/lib/postgresql/${v}/bin/postgres`))
  return versions.sort((a, b) => Number(b) - Number(a))[0]
}

/** Named after the creating process, so that a later run can tell an orphan from a cluster in use. */
const NAME = /^kns_fault_(\d+)_[0-9a-f]+$/

/**
 * A new cluster; with `standbyOf`, a streaming standby of that one (pg_basebackup -R of it:
 * read-only, pg_is_in_recovery() true, until promoted), as a failover target.
 */
export async function createThrowawayCluster(options: { standbyOf?: ThrowawayCluster } = {}): Promise<ThrowawayCluster> {
  const version = serverVersion()!
  await dropOrphans(version)
  const name = `kns_fault_${process.pid}_${randomBytes(4).toString('hex')}`
  const port = await freePort()
  const ctl = (...args: string[]) => run('pg_ctlcluster', ['--skip-systemctl-redirect', version, name, ...args], { timeout: 60_000 })
  const dataDir = `/var/lib/postgresql/${version}/${name}`
  let frozen: number[] = []
  let dropped = false
  const cluster: ThrowawayCluster = {
    name, port, dataDir,
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    async stop() { await ctl('stop', '-m', 'fast') },
    async start() { await ctl('start') },
    async promote() { await ctl('promote') },
    async listenOn(address, cidr) {
      await run('pg_conftool', [version, name, 'set', 'listen_addresses', `127.0.0.1,${address}`])
      appendFileSync(`/etc/postgresql/${version}/${name}/pg_hba.conf`, `host all all ${cidr} trust\n`)
      await ctl('restart')
    },
    freeze() {
      frozen = clusterPids(dataDir)
      for (const pid of frozen) process.kill(pid, 'SIGSTOP')
    },
    thaw() {
      for (const pid of frozen) {
        try { process.kill(pid, 'SIGCONT') } catch { /* exited meanwhile */ }
      }
      frozen = []
    },
    async replaceData(fill) {
      await cluster.stop()
      for (const entry of readdirSync(dataDir)) rmSync(join(dataDir, entry), { recursive: true, force: true })
      await fill(dataDir)
      await run('chown', ['-R', 'postgres:postgres', dataDir])
      await run('chmod', ['0700', dataDir])
      await cluster.start()
    },
    async drop() {
      if (dropped) return
      dropped = true
      cluster.thaw()
      await run('pg_dropcluster', ['--stop', version, name], { timeout: 60_000 })
    },
  }
  try {
    // Small and quick: few connections, and neither initdb nor the server syncs files to the
    // disk. That weakens nothing tested here: a stopped, killed or frozen server's writes are
    // in the operating system's cache either way; only a crash of the machine needs fsync.
    await run('pg_createcluster', [version, name, '-p', String(port), '-o', 'max_connections=40', '-o', 'shared_buffers=16MB',
      '-o', 'fsync=off', '--', '--auth=trust', '--no-sync'], { timeout: 60_000 })
    if (options.standbyOf !== undefined) {
      // Its own configuration (port, paths) stays; its data becomes a copy of the primary's,
      // with standby.signal and primary_conninfo (-R). Trust covers replication on 127.0.0.1.
      await run('find', [dataDir, '-mindepth', '1', '-delete'])
      await run('runuser', ['-u', 'postgres', '--', 'pg_basebackup', '-h', '127.0.0.1', '-p', String(options.standbyOf.port), '-U', 'postgres',
        '-D', dataDir, '-R', '-X', 'stream', '-c', 'fast'], { timeout: 60_000 })
    }
    await cluster.start()
    return cluster
  } catch (err) {
    await cluster.drop().catch(() => {})
    throw err
  }
}

/**
 * Clusters left behind by a test process that was killed before its cleanup ran (a CI
 * timeout): their creator is gone. Those of running processes (parallel runs) are theirs.
 */
async function dropOrphans(version: string): Promise<void> {
  const { stdout } = await run('pg_lsclusters', ['-h'])
  for (const line of stdout.split('\n')) {
    const [lineVersion, name] = line.trim().split(/\s+/)
    const creator = NAME.exec(name ?? '')?.[1]
    if (lineVersion !== version || creator === undefined || processAlive(Number(creator))) continue
    await run('pg_dropcluster', ['--stop', version, name!], { timeout: 60_000 }).catch(() => {})
  }
}

/** The postmaster (first line of postmaster.pid) and its children, from /proc. */
function clusterPids(dataDir: string): number[] {
  const postmaster = Number(readFileSync(`${dataDir}/postmaster.pid`, 'utf8').split('\n')[0])
  const children: number[] = []
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    try {
      // "pid (comm) state ppid ...": comm may contain spaces, so split after the last ')'.
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8')
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1])
      if (ppid === postmaster) children.push(Number(entry))
    } catch {
      // gone
    }
  }
  return [postmaster, ...children]
}
