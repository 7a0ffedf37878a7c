/**
 * Backups as an operator takes and restores them (docs/operations.md, "Backups"), with the
 * engines' own tools and exactly the flags the docs give: PostgreSQL's pg_dump in its custom
 * format and pg_restore into an empty database; SQLite's online backup (the sqlite3 shell's
 * `.backup`). Test code, but written for any PostgreSQL the tests reach: the cluster suite
 * calls it against its Patroni primary through HAProxy.
 */
import { execFile } from 'node:child_process'
import { copyFileSync, existsSync, mkdirSync, readdirSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { promisify } from 'node:util'
import pg from 'pg'

const run = promisify(execFile)

/** The flags docs/operations.md gives operators (test/faults/backup-restore.test.ts holds the doc to them). */
export const PG_DUMP_FLAGS = ['--format=custom']
export const PG_RESTORE_FLAGS = ['--no-owner', '--no-privileges', '--single-transaction', '--exit-on-error']
export const PG_BASEBACKUP_FLAGS = ['--format=tar', '--gzip', '--wal-method=stream', '--checkpoint=fast']

/**
 * The newest PostgreSQL client tools Debian installed, called by their full path: Debian's
 * /usr/bin/pg_dump is a wrapper that picks a version by its own rules, and pg_dump must be at
 * least the server's major version.
 */
function postgresBinDir(): string | undefined {
  const root = '/usr/lib/postgresql'
  if (!existsSync(root)) return undefined
  const versions = readdirSync(root).filter((v) => existsSync(join(root, v, 'bin', 'pg_dump')) && existsSync(join(root, v, 'bin', 'pg_restore')))
  const newest = versions.sort((a, b) => Number(b) - Number(a))[0]
  return newest === undefined ? undefined : join(root, newest, 'bin')
}

/** Why pg_dump/pg_restore cannot be run here, or undefined when they can. */
export function postgresToolsUnavailable(): string | undefined {
  return postgresBinDir() === undefined ? 'no pg_dump and pg_restore under /usr/lib/postgresql/<version>/bin (Debian postgresql-client)' : undefined
}

/** Why the sqlite3 shell cannot be run here, or undefined when it can. */
export function sqliteShellUnavailable(): string | undefined {
  return existsSync('/usr/bin/sqlite3') ? undefined : 'no /usr/bin/sqlite3 (Debian package sqlite3)'
}

/**
 * The connection for libpq: the URL without its password, which goes in PGPASSWORD instead
 * (a password on the command line is in `ps` for every user of the machine). Nothing else of
 * the caller's PG* environment is passed on, so the URL alone says where the tools connect.
 */
function libpqConnection(url: string): { dbname: string; env: Record<string, string> } {
  const parsed = new URL(url)
  const env: Record<string, string> = { PATH: process.env.PATH ?? '/usr/bin:/bin', LANG: 'C.UTF-8' }
  if (parsed.password !== '') env.PGPASSWORD = decodeURIComponent(parsed.password)
  parsed.password = ''
  return { dbname: parsed.toString(), env }
}

async function tool(name: string, args: string[], env: Record<string, string>, timeoutMs: number): Promise<string> {
  const binDir = postgresBinDir()
  if (binDir === undefined) throw new Error(postgresToolsUnavailable())
  try {
    const { stdout } = await run(join(binDir, name), args, { env, timeout: timeoutMs, maxBuffer: 64 * 1024 * 1024 })
    return stdout
  } catch (err) {
    const { stderr, code, signal } = err as { stderr?: string; code?: unknown; signal?: unknown }
    throw new Error(`${name} failed (exit ${String(code)}${signal ? `, ${String(signal)}` : ''}): ${stderr?.trim() || (err as Error).message}`)
  }
}

/**
 * The restore's target on a new server, as docs/operations.md has an operator make it
 * (`createuser`, `createdb -O`): the role the service connects as (made unless it exists) and
 * an empty database it owns. Returns the service's DATABASE_URL for it.
 */
export async function createEmptyDatabase(adminUrl: string, target: { role: string; database: string; password?: string }): Promise<string> {
  for (const name of [target.role, target.database]) {
    if (!/^[a-z_][a-z0-9_]{0,62}$/.test(name)) throw new Error(`not a plain SQL identifier: ${name}`)
  }
  const admin = new pg.Client({ connectionString: adminUrl })
  await admin.connect()
  try {
    const found = await admin.query('SELECT 1 FROM pg_roles WHERE rolname = $1', [target.role])
    const password = target.password === undefined ? '' : ` PASSWORD ${admin.escapeLiteral(target.password)}`
    if (found.rowCount === 0) await admin.query(`CREATE ROLE ${target.role} LOGIN${password}`)
    await admin.query(`CREATE DATABASE ${target.database} OWNER ${target.role}`)
  } finally {
    await admin.end()
  }
  const url = new URL(adminUrl)
  url.username = target.role
  url.password = target.password === undefined ? '' : encodeURIComponent(target.password)
  url.pathname = `/${target.database}`
  return url.toString()
}

export interface Backup {
  file: string
  bytes: number
  /** When pg_dump (or the sqlite3 shell's `.backup`) started and exited (performance.now()), and how long it ran. */
  startedAt: number
  finishedAt: number
  ms: number
  /** The tables whose rows the archive holds (pg_dump's TABLE DATA entries, SQLite's tables); none listed for a base backup. */
  tables: string[]
}

/**
 * `pg_dump --format=custom` of the database `sourceUrl` names (the service's own
 * DATABASE_URL works: its role owns every table), into a new file in `dir`. One consistent
 * snapshot (a REPEATABLE READ transaction) taken while the service keeps writing; sequences
 * are read after it, so never behind the rows. The archive is then listed to its end
 * (`pg_restore --list`), which a truncated or corrupt file fails.
 */
export async function takeBackup(sourceUrl: string, dir: string, options: { timeoutMs?: number } = {}): Promise<Backup> {
  const { dbname, env } = libpqConnection(sourceUrl)
  const file = join(dir, `kns-${new Date().toISOString().replace(/[-:]/g, '').replace(/\.\d+Z$/, 'Z')}-${process.pid}.dump`)
  const started = performance.now()
  await tool('pg_dump', [...PG_DUMP_FLAGS, `--file=${file}`, `--dbname=${dbname}`], env, options.timeoutMs ?? 600_000)
  const finishedAt = performance.now()
  const list = await tool('pg_restore', ['--list', file], env, 60_000)
  const tables = [...list.matchAll(/^\d+; \d+ \d+ TABLE DATA \S+ (\S+) /gm)].map((m) => m[1]!)
  return { file, bytes: statSync(file).size, startedAt: started, finishedAt, ms: finishedAt - started, tables }
}

/**
 * `pg_restore` of `file` into the empty database `targetUrl` names, as its role, in one
 * transaction that stops at the first error (a restore is whole or nothing). Objects are
 * owned by the restoring role (`--no-owner`), and grants to roles of the old server are not
 * replayed (`--no-privileges`): roles are the server's, not the database's, and are not in
 * the archive.
 */
export async function restoreBackup(file: string, targetUrl: string, options: { timeoutMs?: number } = {}): Promise<{ ms: number }> {
  const { dbname, env } = libpqConnection(targetUrl)
  const started = performance.now()
  await tool('pg_restore', [...PG_RESTORE_FLAGS, `--dbname=${dbname}`, file], env,
    options.timeoutMs ?? 600_000)
  return { ms: performance.now() - started }
}

/**
 * A physical base backup of the whole server `sourceUrl` reaches (every database, the roles,
 * the settings), as `pg_basebackup` takes it over the replication protocol: the role needs
 * REPLICATION (or to be a superuser) and pg_hba.conf a `replication` line. Tar format, with the
 * WAL written meanwhile streamed alongside (`pg_wal.tar.gz`), so the copy is consistent on its
 * own, without a WAL archive: restored, it is the server as of the backup's end.
 * `file` is a new directory in `dir` holding base.tar.gz, pg_wal.tar.gz and backup_manifest.
 */
export async function takeBaseBackup(sourceUrl: string, dir: string, options: { timeoutMs?: number } = {}): Promise<Backup> {
  const { dbname, env } = libpqConnection(sourceUrl)
  const target = join(dir, `kns-base-${process.pid}-${Date.now()}`)
  const started = performance.now()
  await tool('pg_basebackup', [...PG_BASEBACKUP_FLAGS, `--pgdata=${target}`, `--dbname=${dbname}`], env, options.timeoutMs ?? 600_000)
  const finishedAt = performance.now()
  const bytes = readdirSync(target).reduce((sum, name) => sum + statSync(join(target, name)).size, 0)
  return { file: target, bytes, startedAt: started, finishedAt, ms: finishedAt - started, tables: [] }
}

/**
 * Lays a base backup out in the empty data directory of a stopped server: the base, then its
 * WAL in pg_wal, checked against the backup's manifest (`pg_verifybackup`: every file's
 * checksum, and the WAL the backup needs). Started, PostgreSQL replays that WAL and opens.
 * The caller owns the directory's ownership and mode (the server's user, 0700).
 */
export async function restoreBaseBackup(backupDir: string, dataDir: string): Promise<{ ms: number }> {
  if (readdirSync(dataDir).length > 0) throw new Error(`${dataDir} is not empty: a base backup goes into an empty data directory`)
  const started = performance.now()
  await run('tar', ['-xzf', join(backupDir, 'base.tar.gz'), '-C', dataDir], { timeout: 600_000 })
  mkdirSync(join(dataDir, 'pg_wal'), { recursive: true })
  await run('tar', ['-xzf', join(backupDir, 'pg_wal.tar.gz'), '-C', join(dataDir, 'pg_wal')], { timeout: 600_000 })
  await tool('pg_verifybackup', [`--manifest-path=${join(backupDir, 'backup_manifest')}`, dataDir], { PATH: process.env.PATH ?? '/usr/bin:/bin' }, 600_000)
  return { ms: performance.now() - started }
}

/**
 * SQLite: the sqlite3 shell's `.backup` of the live `$DATA_DIR/kns.db` into a new file in
 * `dir`. The online backup API copies one consistent state, committed transactions still in
 * the WAL included, while the server goes on writing (WAL: readers do not block the writer).
 * The copy is then checked whole (`PRAGMA integrity_check`).
 */
export async function takeSqliteBackup(dbFile: string, dir: string): Promise<Backup> {
  const file = join(dir, `kns-${process.pid}-${Date.now()}.db`)
  const started = performance.now()
  await sqlite(dbFile, `.backup '${file.replaceAll("'", "''")}'`)
  const finishedAt = performance.now()
  const check = (await sqlite(file, 'PRAGMA integrity_check;')).trim()
  if (check !== 'ok') throw new Error(`the SQLite backup ${file} fails its integrity check: ${check}`)
  const tables = (await sqlite(file, "SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name;")).trim().split('\n')
  return { file, bytes: statSync(file).size, startedAt: started, finishedAt, ms: finishedAt - started, tables }
}

/**
 * Puts a SQLite backup in place as `$DATA_DIR/kns.db` of a data directory no server uses.
 * A `kns.db-wal` or `kns.db-shm` left there belongs to the old file and would be replayed
 * into the restored one: refused.
 */
export function restoreSqliteBackup(file: string, dataDir: string): void {
  const target = join(dataDir, 'kns.db')
  for (const leftover of [target, `${target}-wal`, `${target}-shm`]) {
    if (existsSync(leftover)) throw new Error(`${leftover} exists: move the old database files aside first`)
  }
  copyFileSync(file, target)
}

async function sqlite(file: string, command: string): Promise<string> {
  // A busy timeout: the server's checkpoint can hold the lock for a moment.
  const { stdout } = await run('/usr/bin/sqlite3', ['-cmd', '.timeout 5000', file, command], { timeout: 120_000 })
  return stdout
}
