import { signalHint } from '../db/change-signal.ts'
import { APPROVAL_TOPIC, tag } from '../db/change-topics.ts'
import { coalesce, isDatabase, lookupByKey } from '../db/coalesce.ts'
import type { Database, Executor } from '../db/engine.ts'
import { recordEvent, type DecisionEventType } from '../db/outbox.ts'
import type { TransactionDetails } from '../contract/api-types.ts'

/** An event's `data`: transaction_details as the decision left it (see decidedDetails). */
export type DecidedDetails = Omit<TransactionDetails, 'signMessage' | 'phoneLogin'>

export const METHODS = ['sign', 'event'] as const
export type Method = (typeof METHODS)[number]
/**
 * Stored states. A pending approval past its expiry is `expired` as soon as its time is up
 * (statusAt); the expiry sweeper then stores it so, with its event, within seconds.
 */
export type StoredStatus = 'pending' | 'approved' | 'cancelled' | 'expired'
export type Status = StoredStatus

/** Why the owner cancelled: said no (`denied`), or reported a request they never asked for (`not_me`). */
export const CANCEL_REASONS = ['denied', 'not_me'] as const
export type CancelReason = (typeof CANCEL_REASONS)[number]

export interface Approval {
  approvalNumber: string
  apiKeyId: string
  vendorBrand: string
  referenceNumber: string
  requestHash: string
  title: string
  message: string
  successRedirectUrl: string
  cancelRedirectUrl: string
  method: Method
  objectId: string
  phoneNumber: string | null
  status: StoredStatus
  /** The approving address, once approved. */
  wallet: string | null
  /** The signature or transaction digest that approved it. */
  proof: string | null
  createdAt: number
  expiresAt: number
  decidedAt: number | null
  /** Set when cancelled (null for requests cancelled before reasons were recorded). */
  cancelReason: CancelReason | null
}

/** A row of the approvals table as both engines return it. */
export interface ApprovalRow {
  approval_number: string; api_key_id: string; vendor_brand: string; reference_number: string; request_hash: string
  title: string; message: string; success_redirect_url: string; cancel_redirect_url: string; method: Method
  object_id: string; phone_number: string | null; status: StoredStatus; wallet: string | null; proof: string | null
  created_at: number; expires_at: number; decided_at: number | null; cancel_reason: CancelReason | null
}

export function fromRow(r: ApprovalRow): Approval {
  return {
    approvalNumber: r.approval_number, apiKeyId: r.api_key_id, vendorBrand: r.vendor_brand, referenceNumber: r.reference_number,
    requestHash: r.request_hash, title: r.title, message: r.message, successRedirectUrl: r.success_redirect_url,
    cancelRedirectUrl: r.cancel_redirect_url, method: r.method, objectId: r.object_id, phoneNumber: r.phone_number,
    status: r.status, wallet: r.wallet, proof: r.proof, createdAt: Number(r.created_at), expiresAt: Number(r.expires_at),
    decidedAt: r.decided_at === null ? null : Number(r.decided_at), cancelReason: r.cancel_reason ?? null,
  }
}

/** The state a caller sees at `now`: pending turns into expired at `expiresAt`. */
export function statusAt(approval: Approval, now: number): Status {
  return approval.status === 'pending' && now >= approval.expiresAt ? 'expired' : approval.status
}

export async function findApproval(db: Executor, approvalNumber: string): Promise<Approval | null> {
  const row = await lookupByKey<ApprovalRow>(db, 'SELECT * FROM approvals WHERE approval_number = $1',
    'SELECT * FROM approvals WHERE approval_number = ANY($1::text[])', 'approval_number', approvalNumber)
  return row === undefined ? null : fromRow(row)
}

export async function findByReference(db: Executor, apiKeyId: string, referenceNumber: string): Promise<Approval | null> {
  const row = await db.get<ApprovalRow>('SELECT * FROM approvals WHERE api_key_id = $1 AND reference_number = $2', [apiKeyId, referenceNumber])
  return row === undefined ? null : fromRow(row)
}

const APPROVAL_COLUMNS = `approval_number, api_key_id, vendor_brand, reference_number, request_hash, title, message,
  success_redirect_url, cancel_redirect_url, method, object_id, phone_number, status, wallet, proof, created_at, expires_at, decided_at`

/**
 * The number's link is checked in the statement that inserts: an approval names the token the
 * number points at now, even when the caller resolved the number from a cache (PhoneLinks) or
 * the number was re-linked between resolving and inserting. A row failing it is simply not
 * inserted; the caller tells that apart from a reused referenceNumber (see createApproval).
 * A scalar subquery, not EXISTS: PostgreSQL turns `... OR EXISTS` into a hashed subplan that
 * reads the whole numbers table per statement; this stays one primary-key probe per row.
 */
