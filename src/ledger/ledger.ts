import type { Executor } from '../db/engine.ts'
import type { LedgerHealth } from './ledger-health.ts'

/** A Move event as the ledger reports it: full type name and its fields as JSON. */
export interface LedgerEvent {
  type: string
  sender: string
  json: Record<string, unknown>
}

export interface LedgerTransaction {
  digest: string
  sender: string
  /** Whether execution succeeded (a failed transaction emits no events). */
  success: boolean
  events: LedgerEvent[]
  /** Epoch ms, when the ledger knows it. */
  timestampMs: number | null
}

/** One ApprovalEvent as the ledger watcher reads it from the ledger's feed of them. */
export interface FeedEvent {
  /** Where the feed continues after this event (opaque to everyone but the ledger). */
  cursor: string
  digest: string
  /** The event's position among its transaction's events. */
  index: number
  sender: string
  json: Record<string, unknown>
  /** Epoch ms of its checkpoint (or embedded transaction), when the ledger knows it. */
  timestampMs: number | null
}

export interface FeedPage {
  events: FeedEvent[]
  /** More events follow the last one (read on at once rather than after the poll interval). */
  more: boolean
}

export interface KnsToken {
  objectId: string
  /** The address that owns the token, or null when it is not address-owned (shared, wrapped). */
  owner: string | null
}

export interface KeystoreKey {
  keyId: string
  /** SPKI PEM of a P-256 public key. */
  publicKey: string
  revoked: boolean
}

export interface Keystore {
  objectId: string
  name: string
  creator: string
  imageUrl: string | null
  keys: KeystoreKey[]
}

/**
 * What the service needs of the Sui ledger. Two implementations: the embedded ledger
 * (`LEDGER=local`, same database) and the Sui GraphQL adapter (`LEDGER=sui`, read-only).
 * Reads that find nothing return null; a ledger that cannot be reached throws
 * LedgerUnavailableError; a write the ledger cannot do throws LedgerUnsupportedError.
 */
export interface Ledger {
  readonly kind: 'local' | 'sui'
  /** `<KNS package>::kns::Kns`. */
  readonly tokenType: string
  /** `<KNS package>::kns::ApprovalEvent`. */
  readonly approvalEventType: string
  /**
   * How long (ms) a decision re-reads a "not found" transaction or an owner that does not
   * match before it fails: an indexer can lag the chain by seconds. 0: reads are current.
   */
  readonly freshnessMs: number
  /** Counts and state of the requests to a remote ledger (absent on the embedded one). */
  readonly health?: LedgerHealth

  /**
   * Verifies a personal-message signature that needs live chain state (zkLogin: the chain's
   * JWKs and epoch) for `author`: false when the ledger says it does not verify;
   * LedgerUnavailableError when the ledger cannot say. Absent on the embedded ledger, which
   * therefore cannot verify zkLogin signatures.
   */
  verifyPersonalMessage?(message: Uint8Array, signature: string, author: string): Promise<SignatureVerdict>
  /** The ledger's current epoch: a zkLogin signature is valid up to its max epoch. */
  currentEpoch(): Promise<number>
  /** Start-up check of the configured deployment (`kns doctor`); absent when there is nothing to check. */
  check?(): Promise<LedgerCheck[]>

  /**
   * The KNS token with that ID, or null when no such KNS token exists. Reads may come from a
   * short-lived cache; `fresh` asks the ledger itself (for decisions such as approving).
   */
  getToken(objectId: string, options?: { fresh?: boolean }): Promise<KnsToken | null>
  /** Mints a new KNS token to `owner`. `tx` lets the caller make the mint part of its own transaction. */
  mintToken(owner: string, tx?: Executor): Promise<KnsToken>
  /** A transaction by its base58 digest, or null when the ledger does not know it. */
  getTransaction(digest: string): Promise<LedgerTransaction | null>
  /**
   * `ApprovalEvent`s in ledger order, after the one `after` names (null: from the first), at
   * most `limit`: the ledger watcher's feed. LedgerUnavailableError when it cannot be read.
   */
  approvalEvents(after: string | null, limit: number): Promise<FeedPage>
  /** Names the feed a cursor belongs to (ledger kind and event type), so none is used on another. */
  readonly feedSource: string

  /** Keystore (certificate registry) object, or null. `fresh` as for getToken. */
  getKeystore(objectId: string, options?: { fresh?: boolean }): Promise<Keystore | null>
  /** Keystore IDs linked to a KNS token in the ID map ([] when none). `fresh` as for getToken. */
  getLinkedKeystores(tokenId: string, options?: { fresh?: boolean }): Promise<string[]>

  close(): Promise<void>
}

/** A ledger's judgement of a signature: valid, or why not (the failing check, in words). */
export type SignatureVerdict = { valid: true } | { valid: false; reason: string }

/** One finding of the start-up check. */
export interface LedgerCheck { name: string; ok: boolean; detail: string }

export const OBJECT_ID_PATTERN = /^0x[0-9a-fA-F]{64}$/
/** Sui address: same form as an object ID. */
export const ADDRESS_PATTERN = OBJECT_ID_PATTERN

/** Canonical lowercase form of an object ID or address. */
export function normalizeId(id: string): string {
  return id.toLowerCase()
}

/** The start-up check's outcome: each finding, or why the ledger could not be asked. */
export interface LedgerCheckReport { ok: boolean; checks: LedgerCheck[]; unreachable?: string }

/** Runs the ledger's start-up check, if it has one; an unreachable ledger is a finding, not a throw. */
export async function checkLedger(ledger: Ledger): Promise<LedgerCheckReport> {
  if (ledger.check === undefined) return { ok: true, checks: [{ name: 'ledger', ok: true, detail: 'LEDGER=local: the embedded ledger lives in the database' }] }
  try {
    const checks = await ledger.check()
    return { ok: checks.every((c) => c.ok), checks }
  } catch (err) {
    return { ok: false, checks: [], unreachable: err instanceof Error ? err.message : String(err) }
  }
}
