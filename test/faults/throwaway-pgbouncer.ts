/**
 * A PgBouncer of the test's own in front of a throw-away cluster (throwaway-postgres.ts), on a
 * free loopback port, its configuration, pid file and log in a directory of its own. PgBouncer
 * refuses to run as root: it runs as the postgres user (runuser), which needs root. A PgBouncer
 * left behind by a test process killed before its cleanup (its directory is named after that
 * process) is stopped and its directory removed by the next start.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process'
import { chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { connect } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import { freePort, processAlive, sleep } from '../support/process.ts'
import type { ThrowawayCluster } from './throwaway-postgres.ts'

const PGBOUNCER = '/usr/sbin/pgbouncer'
const PREFIX = 'kns-pgbouncer-'
const NAME = /^kns-pgbouncer-(\d+)-/

export interface ThrowawayPgbouncer {
  port: number
  /** `postgres://postgres@127.0.0.1:<port>/<database>`: through PgBouncer to the cluster. */
  url(database?: string): string
  /** What PgBouncer logged (for failure messages). */
  log(): string
  stop(): Promise<void>
}

export interface PgbouncerOptions {
  poolMode: 'session' | 'transaction' | 'statement'
  /** Startup parameters PgBouncer accepts and drops instead of refusing the connection (e.g. `options`). */
  ignoreStartupParameters?: string[]
}

/** Why PgBouncer cannot run here, or undefined when it can. */
export function pgbouncerUnavailableReason(): string | undefined {
  if (!existsSync(PGBOUNCER)) return `${PGBOUNCER} not installed (Debian's pgbouncer)`
  if (process.getuid?.() !== 0) return 'PgBouncer refuses to run as root, and runs as the postgres user through runuser, which needs root'
  return undefined
}

export async function startPgbouncer(cluster: ThrowawayCluster, options: PgbouncerOptions): Promise<ThrowawayPgbouncer> {
  stopOrphans()
  const dir = mkdtempSync(join(tmpdir(), `${PREFIX}${process.pid}-`))
  const port = await freePort()
  const postgres = { uid: Number(run('id', '-u', 'postgres')), gid: Number(run('id', '-g', 'postgres')) }
  chownSync(dir, postgres.uid, postgres.gid)
  const ini = join(dir, 'pgbouncer.ini')
  writeFileSync(join(dir, 'userlist.txt'), '"postgres" ""\n')
  writeFileSync(ini, [
    '[databases]',
    `* = host=127.0.0.1 port=${cluster.port}`,
    '[pgbouncer]',
    'listen_addr = 127.0.0.1',
    `listen_port = ${port}`,
    'unix_socket_dir =',
    'auth_type = trust',
    `auth_file = ${join(dir, 'userlist.txt')}`,
    `pool_mode = ${options.poolMode}`,
    'default_pool_size = 20',
    'max_client_conn = 500',
    `logfile = ${join(dir, 'pgbouncer.log')}`,
    `pidfile = ${join(dir, 'pgbouncer.pid')}`,
    'admin_users = postgres',
    `ignore_startup_parameters = ${['extra_float_digits', ...(options.ignoreStartupParameters ?? [])].join(', ')}`,
    '',
  ].join('\n'))
  for (const file of ['userlist.txt', 'pgbouncer.ini']) chownSync(join(dir, file), postgres.uid, postgres.gid)
  const child: ChildProcess = spawn('runuser', ['-u', 'postgres', '--', PGBOUNCER, ini], { stdio: 'ignore' })
  const log = () => (existsSync(join(dir, 'pgbouncer.log')) ? readFileSync(join(dir, 'pgbouncer.log'), 'utf8') : '')
  let stopped = false
  const bouncer: ThrowawayPgbouncer = {
    port,
    url: (database = 'postgres') => `postgres://postgres@127.0.0.1:${port}/${database}`,
    log,
    async stop() {
      if (stopped) return
      stopped = true
      const pid = pidOf(dir)
      if (pid !== undefined) {
        try { process.kill(pid, 'SIGTERM') } catch { /* gone */ }
      }
      child.kill('SIGTERM')
      for (let i = 0; i < 100 && pid !== undefined && processAlive(pid); i++) await sleep(20)
      rmSync(dir, { recursive: true, force: true })
    },
  }
  try {
    for (let i = 0; ; i++) {
      if (await accepts(port)) break
      if (i > 250 || child.exitCode !== null) throw new Error(`PgBouncer did not start: ${log()}`)
      await sleep(20)
    }
    return bouncer
  } catch (err) {
    await bouncer.stop()
    throw err
  }
}

/**
 * PgBouncer's clients of `database` (its admin console's SHOW CLIENTS), by application_name.
 * `adminUrl` names PgBouncer's `pgbouncer` database as one of its admin_users.
 */
export async function pgbouncerClients(adminUrl: string, database = 'kns'): Promise<string[]> {
  const admin = new pg.Client({ connectionString: adminUrl, connectionTimeoutMillis: 5000 })
  await admin.connect()
  try {
    // The admin console speaks only the simple query protocol.
    const { rows } = await admin.query<{ application_name: string; database: string }>({ text: 'SHOW CLIENTS', queryMode: 'simple' } as pg.QueryConfig)
    return rows.filter((r) => r.database === database).map((r) => r.application_name)
  } finally {
    await admin.end()
  }
}

function run(command: string, ...args: string[]): string {
  return execFileSync(command, args, { encoding: 'utf8' }).trim()
}

function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1')
    socket.once('connect', () => { socket.destroy(); resolve(true) })
    socket.once('error', () => resolve(false))
  })
}

function pidOf(dir: string): number | undefined {
  try {
    const pid = Number(readFileSync(join(dir, 'pgbouncer.pid'), 'utf8').trim())
    return Number.isInteger(pid) && pid > 0 ? pid : undefined
  } catch {
    return undefined
  }
}

/** PgBouncers whose test process is gone: stopped (only a pid whose command line names their own ini), their directories removed. */
function stopOrphans(): void {
  for (const entry of readdirSync(tmpdir())) {
    const creator = NAME.exec(entry)?.[1]
    if (creator === undefined || processAlive(Number(creator))) continue
    const dir = join(tmpdir(), entry)
    const pid = pidOf(dir)
    if (pid !== undefined) {
      try {
        if (readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(join(dir, 'pgbouncer.ini'))) process.kill(pid, 'SIGTERM')
      } catch { /* gone */ }
    }
    rmSync(dir, { recursive: true, force: true })
  }
}