const LINK_STILL_HOLDS = (phone: string, objectId: string) =>
  `(${phone} IS NULL OR (SELECT object_id FROM numbers WHERE phone = ${phone}) = ${objectId})`

const INSERT_ONE = `INSERT INTO approvals (${APPROVAL_COLUMNS})
  SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, CAST($12 AS TEXT), $13, CAST($14 AS TEXT), CAST($15 AS TEXT),
    CAST($16 AS BIGINT), CAST($17 AS BIGINT), CAST($18 AS BIGINT)
  WHERE ${LINK_STILL_HOLDS('CAST($12 AS TEXT)', '$11')}
  ON CONFLICT (api_key_id, reference_number) DO NOTHING`

/**
 * PostgreSQL: a batch as one JSON array of rows (JSON.stringify is native; pg's escaping of
 * array parameters, one per column, cost more than the insert). New approvals have no
 * wallet, proof or decision yet.
 */
const INSERT_MANY = `INSERT INTO approvals (${APPROVAL_COLUMNS})
  SELECT e ->> 0, e ->> 1, e ->> 2, e ->> 3, e ->> 4, e ->> 5, e ->> 6, e ->> 7, e ->> 8, e ->> 9, e ->> 10, e ->> 11, e ->> 12,
    NULL, NULL, CAST(e ->> 13 AS BIGINT), CAST(e ->> 14 AS BIGINT), NULL
  FROM jsonb_array_elements(CAST($1 AS jsonb)) e
  WHERE ${LINK_STILL_HOLDS('e ->> 11', 'e ->> 10')}
  ON CONFLICT (api_key_id, reference_number) DO NOTHING RETURNING approval_number`

async function insertOne(ex: Executor, a: Approval): Promise<boolean> {
  const inserted = await ex.run(INSERT_ONE,
    [a.approvalNumber, a.apiKeyId, a.vendorBrand, a.referenceNumber, a.requestHash, a.title, a.message, a.successRedirectUrl,
      a.cancelRedirectUrl, a.method, a.objectId, a.phoneNumber, a.status, a.wallet, a.proof, a.createdAt, a.expiresAt, a.decidedAt])
  return inserted === 1
}

const asError = (err: unknown) => err instanceof Error ? err : new Error(String(err))

/** Concurrent creations stored together: one commit (SQLite) or one statement (PostgreSQL). */
async function insertBatch(db: Database, batch: Approval[]): Promise<(boolean | Error)[]> {
  if (batch.length === 1) return [await insertOne(db, batch[0]!)]
  if (db.engine === 'sqlite') {
    // A failing statement rolls back only itself; the others still commit.
    return db.transaction(async (tx) => {
      const out: (boolean | Error)[] = []
      for (const a of batch) out.push(await insertOne(tx, a).catch(asError))
      return out
    })
  }
  if (batch.some((a) => a.status !== 'pending' || a.wallet !== null || a.proof !== null || a.decidedAt !== null)) {
    throw new Error('only new (pending) approvals are inserted')
  }
  const rows = JSON.stringify(batch.map((a) => [a.approvalNumber, a.apiKeyId, a.vendorBrand, a.referenceNumber, a.requestHash, a.title,
    a.message, a.successRedirectUrl, a.cancelRedirectUrl, a.method, a.objectId, a.phoneNumber, a.status, a.createdAt, a.expiresAt]))
  let stored: Set<string>
  try {
    stored = new Set((await db.all<{ approval_number: string }>(INSERT_MANY, [rows])).map((r) => r.approval_number))
  } catch {
    // One bad row fails the whole statement: one statement each, so only that one fails.
    return Promise.all(batch.map((a) => insertOne(db, a).catch(asError)))
  }
  return batch.map((a) => stored.has(a.approvalNumber))
}

const inserters = new WeakMap<Database, (a: Approval) => Promise<boolean>>()

/**
 * Inserts unless the key already used this referenceNumber or the number no longer points at
 * the approval's token; false in those cases. One batch at a time per database: requests
 * arriving meanwhile go in the next batch, so under load there is one commit (and on
 * PostgreSQL one round trip) per batch rather than per request.
 */
export async function insertApproval(ex: Executor, a: Approval): Promise<boolean> {
  if (!isDatabase(ex)) return insertOne(ex, a)
  let insert = inserters.get(ex)
  if (insert === undefined) inserters.set(ex, insert = coalesce((batch: Approval[]) => insertBatch(ex, batch), { inFlight: 1 }))
  return insert(a)
}

