import { createHash } from 'node:crypto'
import { Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import pg from 'pg'
import { parseIntoClientConfig } from 'pg-connection-string'
import { from as copyFrom } from 'pg-copy-streams'
import type { Database, DatabaseState, Executor, Row } from './engine.ts'
import { READ_ONLY_QUERY } from './postgres-session.ts'
import { PriorityGate } from './priority-gate.ts'
import { withStatementSpans } from './statement-spans.ts'
import { isDatabaseUnavailable } from './unavailable.ts'

// BIGINT (epoch ms, counters) as JS numbers: every value we store fits in 2^53.
pg.types.setTypeParser(pg.types.builtins.INT8, (v: string) => Number(v))
pg.types.setTypeParser(pg.types.builtins.NUMERIC, (v: string) => Number(v))

const names = new Map<string, string | null>()
const PREPARABLE = /^\s*(SELECT|INSERT|UPDATE|DELETE|WITH)\b/i

/**
 * Data statements run as named prepared statements: each pooled connection parses and plans
 * a statement once, then only binds and executes it, which halves the work of the hot paths.
 * Not through a transaction pooler (`prepare` false): the next statement of the same client may
 * run on another server connection, which never prepared it (PgBouncer before 1.21).
 */
function statement(sql: string, params: readonly unknown[], prepare: boolean): pg.QueryConfig {
  if (!prepare) return { text: sql, values: params as unknown[] }
  let name = names.get(sql)
  if (name === undefined) {
    // Bounded: only a fixed set of statements is ever hot.
    name = PREPARABLE.test(sql) && names.size < 5000 ? `kns_${createHash('sha1').update(sql).digest('hex').slice(0, 20)}` : null
    names.set(sql, name)
  }
  return name === null ? { text: sql, values: params as unknown[] } : { name, text: sql, values: params as unknown[] }
}

/** Where an executor's statements go: one checked-out connection, or the pool (a connection per statement). */
interface Connections {
  query(config: pg.QueryConfig): Promise<pg.QueryResult>
  /** COPY needs one connection for its whole stream: the checked-out one, or one taken for it. */
  stream(fn: (client: pg.PoolClient) => Promise<void>): Promise<void>
}

/** With tracing, each statement a span (statement-spans.ts). */
function executor(connections: Connections, prepare: boolean): Executor {
  return withStatementSpans({
    engine: 'postgres',
    async all<T>(sql: string, params: readonly unknown[] = []) {
      return (await connections.query(statement(sql, params, prepare))).rows as T[]
    },
    async get<T>(sql: string, params: readonly unknown[] = []) {
      return (await connections.query(statement(sql, params, prepare))).rows[0] as T | undefined
    },
    async run(sql: string, params: readonly unknown[] = []) {
      return (await connections.query(statement(sql, params, prepare))).rowCount ?? 0
    },
    async copyFrom(sql: string, data: string) {
      await connections.stream(async (client) => { await pipeline(Readable.from([data]), client.query(copyFrom(sql))) })
    },
  }, 'postgresql')
}

/** The statements of a transaction, on its connection. */
function checkedOut(client: pg.PoolClient): Connections {
  return { query: (config) => client.query(config), stream: (fn) => fn(client) }
}

/**
 * Connection settings for `connectionString` with `-c <setting>` added to the startup options,
 * after those it carries (or else PGOPTIONS, as pg would use). Parsed by pg's own parser, so
 * it takes every form the main pool takes.
 */
export function withServerSetting(connectionString: string, setting: string, env: NodeJS.ProcessEnv = process.env): pg.ClientConfig {
  const config = parseIntoClientConfig(connectionString)
  const given = config.options ?? env.PGOPTIONS
  return { ...config, options: given ? `${given} -c ${setting}` : `-c ${setting}` }
}

/**
 * A connection taken out of the pool for several statements. While it is out, the pool does
 * not listen to it: a connection lost between two statements (PostgreSQL restarting) would
 * be emitted as an 'error' event nobody handles, which ends the process. The statement that
 * fails reports it. A connection that failed as unreachable (lost, or a statement past its
 * timeout, whose answer may still come) is dropped, not handed to the next request.
 */
async function withCheckedOut<T>(client: pg.PoolClient, fn: (client: pg.PoolClient, drop: () => void) => Promise<T>): Promise<T> {
  const ignore = () => {}
  client.on('error', ignore)
  let broken = false
  try {
    return await fn(client, () => { broken = true })
  } catch (err) {
    broken ||= isDatabaseUnavailable(err)
    throw err
  } finally {
    client.off('error', ignore)
    client.release(broken)
  }
}

/** How long the service waits for PostgreSQL: see DATABASE_CONNECT_TIMEOUT_MS and DATABASE_QUERY_TIMEOUT_MS in the README. */
export interface PostgresTimeouts {
  /** For a connection: a free one from the pool, or a new one opened and started. */
  connectMs: number
  /** For the answer to one statement; 0 = no limit. */
  queryMs: number
}

/** A server's statements are bounded by default; a CLI command (an import, a migration) waits as long as its statements take. */
export const SERVER_QUERY_TIMEOUT_MS = 30_000

export function postgresTimeouts(config: { databaseConnectTimeoutMs: number; databaseQueryTimeoutMs: number | undefined }, role: 'server' | 'tool'): PostgresTimeouts {
  return {
    connectMs: config.databaseConnectTimeoutMs,
    queryMs: config.databaseQueryTimeoutMs ?? (role === 'server' ? SERVER_QUERY_TIMEOUT_MS : 0),
  }
}

/** /readyz must answer quickly, whatever statements may take. */
const PING_TIMEOUT_MS = 2000

/** A write that reached a server that takes none: a standby, or a demoted primary (failover in progress). */
const READ_ONLY_SQLSTATE = '25006'

export interface PostgresOptions {
  /** Connections in the pool (default 10). */
  max?: number
  /** The pool whose commits do not wait for the disk (see Database.asyncCommit). */
  asyncCommit?: boolean
  timeouts?: PostgresTimeouts
  /**
   * DATABASE_DIRECT_URL: PostgreSQL itself, for the sessions that need one server connection
   * throughout (LISTEN, leader locks). When set, `connectionString` is taken to be a
   * transaction pooler (PgBouncer): no named prepared statements, and no session settings.
   */
  directUrl?: string
}

export class PostgresDatabase implements Database {
  readonly engine = 'postgres' as const
  /** DATABASE_URL: the pool's connections. */
  readonly connectionString: string
  /** Where connections outside the pool go (LISTEN, leader locks): DATABASE_DIRECT_URL, else DATABASE_URL. */
  readonly sessionConnectionString: string
  /** DATABASE_URL is a transaction pooler (DATABASE_DIRECT_URL is set): each statement or transaction may get another server connection. */
  readonly pooled: boolean
  /** Every use of the pool waits here first, by priority (see PriorityGate). */
  readonly #gate: PriorityGate
  readonly timeouts: PostgresTimeouts
  readonly #options: PostgresOptions
  readonly #isAsyncCommit: boolean
  readonly #max: number
  #pool: pg.Pool
  readonly #executor: Executor
  #asyncCommit: PostgresDatabase | undefined
  #closed = false

  constructor(connectionString: string, options: PostgresOptions = {}) {
    this.connectionString = connectionString
    this.sessionConnectionString = options.directUrl ?? connectionString
    this.pooled = options.directUrl !== undefined
    this.#options = options
    this.#isAsyncCommit = options.asyncCommit === true
    this.timeouts = options.timeouts ?? { connectMs: 5000, queryMs: 0 }
    this.#max = options.max ?? 10
    this.#pool = this.#newPool()
    this.#gate = new PriorityGate(this.#max, this.timeouts.connectMs)
    const pool: Connections = {
      query: (config) => this.#gate.with(() => this.#onPool((pool) => pool.query(config))),
      stream: (fn) => this.#gate.with(() => this.#onPool(async (pool) => withCheckedOut(await pool.connect(), fn))),
    }
    // Through a pooler, the async pool's setting is a SET LOCAL in a transaction of its own (newPool).
    this.#executor = this.#isAsyncCommit && this.pooled ? this.#inTransactions() : executor(pool, !this.pooled)
  }

  /** The pool in use now: replaced when its server turned out to be read-only (#recycle). */
  get pool(): pg.Pool {
    return this.#pool
  }

  #newPool(): pg.Pool {
    // pg waits forever by default: for a free connection, for a server that accepts the TCP
    // connection but never answers, and for a statement's answer. Bounded, a request fails
    // with 503 DATABASE_UNAVAILABLE instead of hanging while PostgreSQL is down or stuck.
    // Keepalive finds idle connections to a server that vanished without closing them.
    const limits: pg.PoolConfig = {
      max: this.#max,
      connectionTimeoutMillis: this.timeouts.connectMs,
      ...(this.timeouts.queryMs > 0 ? { query_timeout: this.timeouts.queryMs } : {}),
      keepAlive: true,
      keepAliveInitialDelayMillis: 10_000,
    }
    // The setting as a startup parameter: in force before the first statement, at no extra
    // round trip. A transaction pooler refuses startup options, and would hand a session
    // setting to other clients' transactions: there each transaction says SET LOCAL instead.
    const pool = new pg.Pool(this.#isAsyncCommit && !this.pooled
      ? { application_name: 'kns-async', ...withServerSetting(this.connectionString, 'synchronous_commit=off'), ...limits }
      : { connectionString: this.connectionString, application_name: this.#isAsyncCommit ? 'kns-async' : 'kns', ...limits })
    // An idle client losing its connection must not crash the process.
    pool.on('error', () => {})
    return pool
  }

  /** Runs `fn` on the pool in use now; a read-only answer from its server replaces that pool. */
  async #onPool<T>(fn: (pool: pg.Pool) => Promise<T>): Promise<T> {
    const pool = this.#pool
    try {
      return await fn(pool)
    } catch (err) {
      if ((err as { code?: unknown }).code === READ_ONLY_SQLSTATE) this.#recycle(pool)
      throw err
    }
  }

  /**
   * The server behind the address is read-only: a demoted primary (or a standby the address
   * pointed at for a while). Its connection is dropped (the statement failed), but the idle
   * ones beside it were opened to the same server and would each fail a request in turn, and
   * /readyz, always served by the most recently used connection, would stay unready after
   * the address moved to the new primary. So the whole pool is replaced: the next statements
   * connect again, through the address. Statements in flight finish on the old pool, which
   * closes each of its connections as it is released.
   */
  #recycle(seen: pg.Pool): void {
    if (this.#closed || seen !== this.#pool) return // replaced already
    this.#pool = this.#newPool()
    seen.end().catch(() => {})
    const asyncCommit = this.#asyncCommit
    if (asyncCommit !== undefined) asyncCommit.#recycle(asyncCommit.#pool)
  }

  /** The async pool through a transaction pooler: a statement alone is a transaction of its own, which can say SET LOCAL. */
  #inTransactions(): Executor {
    return {
      engine: 'postgres',
      all: (sql, params) => this.transaction((tx) => tx.all(sql, params)),
      get: (sql, params) => this.transaction((tx) => tx.get(sql, params)),
      run: (sql, params) => this.transaction((tx) => tx.run(sql, params)),
      copyFrom: (sql, data) => this.transaction((tx) => tx.copyFrom!(sql, data)),
    }
  }

  /** A small pool of its own (at most 4 connections), opened on first use: a CLI command never opens it. */
  get asyncCommit(): PostgresDatabase {
    if (this.#isAsyncCommit) return this
    if (this.#closed) throw new Error('the database is closed')
    this.#asyncCommit ??= new PostgresDatabase(this.connectionString, { ...this.#options, max: 4, asyncCommit: true, timeouts: this.timeouts })
    return this.#asyncCommit
  }

  all<T = Row>(sql: string, params?: readonly unknown[]): Promise<T[]> { return this.#executor.all<T>(sql, params) }
  get<T = Row>(sql: string, params?: readonly unknown[]): Promise<T | undefined> { return this.#executor.get<T>(sql, params) }
  run(sql: string, params?: readonly unknown[]): Promise<number> { return this.#executor.run(sql, params) }

  async transaction<T>(fn: (tx: Executor) => Promise<T>): Promise<T> {
    // The async pool's setting, through a pooler: in the BEGIN's round trip (a simple query may hold several statements).
    const begin = this.#isAsyncCommit && this.pooled ? 'BEGIN; SET LOCAL synchronous_commit TO off' : 'BEGIN'
    return this.#gate.with(() => this.#onPool(async (pool) => withCheckedOut(await pool.connect(), async (client, drop) => {
      try {
        await client.query(begin)
        const result = await fn(executor(checkedOut(client), !this.pooled))
        await client.query('COMMIT')
        return result
      } catch (err) {
        // A lost connection has rolled back already (and a ROLLBACK would wait behind a
        // statement past its timeout): it is dropped instead. Any other failure rolls back
        // here; if even that fails, the connection is dropped too.
        if (!isDatabaseUnavailable(err)) await client.query('ROLLBACK').catch(drop)
        throw err
      }
    })))
  }

  async exec(sql: string): Promise<void> {
    await this.#gate.with(() => this.#onPool((pool) => pool.query(sql)))
  }

  /**
   * One round trip: the server answers, and takes writes. A standby, or a primary demoted
   * behind an address that has not moved yet, answers `read-only`, and the pool is replaced
   * (#recycle), so the next probe reaches whatever the address points at then.
   */
  async ping(): Promise<DatabaseState> {
    const limit = this.timeouts.queryMs > 0 ? Math.min(PING_TIMEOUT_MS, this.timeouts.queryMs) : PING_TIMEOUT_MS
    return this.#gate.with(() => this.#onPool(async (pool) => {
      const { rows } = await pool.query<{ read_only: boolean }>({ text: READ_ONLY_QUERY, query_timeout: limit } as pg.QueryConfig)
      if (rows[0]?.read_only !== true) return 'writable'
      this.#recycle(pool)
      return 'read-only'
    }))
  }

  async close(): Promise<void> {
    this.#closed = true
    await Promise.all([this.#pool.end(), this.#asyncCommit?.close()])
  }
}
