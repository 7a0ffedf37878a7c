import { EventEmitter } from 'node:events'
import type pg from 'pg'
import type { Database, Executor } from './engine.ts'
import { PostgresDatabase } from './postgres.ts'
import { assertWritable, checkEvery, openSession } from './postgres-session.ts'

/**
 * Cross-process change signal for caches. A writer calls signalChange(tx, topic, subject)
 * inside its transaction; every process's ChangeWatcher hears it within a fraction of a
 * second: through LISTEN/NOTIFY on PostgreSQL (delivered on commit), and by polling a
 * per-topic version counter on SQLite (a tiny primary-key read). A subject names what changed
 * (e.g. `token:0x…`), so caches drop only what depends on it; `null` means "assume anything".
 */
export const CHANNEL = 'kns_changes'
const POLL_MS = 200
/** Past this many missed changes a watcher flushes instead of replaying them. */
const MAX_REPLAY = 1000
/** Log rows older than this are pruned; watchers are never that far behind. */
const LOG_RETENTION_MS = 10 * 60_000

export async function signalChange(tx: Executor, topic: string, subject: string): Promise<void> {
  const row = await tx.get<{ version: number }>(
    `INSERT INTO change_versions (topic, version) VALUES ($1, 1)
     ON CONFLICT (topic) DO UPDATE SET version = change_versions.version + 1
     RETURNING version`, [topic])
  const now = Date.now()
  await tx.run('INSERT INTO change_log (topic, version, subject, created_at) VALUES ($1, $2, $3, $4)', [topic, row!.version, subject, now])
  if (Number(row!.version) % 500 === 0) await tx.run('DELETE FROM change_log WHERE topic = $1 AND created_at < $2', [topic, now - LOG_RETENTION_MS])
  if (tx.engine === 'postgres') await notify(tx, topic, subject)
}

/** The NOTIFY every listener parses (`#listen`): topic, a newline, the subject; delivered on commit. */
function notify(tx: Executor, topic: string, subject: string): Promise<unknown> {
  return tx.run('SELECT pg_notify($1, $2)', [CHANNEL, `${topic}\n${subject}`])
}

/**
 * A signal for a hint, not for a cache: on PostgreSQL only the NOTIFY (no version counter or
 * log row, whose one row per topic would make every signalling transaction wait for the
 * previous one's commit); on SQLite, whose writers take turns anyway, the same as
 * signalChange. A listener that misses it (LISTEN reconnecting) must not depend on it for
 * correctness: `transaction_details?wait=` re-reads when its time is up.
 */
export async function signalHint(tx: Executor, topic: string, subject: string): Promise<void> {
  if (tx.engine === 'postgres') await notify(tx, topic, subject)
  else {
    await signalChange(tx, topic, subject)
    sqliteSignals.emit('signal')
  }
}

/**
 * SQLite: a hint signalled in this process makes its watchers poll at once instead of within
 * POLL_MS. Emitted inside the transaction, and still safe: on SQLite every statement waits
 * for the open transaction to end (see SqliteDatabase), so the poll reads after the commit.
 */
const sqliteSignals = new EventEmitter<{ signal: [] }>()
sqliteSignals.setMaxListeners(0)

export class ChangeWatcher extends EventEmitter<{ change: [topic: string, subject: string | null] }> {
  readonly #db: Database
  readonly #topics: Set<string>
  #versions = new Map<string, number>()
  #timer: NodeJS.Timeout | undefined
  #client: pg.Client | undefined
  #checks: { stop(): void } | undefined
  #closed = false

  constructor(db: Database, topics: string[]) {
    super()
    this.#db = db
    this.#topics = new Set(topics)
  }

