import { randomBytes } from 'node:crypto'
import { normalizeSuiAddress, toBase58 } from '@mysten/sui/utils'
import { signalChange, type ChangeWatcher } from '../db/change-signal.ts'
import { LEDGER_TOPIC, tag, tagged } from '../db/change-topics.ts'
import type { Database, Executor } from '../db/engine.ts'
import { ConflictError, ForbiddenError, NotFoundError } from '../errors.ts'
import { InvalidatingCache } from '../lib/invalidating-cache.ts'
import { LocalKeystores } from './local-keystores.ts'
import type { FeedPage, Keystore, KnsToken, Ledger, LedgerEvent, LedgerTransaction, SignatureVerdict } from './ledger.ts'
import { verifyClearZkLogin, type ZkLoginProviders } from './zklogin/verify-clear.ts'

/** Change topic of token ownership (mint, transfer). */

interface TransactionRow { digest: string; sender: string; status: string; events: string; created_at: number }

/** Past this many cached owners the cache starts over. */
const MAX_CACHED_OWNERS = 100_000
/** The embedded ledger's epochs last a day, as Sui's do; epoch N starts N days after 1970-01-01 UTC. */
export const LOCAL_EPOCH_MS = 24 * 3600_000

export interface LocalLedgerOptions {
  /** The OpenID providers whose zkLogin signatures it verifies (this service's own); none: zkLogin is refused. */
  zkLoginProviders?: ZkLoginProviders
  now?: () => number
}

/**
 * The embedded ledger (`LEDGER=local`): KNS tokens and transactions in the service's own
 * database, with Sui-shaped object IDs, addresses, digests and events, so everything above
 * it behaves exactly as on Sui. Ownership rules are enforced as a Move module would:
 * only the owner of a token can approve with it or transfer it.
 */
export class LocalLedger implements Ledger {
  readonly kind = 'local' as const
  readonly packageId: string
  /** The embedded ledger is the database: a read is always current. */
  readonly freshnessMs = 0
  readonly tokenType: string
  readonly approvalEventType: string
  readonly mintedEventType: string
  readonly feedSource: string
  /** Keystores and their links to tokens (caller verification). */
  readonly keystores: LocalKeystores
  readonly #db: Database
  /** objectId -> owner (null: no such token); undefined while not subscribed to changes. */
  #owners: InvalidatingCache<string, string | null> | undefined

  readonly #zkLogin: ZkLoginProviders | undefined
  readonly #now: () => number

  constructor(db: Database, knsPackageId: string, options: LocalLedgerOptions = {}) {
    this.#db = db
    this.#zkLogin = options.zkLoginProviders
    this.#now = options.now ?? Date.now
    if (this.#zkLogin === undefined) this.verifyPersonalMessage = undefined
    this.keystores = new LocalKeystores(db)
    this.packageId = normalizeSuiAddress(knsPackageId)
    this.tokenType = `${this.packageId}::kns::Kns`
    this.approvalEventType = `${this.packageId}::kns::ApprovalEvent`
    this.mintedEventType = `${this.packageId}::kns::MintedEvent`
    this.feedSource = `local:${this.approvalEventType}`
  }

  /**
   * Owners are cached only while subscribed to the change signal, which every mint and
   * transfer (in any process) raises; `fresh` reads skip the cache.
   */
  subscribe(changes: ChangeWatcher): void {
    this.#owners = new InvalidatingCache(MAX_CACHED_OWNERS)
    changes.on('change', (topic, subject) => {
      if (topic !== LEDGER_TOPIC) return
      if (subject === null) this.#owners?.invalidate(null)
      else this.#owners?.delete(tagged('token', subject) ?? subject)
    })
  }

  async getToken(objectId: string, options?: { fresh?: boolean }): Promise<KnsToken | null> {
    const id = normalizeSuiAddress(objectId)
    const cached = options?.fresh ? undefined : this.#owners?.get(id)
    if (cached !== undefined) return cached === null ? null : { objectId: id, owner: cached }
    // A transfer committed while this read ran must not leave its old owner cached.
    const stamp = this.#owners?.begin()
    const token = await this.#readToken(this.#db, id)
    if (stamp !== undefined) this.#owners?.set(id, token?.owner ?? null, stamp)
    return token
  }

  async #readToken(ex: Executor, objectId: string): Promise<KnsToken | null> {
    const id = normalizeSuiAddress(objectId)
    const row = await ex.get<{ owner: string }>('SELECT owner FROM ledger_objects WHERE object_id = $1 AND type = $2', [id, this.tokenType])
    return row === undefined ? null : { objectId: id, owner: row.owner }
  }