/**
 * pending -> approved, only while still pending and unexpired at `now`. The condition in the
 * UPDATE makes concurrent deciders safe: exactly one of them changes the row.
 */
export async function markApproved(db: Database, approvalNumber: string, wallet: string, proof: string, now: number): Promise<boolean> {
  return decide(db, 'approval.approved', now, (tx) => tx.all<ApprovalRow>(
    `UPDATE approvals SET status = 'approved', wallet = $1, proof = $2, decided_at = $3
     WHERE approval_number = $4 AND status = 'pending' AND expires_at > $3 RETURNING *`,
    [wallet, proof, now, approvalNumber]))
}

/** pending -> cancelled, under the same rule as markApproved. */
export async function markCancelled(db: Database, approvalNumber: string, reason: CancelReason, now: number): Promise<boolean> {
  return decide(db, 'approval.cancelled', now, (tx) => tx.all<ApprovalRow>(
    `UPDATE approvals SET status = 'cancelled', decided_at = $1, cancel_reason = $3
     WHERE approval_number = $2 AND status = 'pending' AND expires_at > $1 RETURNING *`,
    [now, approvalNumber, reason]))
}

/**
 * A decision, its event (outbox) and its signal in one transaction: the event and its
 * deliveries exist exactly when the decision does, and the requests waiting for it (in any
 * process) hear of it when it is committed, never before and never not at all.
 */
async function decide(db: Database, type: DecisionEventType, now: number, update: (tx: Executor) => Promise<ApprovalRow[]>): Promise<boolean> {
  return db.transaction(async (tx) => {
    const [row] = await update(tx)
    if (row === undefined) return false
    await recordDecision(tx, fromRow(row), type, now)
    return true
  })
}

async function recordDecision(tx: Executor, approval: Approval, type: DecisionEventType, occurredAt: number): Promise<void> {
  await recordEvent(tx, { type, approvalNumber: approval.approvalNumber, apiKeyId: approval.apiKeyId, occurredAt, data: { ...decidedDetails(approval) } })
  await signalHint(tx, APPROVAL_TOPIC, tag.approval(approval.approvalNumber))
}

/**
 * pending -> expired for up to `limit` approvals whose time is up at `now`, each with its
 * `approval.expired` event (occurring at its expiry instant). Safe in several processes at
 * once: PostgreSQL skips the rows another sweeper holds; SQLite's writers take turns.
 * Returns how many it expired.
 */
export async function expireDue(db: Database, now: number, limit: number): Promise<number> {
  return db.transaction(async (tx) => {
    const skipLocked = tx.engine === 'postgres' ? 'FOR UPDATE SKIP LOCKED' : ''
    const rows = await tx.all<ApprovalRow>(
      `UPDATE approvals SET status = 'expired', decided_at = expires_at
       WHERE approval_number IN (
         SELECT approval_number FROM approvals WHERE status = 'pending' AND expires_at <= $1 ORDER BY expires_at LIMIT $2 ${skipLocked})
       AND status = 'pending' RETURNING *`, [now, limit])
    for (const row of rows) {
      const approval = fromRow(row)
      await recordDecision(tx, approval, 'approval.expired', approval.expiresAt)
    }
    return rows.length
  })
}

/**
 * The fields of transaction_details that a decision fixes: everything but `signMessage`
 * (the text to sign, meaningless once decided) and, unless approved, `wallet` (the owner at
 * the moment of the decision is a ledger read, which a decision's transaction does not make).
 */
export function decidedDetails(a: Approval): DecidedDetails {
  const details: DecidedDetails = {
    title: a.title,
    message: a.message,
    objectId: a.objectId,
    successRedirectUrl: a.successRedirectUrl,
    cancelRedirectUrl: a.cancelRedirectUrl,
    approvalNumber: a.approvalNumber,
    referenceNumber: a.referenceNumber,
    createdAt: new Date(a.createdAt).toISOString(),
    approved: a.status === 'approved',
    method: a.method,
    vendorBrand: a.vendorBrand,
    status: a.status,
    expiresAt: new Date(a.expiresAt).toISOString(),
  }
  if (a.phoneNumber !== null) details.phoneNumber = a.phoneNumber
  if (a.status === 'approved' && a.wallet !== null) details.wallet = a.wallet
  if (a.status === 'cancelled' && a.cancelReason !== null) details.cancelReason = a.cancelReason
  return details
}
