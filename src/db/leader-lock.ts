import pg from 'pg'
import type { Database } from './engine.ts'
import { PostgresDatabase } from './postgres.ts'

/**
 * "Exactly one process does this at a time" across the processes serving one database.
 * PostgreSQL: a session advisory lock held on a connection of its own, keyed by the schema
 * and the job's name; when the holder dies its connection ends, the lock is released, and the
 * next process asking (every few seconds) takes over. A holder that loses its connection
 * stops holding at once (`held` turns false). SQLite: the database is one server's, which
 * always holds it.
 */
/** How often a held lock's connection is asked whether it is still there. */
const RECHECK_MS = 10_000
const CHECK_TIMEOUT_MS = 5000

export class LeaderLock {
  readonly #db: Database
  readonly #name: string
  #client: pg.Client | undefined
  #held = false
  #closed = false
  #checkedAt = 0

  constructor(db: Database, name: string) {
    this.#db = db
    this.#name = name
  }

  get held(): boolean {
    return this.#db.engine === 'sqlite' ? !this.#closed : this.#held
  }

  /** Takes the lock when no one holds it; true when this process holds it (now or already). */
  async acquire(): Promise<boolean> {
    if (this.#closed) return false
    if (!(this.#db instanceof PostgresDatabase)) return true
    if (this.#held) {
      // A connection that died silently (a failover behind an address, a NAT forgetting it)
      // sends no event: ask it now and then, or two processes could each believe they hold it.
      if (Date.now() - this.#checkedAt < RECHECK_MS) return true
      try {
        await this.#client!.query('SELECT 1')
        this.#checkedAt = Date.now()
        return true
      } catch {
        this.#drop()
        return false
      }
    }
    const db = this.#db
    const client = this.#client ?? await this.#connect(db)
    const row = await client.query<{ locked: boolean }>(
      `SELECT pg_try_advisory_lock(hashtext(current_schema() || ':' || $1::text)) AS locked`, [this.#name])
    this.#held = row.rows[0]?.locked === true
    this.#checkedAt = Date.now()
    return this.#held
  }

  async #connect(db: PostgresDatabase): Promise<pg.Client> {
    const client = new pg.Client({
      connectionString: db.connectionString, application_name: `kns-${this.#name}`, connectionTimeoutMillis: db.timeouts.connectMs,
      keepAlive: true, query_timeout: CHECK_TIMEOUT_MS,
    })
    const lost = () => {
      // The connection is gone, and the lock with it: another process may take over now.
      if (this.#client === client) {
        this.#held = false
        this.#client = undefined
      }
      client.end().catch(() => {})
    }
    client.on('error', lost)
    client.on('end', lost)
    try {
      await client.connect()
    } catch (err) {
      client.end().catch(() => {})
      throw err
    }
    if (this.#closed) {
      await client.end().catch(() => {})
      throw new Error('closed')
    }
    this.#client = client
    return client
  }

  /** The connection (and so the lock) is given up: another process may take it. */
  #drop(): void {
    const client = this.#client
    this.#client = undefined
    this.#held = false
    client?.end().catch(() => {})
  }

  /** Releases the lock (ending its connection). */
  async close(): Promise<void> {
    this.#closed = true
    this.#held = false
    const client = this.#client
    this.#client = undefined
    await client?.end().catch(() => {})
  }
}
