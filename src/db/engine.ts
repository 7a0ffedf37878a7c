/**
 * The one interface both storage engines implement. SQL is written once, in the common
 * subset of SQLite and PostgreSQL, with PostgreSQL-style `$1` placeholders; the SQLite
 * engine rewrites them. Times are epoch milliseconds (BIGINT), booleans 0/1 integers,
 * so rows look the same on both engines.
 */
export type Row = Record<string, unknown>

/** What ping() found: a database that takes writes, or one that answers reads only. */
export type DatabaseState = 'writable' | 'read-only'

export interface Executor {
  readonly engine: 'sqlite' | 'postgres'
  /** All rows. */
  all<T = Row>(sql: string, params?: readonly unknown[]): Promise<T[]>
  /** First row or undefined. */
  get<T = Row>(sql: string, params?: readonly unknown[]): Promise<T | undefined>
  /** A statement without rows; resolves to the number of rows changed. */
  run(sql: string, params?: readonly unknown[]): Promise<number>
  /**
   * PostgreSQL only: `COPY ... FROM STDIN` fed with `data` in COPY's text format. Bulk loading
   * at several times the rate of INSERT; absent on SQLite.
   */
  copyFrom?(sql: string, data: string): Promise<void>
}

export interface Database extends Executor {
  /**
   * Runs `fn` in one transaction: everything it does through `tx` commits together or
   * not at all. Throwing rolls back and rethrows.
   */
  transaction<T>(fn: (tx: Executor) => Promise<T>): Promise<T>
  /** Multi-statement DDL (migrations). */
  exec(sql: string): Promise<void>
  /**
   * The same database for writes whose commit need not wait for the disk: on PostgreSQL,
   * connections of their own with `synchronous_commit = off` (a crash of the database server
   * can lose the last ~0.6 s of such commits, never a later synchronous one's, since the log
   * is flushed in order); on SQLite the database itself, whose commits do not wait for the
   * disk (WAL with `synchronous = NORMAL`; only checkpoints do). See APPROVAL_COMMIT.
   */
  readonly asyncCommit: Database
  /**
   * Cheap probe for /readyz: rejects when the database does not answer; `read-only` when it
   * answers but takes no writes (PostgreSQL: a standby, or a demoted primary during a failover).
   */
  ping(): Promise<DatabaseState>
  close(): Promise<void>
}

/** True when `err` is a unique-constraint violation on either engine. */
export function isUniqueViolation(err: unknown): boolean {
  const e = err as { code?: unknown; errcode?: unknown; message?: unknown }
  if (e?.code === '23505') return true
  return typeof e?.message === 'string' && e.message.includes('UNIQUE constraint failed')
}
