/**
 * Writing statistics: nodes (upserted by uid) and usage sessions (idempotent). Each call is
 * one transaction: a batch is stored with its rollups whole, or not at all.
 */
import type { Database, Executor } from '../../db/engine.ts'
import { insertRows } from '../sql-rows.ts'
import { refusingOverflow } from '../rollups/bucket-bytes.ts'
import { applyToRollups, type StoredSession } from '../rollups/apply-sessions.ts'
import type { Gateway, WifiNode } from '../../contract/stats-schemas.ts'
import type { Session } from './validate-session.ts'

/**
 * Ingestion is serialised per database (PostgreSQL advisory locks; SQLite transactions are
 * serialised already): rollup maintenance reads what it then updates. Two locks, always taken
 * in this order, so that a bulk import can store raw sessions on one connection while it
 * recomputes rollups on another (import/store-and-rebuild.ts); API ingestion takes both.
 */
const ROLLUPS_LOCK = 0x6b6e7333 // "kns3"
const SESSIONS_LOCK = 0x6b6e7334 // "kns4"

/** Everything: rollups and raw sessions. */
export async function lockStats(db: Database, tx: Executor): Promise<void> {
  await lockRollups(db, tx)
  await lockSessions(db, tx)
}

/** The rollups (recomputing weeks). */
export async function lockRollups(db: Database, tx: Executor): Promise<void> {
  if (db.engine === 'postgres') await tx.run('SELECT pg_advisory_xact_lock($1)', [ROLLUPS_LOCK])
}

/** Inserting raw sessions (with the week marks that come with them). */
export async function lockSessions(db: Database, tx: Executor): Promise<void> {
  if (db.engine === 'postgres') await tx.run('SELECT pg_advisory_xact_lock($1)', [SESSIONS_LOCK])
}

/** Every change to the statistics bumps the version: ETags and cached answers key on it. Returns the new version. */
export async function bumpVersion(tx: Executor, newClients = 0): Promise<number> {
  const row = await tx.get<{ version: number }>('UPDATE stats_meta SET version = version + 1, all_clients = all_clients + $1 WHERE id = 1 RETURNING version', [newClients])
  return Number(row!.version)
}

export interface IngestResult {
  received: number
  inserted: number
  duplicates: number
}

export const SESSION_COLUMNS = ['start_ms', 'session_id', 'network', 'node_uid', 'client_hash', 'end_ms', 'bytes_up', 'bytes_down']

const INSERT_SESSION = `INSERT INTO stats_sessions (${SESSION_COLUMNS.join(', ')}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
  ON CONFLICT (start_ms, session_id) DO NOTHING`

/** Stores the rows that are not stored yet; true at the index of each row stored now. */
export async function insertNewSessions(tx: Executor, rows: unknown[][]): Promise<boolean[]> {
  if (tx.engine === 'sqlite') {
    // In process, one cached statement per row is the cheapest: no SQL to build, no rows returned.
    const stored: boolean[] = []
    for (const row of rows) stored.push((await tx.run(INSERT_SESSION, row)) === 1)
    return stored
  }
  // PostgreSQL: the whole batch as one array per column, one statement.
  const columns = SESSION_COLUMNS.map((_, c) => rows.map((row) => row[c]))
  const inserted = await tx.all<{ start_ms: number; session_id: string }>(
    `INSERT INTO stats_sessions (${SESSION_COLUMNS.join(', ')})
     SELECT * FROM unnest($1::bigint[], $2::text[], $3::text[], $4::text[], $5::text[], $6::bigint[], $7::bigint[], $8::bigint[])
     ON CONFLICT (start_ms, session_id) DO NOTHING RETURNING start_ms, session_id`, columns)
  const fresh = new Set(inserted.map((r) => `${Number(r.start_ms)}|${r.session_id}`))
  return rows.map((row) => fresh.has(`${row[0]}|${row[1]}`))
}

/** Rows of stats_sessions; the same session twice in one batch counts once (the first wins, as across batches). */
export function sessionRows(hashClient: (clientId: string) => string, sessions: readonly Session[]): unknown[][] {
  const byKey = new Map<string, Session>()
  for (const s of sessions) {
    const key = `${s.start}|${s.sessionId}`
    if (!byKey.has(key)) byKey.set(key, s)
  }
  return [...byKey.values()].map((s) => [s.start, s.sessionId, s.network, s.nodeUid, hashClient(s.clientId), s.end, s.bytesUp, s.bytesDown])
}

export async function ingestSessions(db: Database, hashClient: (clientId: string) => string, sessions: readonly Session[]): Promise<IngestResult> {
  const rows = sessionRows(hashClient, sessions)
  if (rows.length === 0) return { received: sessions.length, inserted: 0, duplicates: sessions.length }
  return db.transaction(async (tx) => {
    await lockStats(db, tx)
    const fresh = await insertNewSessions(tx, rows)
    const newSessions: StoredSession[] = []
    rows.forEach((row, i) => {
      if (!fresh[i]) return
      newSessions.push({ network: row[2] as StoredSession['network'], clientHash: row[4] as string, start: row[0] as number, bytes: (row[6] as number) + (row[7] as number) })
    })
    const newClients = await refusingOverflow(() => applyToRollups(tx, newSessions))
    if (newSessions.length > 0) await bumpVersion(tx, newClients)
    return { received: sessions.length, inserted: newSessions.length, duplicates: sessions.length - newSessions.length }
  })
}

export async function upsertGateways(db: Database, gateways: readonly Gateway[], now = Date.now()): Promise<number> {
  // The last occurrence of a uid in a batch wins, as a later PUT would.
  const byUid = new Map(gateways.map((g) => [g.uid, g]))
  const rows = [...byUid.values()].map((g) => [g.uid, g.location, g.lat, g.lon, g.status, g.spectrum, now])
  return db.transaction(async (tx) => {
    await lockStats(db, tx)
    await insertRows(tx, 'stats_gateways', ['uid', 'location', 'lat', 'lon', 'status', 'spectrum', 'updated_at'], rows,
      `ON CONFLICT (uid) DO UPDATE SET location = excluded.location, lat = excluded.lat, lon = excluded.lon,
       status = excluded.status, spectrum = excluded.spectrum, updated_at = excluded.updated_at`)
    await bumpVersion(tx)
    return rows.length
  })
}

export async function upsertWifiNodes(db: Database, nodes: readonly WifiNode[], now = Date.now()): Promise<number> {
  const byUid = new Map(nodes.map((n) => [n.uid, n]))
  const rows = [...byUid.values()].map((n) => [n.uid, n.name, n.status, n.model, n.wifi_level, n.lat, n.lon, now])
  return db.transaction(async (tx) => {
    await lockStats(db, tx)
    await insertRows(tx, 'stats_wifi_nodes', ['uid', 'name', 'status', 'model', 'wifi_level', 'lat', 'lon', 'updated_at'], rows,
      `ON CONFLICT (uid) DO UPDATE SET name = excluded.name, status = excluded.status, model = excluded.model,
       wifi_level = excluded.wifi_level, lat = excluded.lat, lon = excluded.lon, updated_at = excluded.updated_at`)
    await bumpVersion(tx)
    return rows.length
  })
}
