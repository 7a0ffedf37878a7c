import { createHash } from 'node:crypto'
import { Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import pg from 'pg'
import { parseIntoClientConfig } from 'pg-connection-string'
import { from as copyFrom } from 'pg-copy-streams'
import type { Database, Executor, Row } from './engine.ts'

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

function executor(client: pg.Pool | pg.PoolClient): Executor {
  return {
    engine: 'postgres',
    async all<T>(sql: string, params: readonly unknown[] = []) {
      return (await client.query(statement(sql, params))).rows as T[]
    },
    async get<T>(sql: string, params: readonly unknown[] = []) {
      return (await client.query(statement(sql, params))).rows[0] as T | undefined
    },
    async run(sql: string, params: readonly unknown[] = []) {
      return (await client.query(statement(sql, params))).rowCount ?? 0
    },
    async copyFrom(sql: string, data: string) {
      // A pool hands out a connection per query: COPY needs one for its whole stream.
      const connection = client instanceof pg.Pool ? await client.connect() : client
      try {
        const stream = connection.query(copyFrom(sql))
        await pipeline(Readable.from([data]), stream)
      } finally {
        if (connection !== client) (connection as pg.PoolClient).release()
      }
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

export class PostgresDatabase implements Database {
  readonly engine = 'postgres' as const
  readonly pool: pg.Pool
  /** For connections outside the pool (LISTEN). */
  readonly connectionString: string
  readonly #executor: Executor
  readonly #isAsyncCommit: boolean
  #asyncCommit: PostgresDatabase | undefined
  #closed = false

  constructor(connectionString: string, options: { max?: number; asyncCommit?: boolean } = {}) {
    this.connectionString = connectionString
    this.#isAsyncCommit = options.asyncCommit === true
    const max = options.max ?? 10
    // The setting as a startup parameter: in force before the first statement, at no extra round trip.
    this.pool = new pg.Pool(this.#isAsyncCommit
      ? { application_name: 'kns-async', ...withServerSetting(connectionString, 'synchronous_commit=off'), max }
      : { connectionString, max, application_name: 'kns' })
    // An idle client losing its connection must not crash the process.
    this.pool.on('error', () => {})
    this.#executor = executor(this.pool)
  }

  /** A small pool of its own (at most 4 connections), opened on first use: a CLI command never opens it. */
  get asyncCommit(): PostgresDatabase {
    if (this.#isAsyncCommit) return this
    if (this.#closed) throw new Error('the database is closed')
    this.#asyncCommit ??= new PostgresDatabase(this.connectionString, { max: 4, asyncCommit: true })
    return this.#asyncCommit
  }

  all<T = Row>(sql: string, params?: readonly unknown[]): Promise<T[]> { return this.#executor.all<T>(sql, params) }
  get<T = Row>(sql: string, params?: readonly unknown[]): Promise<T | undefined> { return this.#executor.get<T>(sql, params) }
  run(sql: string, params?: readonly unknown[]): Promise<number> { return this.#executor.run(sql, params) }

  async transaction<T>(fn: (tx: Executor) => Promise<T>): Promise<T> {
    const client = await this.pool.connect()
    try {
      await client.query('BEGIN')
      const result = await fn(executor(client))
      await client.query('COMMIT')
      return result
    } catch (err) {
      await client.query('ROLLBACK').catch(() => {})
      throw err
    } finally {
      client.release()
    }
  }

  async exec(sql: string): Promise<void> {
    await this.pool.query(sql)
  }

  async ping(): Promise<void> {
    await this.pool.query('SELECT 1')
  }

  async close(): Promise<void> {
    this.#closed = true
    await Promise.all([this.pool.end(), this.#asyncCommit?.close()])
  }
}
