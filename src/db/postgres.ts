import { createHash } from 'node:crypto'
import { Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import pg from 'pg'
import { parseIntoClientConfig } from 'pg-connection-string'
import { from as copyFrom } from 'pg-copy-streams'
import type { Database, Executor, Row } from './engine.ts'
import { PriorityGate } from './priority-gate.ts'
import { isDatabaseUnavailable } from './unavailable.ts'

// BIGINT (epoch ms, counters) as JS numbers: every value we store fits in 2^53.
pg.types.setTypeParser(pg.types.builtins.INT8, (v: string) => Number(v))
pg.types.setTypeParser(pg.types.builtins.NUMERIC, (v: string) => Number(v))

const names = new Map<string, string | null>()
const PREPARABLE = /^\s*(SELECT|INSERT|UPDATE|DELETE|WITH)\b/i

/**
 * Data statements run as named prepared statements: each pooled connection parses and plans
 * a statement once, then only binds and executes it, which halves the work of the hot paths.
 */
function statement(sql: string, params: readonly unknown[]): pg.QueryConfig {
  let name = names.get(sql)
  if (name === undefined) {
    // Bounded: only a fixed set of statements is ever hot.
    name = PREPARABLE.test(sql) && names.size < 5000 ? `kns_${createHash('sha1').update(sql).digest('hex').slice(0, 20)}` : null
    names.set(sql, name)
  }
  return name === null ? { text: sql, values: params as unknown[] } : { name, text: sql, values: params as unknown[] }
}

/** Statements on one checked-out connection, or on the pool (each taking a connection, through `gate`, for its statement). */
function executor(client: pg.Pool | pg.PoolClient, gate?: PriorityGate): Executor {
  const query = gate === undefined ? (config: pg.QueryConfig) => client.query(config) : (config: pg.QueryConfig) => gate.with(() => client.query(config))
  return {
    engine: 'postgres',
    async all<T>(sql: string, params: readonly unknown[] = []) {
      return (await query(statement(sql, params))).rows as T[]
    },
    async get<T>(sql: string, params: readonly unknown[] = []) {
      return (await query(statement(sql, params))).rows[0] as T | undefined
    },
    async run(sql: string, params: readonly unknown[] = []) {
      return (await query(statement(sql, params))).rowCount ?? 0
    },
    async copyFrom(sql: string, data: string) {
      // A pool hands out a connection per query: COPY needs one for its whole stream.
      if (!(client instanceof pg.Pool)) {
        await pipeline(Readable.from([data]), client.query(copyFrom(sql)))
        return
      }
      const stream = async () => withCheckedOut(await client.connect(), async (connection) => {
        await pipeline(Readable.from([data]), connection.query(copyFrom(sql)))
      })
      await (gate === undefined ? stream() : gate.with(stream))
    },
  }
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

export class PostgresDatabase implements Database {
  readonly engine = 'postgres' as const
  readonly pool: pg.Pool
  /** For connections outside the pool (LISTEN). */
  readonly connectionString: string
  readonly #executor: Executor
  /** Every use of the pool waits here first, by priority (see PriorityGate). */
  readonly #gate: PriorityGate
  readonly timeouts: PostgresTimeouts
  readonly #isAsyncCommit: boolean
  #asyncCommit: PostgresDatabase | undefined
  #closed = false

  constructor(connectionString: string, options: { max?: number; asyncCommit?: boolean; timeouts?: PostgresTimeouts } = {}) {
    this.connectionString = connectionString
    this.#isAsyncCommit = options.asyncCommit === true
    this.timeouts = options.timeouts ?? { connectMs: 5000, queryMs: 0 }
    const max = options.max ?? 10
    // pg waits forever by default: for a free connection, for a server that accepts the TCP
    // connection but never answers, and for a statement's answer. Bounded, a request fails
    // with 503 DATABASE_UNAVAILABLE instead of hanging while PostgreSQL is down or stuck.
    // Keepalive finds idle connections to a server that vanished without closing them.
    const limits: pg.PoolConfig = {
      max,
      connectionTimeoutMillis: this.timeouts.connectMs,
      ...(this.timeouts.queryMs > 0 ? { query_timeout: this.timeouts.queryMs } : {}),
      keepAlive: true,
      keepAliveInitialDelayMillis: 10_000,
    }
    // The setting as a startup parameter: in force before the first statement, at no extra round trip.
    this.pool = new pg.Pool(this.#isAsyncCommit
      ? { application_name: 'kns-async', ...withServerSetting(connectionString, 'synchronous_commit=off'), ...limits }
      : { connectionString, application_name: 'kns', ...limits })
    // An idle client losing its connection must not crash the process.
    this.pool.on('error', () => {})
    this.#gate = new PriorityGate(max, this.timeouts.connectMs)
    this.#executor = executor(this.pool, this.#gate)
  }

  /** A small pool of its own (at most 4 connections), opened on first use: a CLI command never opens it. */
  get asyncCommit(): PostgresDatabase {
    if (this.#isAsyncCommit) return this
    if (this.#closed) throw new Error('the database is closed')
    this.#asyncCommit ??= new PostgresDatabase(this.connectionString, { max: 4, asyncCommit: true, timeouts: this.timeouts })
    return this.#asyncCommit
  }

  all<T = Row>(sql: string, params?: readonly unknown[]): Promise<T[]> { return this.#executor.all<T>(sql, params) }
  get<T = Row>(sql: string, params?: readonly unknown[]): Promise<T | undefined> { return this.#executor.get<T>(sql, params) }
  run(sql: string, params?: readonly unknown[]): Promise<number> { return this.#executor.run(sql, params) }

  async transaction<T>(fn: (tx: Executor) => Promise<T>): Promise<T> {
    return this.#gate.with(async () => withCheckedOut(await this.pool.connect(), async (client, drop) => {
      try {
        await client.query('BEGIN')
        const result = await fn(executor(client))
        await client.query('COMMIT')
        return result
      } catch (err) {
        // A lost connection has rolled back already (and a ROLLBACK would wait behind a
        // statement past its timeout): it is dropped instead. Any other failure rolls back
        // here; if even that fails, the connection is dropped too.
        if (!isDatabaseUnavailable(err)) await client.query('ROLLBACK').catch(drop)
        throw err
      }
    }))
  }

  async exec(sql: string): Promise<void> {
    await this.#gate.with(() => this.pool.query(sql))
  }

  async ping(): Promise<void> {
    const limit = this.timeouts.queryMs > 0 ? Math.min(PING_TIMEOUT_MS, this.timeouts.queryMs) : PING_TIMEOUT_MS
    await this.#gate.with(() => this.pool.query({ text: 'SELECT 1', query_timeout: limit } as pg.QueryConfig))
  }

  async close(): Promise<void> {
    this.#closed = true
    await Promise.all([this.pool.end(), this.#asyncCommit?.close()])
  }
}