  async #changed(tx: Executor, objectId: string): Promise<void> {
    this.#owners?.delete(objectId)
    await signalChange(tx, LEDGER_TOPIC, tag.token(objectId))
  }

  async mintToken(owner: string, tx?: Executor): Promise<KnsToken> {
    const work = async (ex: Executor): Promise<KnsToken> => {
      const objectId = `0x${randomBytes(32).toString('hex')}`
      const to = normalizeSuiAddress(owner)
      await ex.run('INSERT INTO ledger_objects (object_id, type, owner, version, created_at) VALUES ($1, $2, $3, 1, $4)',
        [objectId, this.tokenType, to, Date.now()])
      // No change signal: a fresh random ID cannot be in anyone's cache.
      await this.#record(ex, to, [{ type: this.mintedEventType, sender: to, json: { object_id: objectId } }])
      return { objectId, owner: to }
    }
    return tx === undefined ? this.#db.transaction(work) : work(tx)
  }

  /** `0x2::transfer::public_transfer`: only meaningful on the embedded ledger (operator command). */
  async transferToken(objectId: string, to: string): Promise<{ digest: string }> {
    return this.#db.transaction(async (tx) => {
      const token = await this.#readToken(tx, objectId)
      if (token === null) throw new NotFoundError(`no KNS token ${objectId} on the embedded ledger`, { field: 'objectId' })
      await tx.run('UPDATE ledger_objects SET owner = $1, version = version + 1 WHERE object_id = $2',
        [normalizeSuiAddress(to), token.objectId])
      await this.#changed(tx, token.objectId)
      const digest = await this.#record(tx, token.owner ?? normalizeSuiAddress(to), [])
      return { digest }
    })
  }

  /**
   * The equivalent of the owner calling `kns::approve(token, ref)`: refused unless `sender`
   * owns the token; records a successful transaction that emits ApprovalEvent.
   */
  async approve(objectId: string, ref: string, sender: string): Promise<{ digest: string }> {
    return this.#db.transaction(async (tx) => {
      const token = await this.#readToken(tx, objectId)
      if (token === null) throw new NotFoundError(`no KNS token ${objectId} on the embedded ledger`, { field: 'objectId' })
      const from = normalizeSuiAddress(sender)
      if (token.owner !== from) throw new ForbiddenError(`address ${from} does not own token ${token.objectId}`)
      // The feed's order must be its commit order, or the watcher could pass an event that
      // commits after a later-numbered one: approvals are recorded one at a time (PostgreSQL;
      // SQLite's writers take turns anyway). Per schema: each is a database of its own.
      if (tx.engine === 'postgres') await tx.run(`SELECT pg_advisory_xact_lock(hashtext(current_schema() || ':kns-ledger-events'))`)
      // A token approves a ref once: the same signed body sent again (a replay, or a retry) is
      // refused, as Sui refuses a transaction executed twice, and adds nothing to the feed.
      const json = { object_id: token.objectId, ref }
      const earlier = await tx.get<{ digest: string }>('SELECT digest FROM ledger_events WHERE type = $1 AND json = $2 LIMIT 1', [this.approvalEventType, JSON.stringify(json)])
      if (earlier !== undefined) throw new ConflictError(`token ${token.objectId} already approved ref ${ref} (transaction ${earlier.digest})`, { field: 'ref' })
      const digest = await this.#record(tx, from, [{ type: this.approvalEventType, sender: from, json }])
      return { digest }
    })
  }

  async #record(tx: Executor, sender: string, events: LedgerEvent[]): Promise<string> {
    const digest = toBase58(randomBytes(32))
    const now = Date.now()
    await tx.run('INSERT INTO ledger_transactions (digest, sender, status, events, created_at) VALUES ($1, $2, $3, $4, $5)',
      [digest, sender, 'success', JSON.stringify(events), now])
    // Approvals only in the feed: a mint (every registration) adds nothing the watcher reads.
    for (const [index, event] of events.entries()) {
      if (event.type !== this.approvalEventType) continue
      await tx.run('INSERT INTO ledger_events (digest, event_index, type, sender, json, created_at) VALUES ($1, $2, $3, $4, $5, $6)',
        [digest, index, event.type, event.sender, JSON.stringify(event.json), now])
    }
    return digest
  }

  async approvalEvents(after: string | null, limit: number): Promise<FeedPage> {
    const from = after === null ? 0 : Number(after)
    if (!Number.isSafeInteger(from) || from < 0) throw new Error(`not a cursor of the embedded ledger: ${after}`)
    const rows = await this.#db.all<{ seq: number; digest: string; event_index: number; sender: string; json: string; created_at: number }>(
      'SELECT seq, digest, event_index, sender, json, created_at FROM ledger_events WHERE type = $1 AND seq > $2 ORDER BY seq LIMIT $3',
      [this.approvalEventType, from, limit + 1])
    return {
      events: rows.slice(0, limit).map((r) => ({
        cursor: String(r.seq), digest: r.digest, index: Number(r.event_index), sender: r.sender,
        json: JSON.parse(r.json) as Record<string, unknown>, timestampMs: Number(r.created_at),
      })),
      more: rows.length > limit,
    }
  }

  async getTransaction(digest: string): Promise<LedgerTransaction | null> {
    const row = await this.#db.get<TransactionRow>('SELECT * FROM ledger_transactions WHERE digest = $1', [digest])
    if (row === undefined) return null
    return {
      digest: row.digest,
      sender: row.sender,
      success: row.status === 'success',
      events: JSON.parse(row.events) as LedgerEvent[],
      timestampMs: Number(row.created_at),
    }
  }

  async currentEpoch(): Promise<number> {
    return Math.floor(this.#now() / LOCAL_EPOCH_MS)
  }

  /**
   * zkLogin signatures of this service's own provider, checked in the clear (the proof is the
   * prover step's clear witness: see zklogin/clear-proof.ts). Absent without providers.
   */
  verifyPersonalMessage? = async (message: Uint8Array, signature: string, author: string): Promise<SignatureVerdict> =>
    verifyClearZkLogin({ message, signature, author: normalizeSuiAddress(author), currentEpoch: await this.currentEpoch(), providers: this.#zkLogin! })

  getKeystore(objectId: string): Promise<Keystore | null> { return this.keystores.get(objectId) }
  getLinkedKeystores(tokenId: string): Promise<string[]> { return this.keystores.linked(tokenId) }

  async close(): Promise<void> {}
}
