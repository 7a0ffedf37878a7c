import type pg from 'pg'
import type { Database } from './engine.ts'
import { PostgresDatabase } from './postgres.ts'
import { checkEvery, openSession, READ_ONLY_QUERY, ReadOnlyServerError, SESSION_CHECK_MS, SESSION_CHECK_TIMEOUT_MS } from './postgres-session.ts'

/**
 * "Exactly one process does this at a time" across the processes serving one database.
 * PostgreSQL: a session advisory lock held on a connection of its own (DATABASE_DIRECT_URL
 * when the pool goes through a transaction pooler), keyed by the schema and the job's name;
 * when the holder dies its connection ends, the lock is released, and the next process asking
 * (every few seconds) takes over. SQLite: the database is one server's, which always holds it.
 *
 * How fast leadership moves (docs/operations.md, PostgreSQL failover):
 * - the holder's connection ends visibly (process killed, backend terminated, server stopped
 *   or restarted by a failover): `held` turns false at once, and the server has released it;
 * - the holder's session goes silent (a network cut, a failover behind an address that keeps
 *   the old connection): the session is asked every SESSION_CHECK_MS, and `held` is a lease:
 *   true only within LEASE_MS of the last answer that found the server writable. So a holder
 *   stops at most LEASE_MS (4 s) after it last heard its server;
 * - the server gives a silent holder's lock up after 6 s without an answer from it (the
 *   session's keepalive, postgres-session.ts), later than the holder stops: the next process
 *   takes over within about 8 s of a cut (its 2 s retry included);
 * - a failover to another server: advisory locks are not replicated, so the new primary has
 *   none, and a standby process takes the lock there at once; the old holder keeps believing it
 *   leads until its own session fails or its lease runs out (4 s at most). The jobs under this
 *   lock (the ledger watcher) are idempotent for that overlap.
 */
/** A held lock is `held` this long after its session last answered (a check every SESSION_CHECK_MS, answered within SESSION_CHECK_TIMEOUT_MS). */
export const LEASE_MS = SESSION_CHECK_MS + SESSION_CHECK_TIMEOUT_MS

export class LeaderLock {
  readonly #db: Database
  readonly #name: string
  #client: pg.Client | undefined
  #checks: { stop(): void } | undefined
  #held = false
  #closed = false
  /** When the lock's session last answered and was on a writable server. */
  #confirmedAt = 0

  constructor(db: Database, name: string) {
    this.#db = db
    this.#name = name
  }

  get held(): boolean {
    if (this.#db.engine === 'sqlite') return !this.#closed
    return this.#held && Date.now() - this.#confirmedAt < LEASE_MS
  }

  /**
   * Takes the lock when no one holds it; true when this process holds it (now or already).
   * Rejects when the server cannot be asked, or is read-only (ReadOnlyServerError: the lock
   * would be taken on a standby, where no process on the primary sees it).
   */
  async acquire(): Promise<boolean> {
    if (this.#closed) return false
    if (!(this.#db instanceof PostgresDatabase)) return true
    // Held: the checks keep it confirmed, or give it up (the lease says whether they still do).
    if (this.#held) return this.held
    const db = this.#db
    const client = this.#client ?? await this.#connect(db)
    // Whether the server is the primary, in the same round trip: a standby (the address pointing
    // at it during a failover) hands out advisory locks too, which no process on the primary sees.
    let rows: Array<{ locked: boolean; read_only: boolean }>
    try {
      ({ rows } = await client.query<{ locked: boolean; read_only: boolean }>(
        `SELECT pg_try_advisory_lock(hashtext(current_schema() || ':' || $1::text)) AS locked, (${READ_ONLY_QUERY}) AS read_only`, [this.#name]))
    } catch (err) {
      // No answer in time, or the connection failed: a new one next time.
      if (this.#client === client) this.#drop()
      throw err
    }
    if (rows[0]?.read_only !== false) {
      this.#drop()
      throw new ReadOnlyServerError()
    }
    if (rows[0]?.locked !== true || this.#client !== client) return false
    this.#held = true
    this.#confirmedAt = Date.now()
    this.#checks = checkEvery(async () => {
      const { rows } = await client.query<{ read_only: boolean }>(READ_ONLY_QUERY)
      if (rows[0]?.read_only !== false) throw new Error('read-only')
      if (this.#client === client) this.#confirmedAt = Date.now()
    }, () => { if (this.#client === client) this.#drop() })
    return this.held
  }

  async #connect(db: PostgresDatabase): Promise<pg.Client> {
    const client = await openSession({ connectionString: db.sessionConnectionString, applicationName: `kns-${this.#name}`, connectTimeoutMs: db.timeouts.connectMs })
    const lost = () => {
      // The connection is gone, and the lock with it: another process may take over now.
      if (this.#client === client) this.#drop()
      client.end().catch(() => {})
    }
    client.on('error', lost)
    client.on('end', lost)
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
    this.#checks?.stop()
    this.#checks = undefined
    client?.end().catch(() => {})
  }

  /** Releases the lock (ending its connection). */
  async close(): Promise<void> {
    this.#closed = true
    this.#held = false
    this.#checks?.stop()
    const client = this.#client
    this.#client = undefined
    await client?.end().catch(() => {})
  }
}