  async start(): Promise<void> {
    this.#versions = await this.#readVersions()
    if (this.#db instanceof PostgresDatabase) await this.#listen(this.#db)
    // Polling also runs on PostgreSQL, slower: the safety net while LISTEN reconnects.
    const every = this.#db.engine === 'sqlite' ? POLL_MS : POLL_MS * 5
    this.#timer = setInterval(() => this.#pollOnce(), every)
    this.#timer.unref()
    if (this.#db.engine === 'sqlite') sqliteSignals.on('signal', this.#pollSoon)
  }

  #polling = false
  #pollAgain = false
  /** One poll at a time; a poll asked for meanwhile runs right after. */
  #pollOnce(): void {
    if (this.#polling) {
      this.#pollAgain = true
      return
    }
    this.#polling = true
    this.#poll().catch(() => {}).finally(() => {
      this.#polling = false
      if (this.#pollAgain && !this.#closed) {
        this.#pollAgain = false
        this.#pollOnce()
      }
    })
  }

  readonly #pollSoon = (): void => { setImmediate(() => this.#pollOnce()) }

  #flushAll(): void {
    for (const topic of this.#topics) this.emit('change', topic, null)
  }

  /** After the LISTEN connection was lost: try again every second until it is back (or closed). */
  #relisten(db: PostgresDatabase): void {
    if (this.#closed) return
    setTimeout(() => { if (!this.#closed) this.#listen(db).catch(() => this.#relisten(db)) }, 1000).unref()
  }

  /**
   * LISTEN on a session of its own, on the primary (postgres-session.ts): DATABASE_DIRECT_URL
   * when the pool goes through a transaction pooler, which would hand the LISTEN's server
   * connection to other clients. The session is checked every couple of seconds: one cut off
   * without a word, or left on a demoted primary by a failover, hears no NOTIFY and would never
   * say so; it is given up and made again (through the address, on the new primary).
   */
  async #listen(db: PostgresDatabase): Promise<void> {
    // The pool's connect timeout: a server that accepts and never answers must not hold the retries up.
    const client = await openSession({ connectionString: db.sessionConnectionString, applicationName: 'kns-listen', connectTimeoutMs: db.timeouts.connectMs })
    client.on('notification', (message) => {
      if (message.channel !== CHANNEL || message.payload === undefined) return
      const split = message.payload.indexOf('\n')
      const topic = message.payload.slice(0, split)
      if (this.#topics.has(topic)) this.emit('change', topic, message.payload.slice(split + 1))
    })
    let listening = false
    let checks: { stop(): void } | undefined
    const lost = () => {
      // Before LISTEN succeeded, the failure rejects the query below instead; after close(), it is ours.
      if (!listening || this.#closed) return
      listening = false
      checks?.stop()
      // Notifications may have been missed while the connection was failing.
      this.#client = undefined
      this.#flushAll()
      client.end().catch(() => {})
      this.#relisten(db)
    }
    client.on('error', lost)
    client.on('end', lost)
    try {
      await client.query(`LISTEN ${CHANNEL}`)
    } catch (err) {
      client.end().catch(() => {})
      throw err
    }
    if (this.#closed) {
      await client.end().catch(() => {})
      return
    }
    listening = true
    this.#client = client
    checks = checkEvery(() => assertWritable(client), lost)
    this.#checks = checks
  }

  async #readVersions(): Promise<Map<string, number>> {
    const rows = await this.#db.all<{ topic: string; version: number }>('SELECT topic, version FROM change_versions')
    return new Map(rows.map((r) => [r.topic, Number(r.version)]))
  }

  async #poll(): Promise<void> {
    if (this.#closed) return
    const latest = await this.#readVersions()
    for (const topic of this.#topics) {
      const seen = this.#versions.get(topic) ?? 0
      const now = latest.get(topic) ?? 0
      if (now === seen) continue
      // On PostgreSQL NOTIFY already delivered these; replaying them is harmless (idempotent drops).
      if (now - seen > MAX_REPLAY || now < seen) {
        this.emit('change', topic, null)
        continue
      }
      const rows = await this.#db.all<{ subject: string }>(
        'SELECT subject FROM change_log WHERE topic = $1 AND version > $2 AND version <= $3', [topic, seen, now])
      if (rows.length !== now - seen) this.emit('change', topic, null)
      else for (const row of rows) this.emit('change', topic, row.subject)
    }
    this.#versions = latest
  }

  async close(): Promise<void> {
    this.#closed = true
    clearInterval(this.#timer)
    sqliteSignals.off('signal', this.#pollSoon)
    this.#checks?.stop()
    await this.#client?.end().catch(() => {})
  }
}
