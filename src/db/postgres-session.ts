import pg from 'pg'

/**
 * Connections of their own that hold session state the pool cannot (the LISTEN of the change
 * signal, a leader lock), and what a failover does to them. Such a session must be on the
 * primary: a standby takes no LISTEN and would hand out advisory locks nobody else sees, and
 * a demoted primary whose sessions survived (a failover behind an address that moved) hears
 * no NOTIFY and guards nothing. So each is checked for a writable server when it starts and
 * every SESSION_CHECK_MS after: a check that fails, times out or finds the server read-only
 * ends the session, and its owner connects again, through the address, to the new primary.
 */

/** How often a dedicated session asks its server whether it is still there and the primary. */
export const SESSION_CHECK_MS = 2000
/** How long it waits for that answer: a connection cut without a word (no RST) fails here. */
export const SESSION_CHECK_TIMEOUT_MS = 2000

/** One round trip, no table: true on a standby, or a primary refusing writes (default_transaction_read_only). */
export const READ_ONLY_QUERY = `SELECT pg_is_in_recovery() OR current_setting('transaction_read_only') = 'on' AS read_only`

/**
 * The server side of a session whose end must be noticed: PostgreSQL keeps a session (and its
 * advisory locks) until TCP says its client is gone, which with the kernel's defaults takes two
 * hours for a client cut off without a word. With these, the server probes after 3 s of silence
 * and gives the session up after 3 unanswered probes a second apart (6 s), or once data it sent
 * stays unacknowledged for 6 s: later than the holder of a leader lock stops believing it holds
 * it (LEASE_MS, 4 s), soon enough for another to lead within seconds. Ignored on a Unix socket.
 * Through a TCP proxy (HAProxy) the server's peer is the proxy, whose own client-side keepalive
 * must do the same (docs/operations.md).
 */
const SERVER_KEEPALIVE = 'SET tcp_keepalives_idle = 3; SET tcp_keepalives_interval = 1; SET tcp_keepalives_count = 3; SET tcp_user_timeout = 6000'

/** Thrown when a dedicated session's server is (or became) read-only: unavailable (SQLSTATE 25006), as a write there would be. */
export class ReadOnlyServerError extends Error {
  readonly code = '25006'
  constructor() {
    super('the database server is read-only (a standby, or a demoted primary): connecting again to reach the primary')
  }
}

export interface SessionOptions {
  connectionString: string
  applicationName: string
  connectTimeoutMs: number
}

/**
 * A connected client on a writable server, with the server-side keepalive above; rejects (and
 * ends the client) when the server cannot be reached or is read-only. Statements on it time out
 * after SESSION_CHECK_TIMEOUT_MS unless they say otherwise.
 */
export async function openSession(options: SessionOptions): Promise<pg.Client> {
  const client = new pg.Client({
    connectionString: options.connectionString, application_name: options.applicationName,
    connectionTimeoutMillis: options.connectTimeoutMs, keepAlive: true, query_timeout: SESSION_CHECK_TIMEOUT_MS,
  })
  // Until its owner listens: a failure now rejects connect() or query() below.
  const early = () => {}
  client.on('error', early)
  try {
    await client.connect()
    await client.query(SERVER_KEEPALIVE)
    await assertWritable(client)
    return client
  } catch (err) {
    client.end().catch(() => {})
    throw err
  } finally {
    client.off('error', early)
  }
}

/** Rejects when the session's server does not answer within SESSION_CHECK_TIMEOUT_MS, or is read-only. */
export async function assertWritable(client: pg.Client): Promise<void> {
  const { rows } = await client.query<{ read_only: boolean }>(READ_ONLY_QUERY)
  if (rows[0]?.read_only !== false) throw new ReadOnlyServerError()
}

/**
 * Runs `check` every SESSION_CHECK_MS (one at a time) until stopped; `lost` is called once,
 * with the failure, when a check fails. Unref'd: it never keeps the process alive.
 */
export function checkEvery(check: () => Promise<void>, lost: (err: unknown) => void): { stop(): void } {
  let running = false
  let stopped = false
  const timer = setInterval(() => {
    if (running || stopped) return
    running = true
    check().then(() => { running = false }, (err: unknown) => {
      running = false
      if (stopped) return
      stopped = true
      clearInterval(timer)
      lost(err)
    })
  }, SESSION_CHECK_MS)
  timer.unref()
  return { stop() { stopped = true; clearInterval(timer) } }
}
