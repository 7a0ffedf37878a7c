import { mkdirSync } from 'node:fs'
import { dirname } from 'node:path'
import { DatabaseSync, type StatementSync, type SQLInputValue } from 'node:sqlite'
import type { Database, DatabaseState, Executor, Row } from './engine.ts'
import { withStatementSpans } from './statement-spans.ts'

const PLACEHOLDER = /\$(\d+)/g

/**
 * `$n` placeholders in SQLite's syntax. When they appear once each, in order ($1, $2, ...),
 * as plain `?`: node:sqlite binds positional arguments by skipping named parameters, and
 * asking SQLite a parameter's name is a linear search, so numbered `?n` cost O(n^2) per
 * execution (a 160-parameter multi-row insert measured 4x slower). Otherwise `?n`.
 */
export function sqliteParameters(sql: string): string {
  let expected = 1
  let sequential = true
  for (const match of sql.matchAll(PLACEHOLDER)) {
    if (Number(match[1]) !== expected++) {
      sequential = false
      break
    }
  }
  return sql.replace(PLACEHOLDER, sequential ? '?' : '?$1')
}

/**
 * Embedded SQLite through node:sqlite. The driver is synchronous and there is one
 * connection, so a transaction whose body awaits must keep everyone else out until it
 * ends: statements outside it queue behind a lock instead of joining it by accident.
 */
export class SqliteDatabase implements Database {
  readonly engine = 'sqlite' as const
  readonly #db: DatabaseSync
  readonly #statements = new Map<string, StatementSync>()
  #lock: Promise<void> | undefined
  #closed = false

  constructor(path: string) {
    if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true })
    this.#db = new DatabaseSync(path)
    // Another process (the CLI) may hold the write lock for a moment. Set first: switching
    // a new database to WAL needs the lock too, when two processes open it at once.
    this.#db.exec('PRAGMA busy_timeout = 5000')
    this.#db.exec('PRAGMA journal_mode = WAL')
    this.#db.exec('PRAGMA synchronous = NORMAL')
    this.#db.exec('PRAGMA foreign_keys = ON')
  }

  #prepare(sql: string): StatementSync {
    let statement = this.#statements.get(sql)
    if (statement === undefined) {
      statement = this.#db.prepare(sqliteParameters(sql))
      statement.setReadBigInts(false)
      if (this.#statements.size > 500) this.#statements.clear()
      this.#statements.set(sql, statement)
    }
    return statement
  }

  #bind(params: readonly unknown[]): SQLInputValue[] {
    return params.map((p) => {
      if (p === undefined) return null
      if (typeof p === 'boolean') return p ? 1 : 0
      return p as SQLInputValue
    })
  }

  // With tracing, each statement a span (statement-spans.ts); without, these functions themselves.
  readonly #direct: Executor = withStatementSpans({
    engine: 'sqlite',
    all: async <T>(sql: string, params: readonly unknown[] = []) => this.#prepare(sql).all(...this.#bind(params)) as T[],
    get: async <T>(sql: string, params: readonly unknown[] = []) => this.#prepare(sql).get(...this.#bind(params)) as T | undefined,
    run: async (sql: string, params: readonly unknown[] = []) => Number(this.#prepare(sql).run(...this.#bind(params)).changes),
  }, 'sqlite')

  // Waiting and proceeding must happen in one synchronous step after the last await:
  // otherwise two waiters released together both pass, and a plain statement could run
  // inside someone else's transaction. Each method below therefore loops inline.

  async all<T = Row>(sql: string, params?: readonly unknown[]): Promise<T[]> {
    while (this.#lock !== undefined) await this.#lock
    return this.#direct.all<T>(sql, params)
  }

  async get<T = Row>(sql: string, params?: readonly unknown[]): Promise<T | undefined> {
    while (this.#lock !== undefined) await this.#lock
    return this.#direct.get<T>(sql, params)
  }

  async run(sql: string, params?: readonly unknown[]): Promise<number> {
    while (this.#lock !== undefined) await this.#lock
    return this.#direct.run(sql, params)
  }

  async transaction<T>(fn: (tx: Executor) => Promise<T>): Promise<T> {
    while (this.#lock !== undefined) await this.#lock
    let release!: () => void
    this.#lock = new Promise<void>((resolve) => { release = resolve })
    try {
      this.#db.exec('BEGIN IMMEDIATE')
      try {
        const result = await fn(this.#direct)
        this.#db.exec('COMMIT')
        return result
      } catch (err) {
        if (this.#db.isTransaction) this.#db.exec('ROLLBACK')
        throw err
      }
    } finally {
      this.#lock = undefined
      release()
    }
  }

  async exec(sql: string): Promise<void> {
    while (this.#lock !== undefined) await this.#lock
    this.#db.exec(sql)
  }

  /** Already so: with WAL and `synchronous = NORMAL` a commit does not wait for the disk (only checkpoints do). */
  get asyncCommit(): SqliteDatabase {
    return this
  }

  async ping(): Promise<DatabaseState> {
    await this.get('SELECT 1 AS ok')
    return 'writable'
  }

  async close(): Promise<void> {
    if (this.#closed) return
    while (this.#lock !== undefined) await this.#lock
    this.#closed = true
    this.#statements.clear()
    this.#db.close()
  }
}
