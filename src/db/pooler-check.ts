import pg from 'pg'
import { ConfigError } from '../errors.ts'
import { PostgresDatabase, withServerSetting } from './postgres.ts'

/**
 * Is this a connection to PostgreSQL, or to a pooler that gives each transaction (or each
 * statement) whichever server connection is free, as PgBouncer does in `pool_mode = transaction`?
 * Through one, what the service keeps in a session breaks: LISTEN (another client gets the
 * server connection that listens), session advisory locks (the leader locks), named prepared
 * statements (prepared on one server connection, executed on another), and the async pool's
 * `options` startup parameter (PgBouncer refuses the connection).
 *
 * Asked, not guessed from names or ports: two clients of the service's own, A and B.
 * 1. A asks for its server process id (pg_backend_pid()), then is idle.
 * 2. B opens a transaction and asks the same. PostgreSQL (directly or through a TCP proxy
 *    such as HAProxy, or a pooler in session mode) gives every client a server process of its
 *    own for its whole life: B's can never be A's. A transaction pooler hands B the server
 *    connection A just released (PgBouncer's default reuses the latest one first): the same id.
 * 3. While B's transaction holds it, A asks again: PostgreSQL answers with A's id as before;
 *    a transaction pooler must run it on another server connection, another id.
 * Either difference is proof; none is no proof: a pooler that happened to give A its old server
 * connection back three times while B held another (e.g. `server_round_robin = 1` with several
 * idle) goes unseen. A statement pooler refuses B's transaction, and PgBouncer refuses A's
 * `options`: both are proof too. It costs two connections and a few round trips, once at start.
 */
const PID = 'SELECT pg_backend_pid() AS pid'
const ATTEMPTS = 3

/** What showed that `connectionString` reaches a transaction or statement pooler, or null when nothing did. */
export async function poolerEvidence(connectionString: string, connectTimeoutMs: number): Promise<string | null> {
  const open = async (config: pg.ClientConfig) => {
    const client = new pg.Client({ ...config, application_name: 'kns-pooler-check', connectionTimeoutMillis: connectTimeoutMs, query_timeout: connectTimeoutMs })
    client.on('error', () => {}) // a failure rejects the statement that meets it
    try {
      await client.connect()
    } catch (err) {
      client.end().catch(() => {})
      throw err
    }
    return client
  }
  let a: pg.Client
  try {
    // As the async pool connects (postgres.ts), startup setting included.
    a = await open(withServerSetting(connectionString, 'synchronous_commit=off'))
  } catch (err) {
    if (/unsupported startup parameter/i.test(String((err as Error)?.message))) return `it refused the \`options\` startup parameter (${(err as Error).message})`
    throw err
  }
  const pid = async (client: pg.Client) => Number((await client.query<{ pid: number }>(PID)).rows[0]!.pid)
  try {
    const b = await open({ connectionString })
    try {
      for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
        const first = await pid(a)
        try {
          await b.query('BEGIN')
        } catch (err) {
          if (/statement pooling/i.test(String((err as Error)?.message))) return `it refused a transaction (${(err as Error).message})`
          throw err
        }
        try {
          if (await pid(b) === first) return `a second client's transaction ran on the server session (backend ${first}) the first client had just used`
          const again = await pid(a).catch((err: unknown) => {
            // Only a pooler makes a plain SELECT wait for another client's open transaction: for its server connection.
            if (/Query read timeout/.test(String((err as Error)?.message))) return 'waited'
            throw err
          })
          if (again === 'waited') return 'a statement waited for the server connection another client\'s transaction held'
          if (again !== first) return `one client's statements ran on two server sessions (backends ${first} and ${again})`
        } finally {
          await b.query('COMMIT').catch(() => {})
        }
      }
      return null
    } finally {
      await b.end().catch(() => {})
    }
  } finally {
    await a.end().catch(() => {})
  }
}

/**
 * Refuses to go on (ConfigError) where a pooler would break the service silently: DATABASE_URL
 * through a transaction pooler without DATABASE_DIRECT_URL, or DATABASE_DIRECT_URL itself
 * through one. See docs/operations.md (PgBouncer).
 */
export async function refuseTransactionPooler(db: PostgresDatabase): Promise<void> {
  if (db.pooled) {
    const evidence = await poolerEvidence(db.sessionConnectionString, db.timeouts.connectMs)
    if (evidence === null) return
    throw new ConfigError(`DATABASE_DIRECT_URL reaches a connection pooler, not PostgreSQL: ${evidence}. It must reach the PostgreSQL ` +
      'primary itself (directly, or through a TCP proxy such as HAProxy): LISTEN and the leader locks keep one server session for as long as they run')
  }
  const evidence = await poolerEvidence(db.connectionString, db.timeouts.connectMs)
  if (evidence === null) return
  throw new ConfigError(`DATABASE_URL reaches a connection pooler (PgBouncer in transaction mode, or one that refuses startup options), not PostgreSQL: ${evidence}. ` +
    'Through it, LISTEN/NOTIFY (cache invalidation across processes, transaction_details?wait= wake-ups), the session advisory locks of ' +
    'the leader locks (one ledger watcher at a time), named prepared statements and the async pool\'s startup setting would break. ' +
    'Set DATABASE_DIRECT_URL to a connection that reaches the PostgreSQL primary itself (LISTEN and the leader locks use it); ' +
    'DATABASE_URL stays on the pooler, without prepared statements')
}
