import type { KeyObject } from 'node:crypto'
import type { Database } from '../db/engine.ts'
import { ChangeWatcher } from '../db/change-signal.ts'
import { CALLER_TOPIC, tag } from '../db/change-topics.ts'
import { findByPhone } from '../identity/numbers.ts'
import type { Ledger } from '../ledger/ledger.ts'
import { InvalidatingCache } from '../lib/invalidating-cache.ts'
import { SingleFlight } from '../lib/single-flight.ts'
import { parseP256PublicKey } from '../lib/public-keys.ts'

export interface SigningKey {
  keyId: string
  keystoreId: string
  key: KeyObject
}

/** What an originating number resolves to: its token, linked keystores and usable keys. */
export interface Resolution {
  tokenId: string | null
  keystoreIds: string[]
  /** Unrevoked, parseable P-256 keys of the linked keystores, in link then key order. */
  keys: SigningKey[]
}

interface Entry { value: Resolution; expiresAt: number }

const MAX_ENTRIES = 200_000
const prepared = new Map<string, KeyObject>()

/** Parsing is the costly part of a cold lookup, and many numbers share a keystore: memoise by PEM. */
function preparedKey(pem: string): KeyObject {
  let hit = prepared.get(pem)
  if (hit === undefined) {
    hit = parseP256PublicKey(pem).key
    if (prepared.size >= 50_000) prepared.clear()
    prepared.set(pem, hit)
  }
  return hit
}
const FRESH = { fresh: true } as const

/**
 * Entries live between (1 - TTL_JITTER) and 1 times the TTL, at random: numbers resolved
 * together (a warm-up, a burst after a start) would otherwise all expire in the same instant
 * and be resolved again together. The soak benchmark showed such a storm five minutes in (the
 * embedded ledger's safety-net TTL) after its warm-up of 10 000 numbers: a p99 over 1 s and
 * 150 MB more heap in that minute. Never longer than the TTL, so a ledger change is still seen within it.
 */
const TTL_JITTER = 0.25

/**
 * number -> token -> linked keystores -> prepared KeyObjects, cached in process because every
 * incoming call asks. Entries carry tags (`phone:`, `token:`, `keystore:`) and are dropped when
 * a ChangeWatcher reports a change to any of them, in this or another process, within a
 * fraction of a second. On Sui, where changes are not signalled, entries expire after a short TTL.
 */
export class KeyDirectory {
  readonly #db: Database
  readonly #ledger: Ledger
  readonly #ttlMs: number
  /** Entries tagged with the number, token and keystores they came from (a lookup that raced an invalidation is not kept). */
  readonly #entries = new InvalidatingCache<string, Entry>(MAX_ENTRIES)
  readonly #inflight = new SingleFlight<string, Resolution>()

  constructor(db: Database, ledger: Ledger, options: { ttlMs: number }) {
    this.#db = db
    this.#ledger = ledger
    this.#ttlMs = options.ttlMs
  }

  /** Drops entries on every caller-topic change; without it the cache only expires by TTL. */
  subscribe(changes: ChangeWatcher): void {
    changes.on('change', (topic, subject) => { if (topic === CALLER_TOPIC) this.invalidate(subject) })
  }

  invalidate(tag: string | null): void {
    this.#entries.invalidate(tag)
  }

  async resolve(phone: string): Promise<Resolution> {
    const hit = this.#entries.get(phone)
    if (hit !== undefined && hit.expiresAt > Date.now()) return hit.value
    return this.#inflight.run(phone, () => this.#load(phone))
  }

  async #load(phone: string): Promise<Resolution> {
    const stamp = this.#entries.begin()
    const link = await findByPhone(this.#db, phone)
    const value: Resolution = { tokenId: link?.objectId ?? null, keystoreIds: [], keys: [] }
    if (link !== null) {
      // Fresh reads: this directory is the cache, and its TTL must be the only one that counts.
      value.keystoreIds = await this.#ledger.getLinkedKeystores(link.objectId, FRESH)
      const keystores = await Promise.all(value.keystoreIds.map((id) => this.#ledger.getKeystore(id, FRESH)))
      for (const keystore of keystores) {
        if (keystore === null) continue
        for (const k of keystore.keys) {
          if (k.revoked) continue
          try {
            value.keys.push({ keyId: k.keyId, keystoreId: keystore.objectId, key: preparedKey(k.publicKey) })
          } catch {
            // A key that is not P-256 can never verify ES256: leave it out rather than fail the number.
          }
        }
      }
    }
    const tags = [tag.phone(phone), ...(value.tokenId === null ? [] : [tag.token(value.tokenId)]), ...value.keystoreIds.map(tag.keystore)]
    this.#entries.set(phone, { value, expiresAt: Date.now() + this.#ttlMs * (1 - TTL_JITTER * Math.random()) }, stamp, tags)
    return value
  }
}
