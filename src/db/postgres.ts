import pg from 'pg'
import type { Database, Executor, Row } from './engine.ts'

// BIGINT (epoch ms, counters) as JS numbers: every value we store fits in 2^53.
pg.types.setTypeParser(pg.types.builtins.INT8, (v: string) => Number(v))
pg.types.setTypeParser(pg.types.builtins.NUMERIC, (v: string) => Number(v))

function executor(client: pg.Pool | pg.PoolClient): Executor {
  return {
    engine: 'postgres',
    async all<T>(sql: string, params: readonly unknown[] = []) {
      return (await client.query(sql, params as unknown[])).rows as T[]
    },
    async get<T>(sql: string, params: readonly unknown[] = []) {
      return (await client.query(sql, params as unknown[])).rows[0] as T | undefined
    },
    async run(sql: string, params: readonly unknown[] = []) {
      return (await client.query(sql, params as unknown[])).rowCount ?? 0
    },
  }
}

export class PostgresDatabase implements Database {
  readonly engine = 'postgres' as const
  readonly pool: pg.Pool
  /** For connections outside the pool (LISTEN). */
  readonly connectionString: string
  readonly #executor: Executor

  constructor(connectionString: string, options: { max?: number } = {}) {
    this.connectionString = connectionString
    this.pool = new pg.Pool({ connectionString, max: options.max ?? 10, application_name: 'kns' })
    // An idle client losing its connection must not crash the process.
    this.pool.on('error', () => {})
    this.#executor = executor(this.pool)
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
    await this.pool.end()
  }
}
