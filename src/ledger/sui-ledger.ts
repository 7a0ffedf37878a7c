import { SuiGraphQLClient, SuiGraphQLRequestError } from '@mysten/sui/graphql'
import type { GraphQLQueryOptions } from '@mysten/sui/graphql'
import { graphql } from '@mysten/sui/graphql/schema'
import type { ResultOf, TadaDocumentNode } from '@mysten/sui/graphql/schema'
import { bcs } from '@mysten/sui/bcs'
import {
  isValidSuiObjectId, isValidTransactionDigest, normalizeStructTag, normalizeSuiAddress,
} from '@mysten/sui/utils'
import type { Executor } from '../db/engine.ts'
import { LedgerUnavailableError, LedgerUnsupportedError } from '../errors.ts'
import { SingleFlight } from '../lib/single-flight.ts'
import type { Keystore, KeystoreKey, KnsToken, Ledger, LedgerEvent, LedgerTransaction } from './ledger.ts'

export interface SuiLedgerOptions {
  graphqlUrl: string
  knsPackageId: string
  idMapTableId: string
  /** Seconds a token / keystore / ID-map read may be reused. 0 = no caching. */
  cacheTtlS: number
  fetch?: typeof fetch
  /** Per-request deadline; a hung RPC must not hold a caller's request forever. */
  timeoutMs?: number
  /** Injectable clock (epoch ms) so cache expiry is testable without sleeping. */
  now?: () => number
}

// Operation names double as the dispatch key of the test stub; keep them stable.
export const GET_OBJECT_QUERY = graphql(`
  query knsGetObject($address: SuiAddress!) {
    object(address: $address) {
      address
      owner {
        __typename
        ... on AddressOwner { address { address } }
        ... on ConsensusAddressOwner { address { address } }
      }
      asMoveObject {
        contents {
          type { repr }
          json
        }
      }
    }
  }
`)

// Events are paged server-side (max page size is a service limit, 50 by default), so the
// query takes a cursor; the transaction part is re-read with each page, which is cheap.
export const GET_TRANSACTION_QUERY = graphql(`
  query knsGetTransaction($digest: String!, $eventsAfter: String) {
    transaction(digest: $digest) {
      digest
      sender { address }
      effects {
        status
        timestamp
        events(first: 50, after: $eventsAfter) {
          pageInfo { hasNextPage endCursor }
          nodes {
            sender { address }
            contents {
              type { repr }
              json
            }
          }
        }
      }
    }
  }
`)

// `address(...)`, not `object(...)`: a Table's UID lives wrapped inside the map object, so it
// is an address that owns dynamic fields but is not an object of its own.
export const GET_DYNAMIC_FIELD_QUERY = graphql(`
  query knsGetDynamicField($parent: SuiAddress!, $name: DynamicFieldName!) {
    address(address: $parent) {
      dynamicField(name: $name) {
        value {
          __typename
          ... on MoveValue {
            type { repr }
            json
          }
        }
      }
    }
  }
`)

const ID_TYPE = '0x2::object::ID'
const TX_CACHE_MAX = 10_000
const TTL_CACHE_MAX = 10_000
/** Guards against a misbehaving server paging forever; 1 000 events is Sui's per-tx cap. */
const MAX_EVENT_PAGES = 25

/** Insertion-ordered Map used as an LRU: a hit is re-inserted so eviction drops the coldest. */
class BoundedCache<V> {
  readonly #entries = new Map<string, { value: V; expiresAt: number }>()
  readonly #max: number
  readonly #now: () => number

  constructor(max: number, now: () => number) {
    this.#max = max
    this.#now = now
  }

  get(key: string): { value: V } | undefined {
    const entry = this.#entries.get(key)
    if (entry === undefined) return undefined
    this.#entries.delete(key)
    if (entry.expiresAt <= this.#now()) return undefined
    this.#entries.set(key, entry)
    return { value: entry.value }
  }

  set(key: string, value: V, ttlMs: number): void {
    this.#entries.delete(key)
    this.#entries.set(key, { value, expiresAt: this.#now() + ttlMs })
    if (this.#entries.size > this.#max) {
      const oldest = this.#entries.keys().next()
      if (oldest.done !== true) this.#entries.delete(oldest.value)
    }
  }
}

type ObjectNode = NonNullable<ResultOf<typeof GET_OBJECT_QUERY>['object']>

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

/** Keystores hold either a full SPKI PEM or just its base64 body; consumers get a canonical PEM. */
export function toSpkiPem(raw: string): string | null {
  const trimmed = raw.trim()
  const labelled = /^-----BEGIN ([A-Z0-9 ]+)-----([\s\S]*?)-----END \1-----$/.exec(trimmed)
  if (labelled !== null && labelled[1] !== 'PUBLIC KEY') return null
  const body = (labelled === null ? trimmed : labelled[2]!).replace(/\s+/g, '')
  if (body === '' || !/^[A-Za-z0-9+/]+={0,2}$/.test(body) || body.length % 4 !== 0) return null
  const lines = body.match(/.{1,64}/g)!.join('\n')
  return `-----BEGIN PUBLIC KEY-----\n${lines}\n-----END PUBLIC KEY-----\n`
}

/** Display-style JSON renders a `0x2::url::Url` as a string; older renderings nest it or wrap Options. */
function optionalString(value: unknown): string | null {
  if (typeof value === 'string') return value === '' ? null : value
  if (isRecord(value)) {
    if (typeof value.url === 'string') return optionalString(value.url)
    if (Array.isArray(value.vec)) return optionalString(value.vec[0])
  }
  return null
}

function objectOwner(owner: ObjectNode['owner']): string | null {
  // A consensus-address-owned object still has exactly one owning address that can use it.
  if (owner?.__typename === 'AddressOwner' || owner?.__typename === 'ConsensusAddressOwner') {
    const address = owner.address?.address
    return typeof address === 'string' ? normalizeSuiAddress(address) : null
  }
  return null
}

function guessNetwork(url: string): string {
  for (const network of ['mainnet', 'testnet', 'devnet']) if (url.includes(network)) return network
  return 'localnet'
}

export class SuiLedger implements Ledger {
  readonly kind = 'sui' as const
  readonly tokenType: string
  readonly approvalEventType: string

  readonly #client: SuiGraphQLClient
  readonly #idMapTableId: string
  readonly #ttlMs: number
  readonly #timeoutMs: number
  readonly #objects: BoundedCache<ObjectNode | null>
  readonly #links: BoundedCache<string[]>
  readonly #transactions: BoundedCache<LedgerTransaction>
  /** Used to verify zkLogin signatures (JWKs and epoch come from the chain). */
  get coreClient(): SuiGraphQLClient { return this.#client }
  /** Concurrent identical reads share one request, so a burst costs one RPC. */
  readonly #inflight = new SingleFlight<string, unknown>()

  constructor(options: SuiLedgerOptions) {
    const pkg = normalizeSuiAddress(options.knsPackageId)
    this.tokenType = normalizeStructTag(`${pkg}::kns::Kns`)
    this.approvalEventType = normalizeStructTag(`${pkg}::kns::ApprovalEvent`)
    this.#idMapTableId = normalizeSuiAddress(options.idMapTableId)
    this.#ttlMs = Math.max(0, options.cacheTtlS) * 1000
    this.#timeoutMs = options.timeoutMs ?? 10_000
    const now = options.now ?? Date.now
    this.#objects = new BoundedCache(TTL_CACHE_MAX, now)
    this.#links = new BoundedCache(TTL_CACHE_MAX, now)
    this.#transactions = new BoundedCache(TX_CACHE_MAX, now)
    this.#client = new SuiGraphQLClient({
      url: options.graphqlUrl,
      network: guessNetwork(options.graphqlUrl),
      ...(options.fetch === undefined ? {} : { fetch: options.fetch }),
    })
  }

  async getToken(objectId: string, options?: { fresh?: boolean }): Promise<KnsToken | null> {
    const object = await this.#readObject(objectId, options?.fresh === true)
    const type = object?.asMoveObject?.contents?.type?.repr
    if (object == null || type === undefined || !sameType(type, this.tokenType)) return null
    return { objectId: normalizeSuiAddress(object.address), owner: objectOwner(object.owner) }
  }

  mintToken(_owner: string, _tx?: Executor): Promise<KnsToken> {
    return Promise.reject(new LedgerUnsupportedError('Minting KNS tokens is not supported on the Sui ledger (read-only adapter)'))
  }

  async getTransaction(digest: string): Promise<LedgerTransaction | null> {
    if (!isValidTransactionDigest(digest)) return null
    const cached = this.#transactions.get(digest)
    if (cached !== undefined) return cached.value
    const tx = await this.#once(`tx:${digest}`, () => this.#fetchTransaction(digest))
    // Only found transactions are final; "not found" may just mean "not indexed yet".
    if (tx !== null) this.#transactions.set(digest, tx, Number.POSITIVE_INFINITY)
    return tx
  }

  async getKeystore(objectId: string, options?: { fresh?: boolean }): Promise<Keystore | null> {
    const object = await this.#readObject(objectId, options?.fresh === true)
    const json = object?.asMoveObject?.contents?.json
    if (object == null || !isRecord(json) || !Array.isArray(json.public_keys)) return null
    const keys: KeystoreKey[] = []
    for (const entry of json.public_keys) {
      if (!isRecord(entry) || typeof entry.key_id !== 'string' || typeof entry.public_key !== 'string') continue
      const publicKey = toSpkiPem(entry.public_key)
      // One malformed entry must not hide the other keys of the registry.
      if (publicKey === null) continue
      // Removal from the vector is how a key is revoked on-ledger, so every listed key is live.
      keys.push({ keyId: entry.key_id, publicKey, revoked: false })
    }
    return {
      objectId: normalizeSuiAddress(object.address),
      name: typeof json.name === 'string' ? json.name : '',
      creator: typeof json.creator === 'string' ? normalizeSuiAddress(json.creator) : '',
      imageUrl: optionalString(json.image_url),
      keys,
    }
  }

  async getLinkedKeystores(tokenId: string, options?: { fresh?: boolean }): Promise<string[]> {
    if (!isValidSuiObjectId(tokenId)) return []
    const key = normalizeSuiAddress(tokenId)
    const cached = this.#ttlMs > 0 && options?.fresh !== true ? this.#links.get(key) : undefined
    if (cached !== undefined) return [...cached.value]
    const ids = await this.#once(`link:${key}`, async () => {
      const data = await this.#query(GET_DYNAMIC_FIELD_QUERY, 'knsGetDynamicField', {
        parent: this.#idMapTableId,
        name: { type: ID_TYPE, bcs: bcs.Address.serialize(key).toBase64() },
      })
      const value = data.address?.dynamicField?.value
      if (value == null || value.__typename !== 'MoveValue') return []
      if (!Array.isArray(value.json)) throw new LedgerUnavailableError('Sui returned an ID-map entry that is not a vector of IDs')
      return value.json.filter((id): id is string => typeof id === 'string' && isValidSuiObjectId(id)).map((id) => normalizeSuiAddress(id))
    })
    if (this.#ttlMs > 0) this.#links.set(key, ids, this.#ttlMs)
    return [...ids]
  }

  async close(): Promise<void> {}

  async #readObject(objectId: string, fresh = false): Promise<ObjectNode | null> {
    if (!isValidSuiObjectId(objectId)) return null
    const key = normalizeSuiAddress(objectId)
    const cached = this.#ttlMs > 0 && !fresh ? this.#objects.get(key) : undefined
    if (cached !== undefined) return cached.value
    const object = await this.#once(`obj:${key}`, async () => {
      const data = await this.#query(GET_OBJECT_QUERY, 'knsGetObject', { address: key })
      return data.object ?? null
    })
    // Tokens and keystores share the object cache: both are plain reads of the same object.
    if (this.#ttlMs > 0) this.#objects.set(key, object, this.#ttlMs)
    return object
  }

  async #fetchTransaction(digest: string): Promise<LedgerTransaction | null> {
    const events: LedgerEvent[] = []
    let after: string | null = null
    for (let page = 0; page < MAX_EVENT_PAGES; page++) {
      const data: ResultOf<typeof GET_TRANSACTION_QUERY> = await this.#query(
        GET_TRANSACTION_QUERY, 'knsGetTransaction', { digest, eventsAfter: after },
      )
      const tx = data.transaction
      const effects = tx?.effects
      if (tx == null || effects == null || effects.status == null) return null
      for (const node of effects.events?.nodes ?? []) {
        const type = node.contents?.type?.repr
        if (type === undefined) continue
        const json = node.contents?.json
        events.push({
          type: normalizeStructTag(type),
          sender: node.sender?.address ? normalizeSuiAddress(node.sender.address) : '',
          json: isRecord(json) ? json : {},
        })
      }
      const pageInfo = effects.events?.pageInfo
      if (pageInfo?.hasNextPage === true && pageInfo.endCursor != null) {
        after = pageInfo.endCursor
        continue
      }
      const timestamp = typeof effects.timestamp === 'string' ? Date.parse(effects.timestamp) : Number.NaN
      return {
        digest: tx.digest,
        sender: tx.sender?.address ? normalizeSuiAddress(tx.sender.address) : '',
        success: effects.status === 'SUCCESS',
        events,
        timestampMs: Number.isFinite(timestamp) ? timestamp : null,
      }
    }
    throw new LedgerUnavailableError('Sui returned too many event pages for one transaction')
  }

  #once<T>(key: string, load: () => Promise<T>): Promise<T> {
    return this.#inflight.run(key, load) as Promise<T>
  }

  async #query<Result, Variables>(
    query: TadaDocumentNode<Result, Variables>,
    operationName: string,
    variables: Variables,
  ): Promise<Result> {
    let result
    try {
      // The SDK's options type is conditional on Variables, which TS cannot resolve for a generic.
      const options = { query, operationName, variables, signal: AbortSignal.timeout(this.#timeoutMs) }
      result = await this.#client.query(options as unknown as GraphQLQueryOptions<Result, Variables>)
    } catch (error) {
      throw new LedgerUnavailableError(`Sui GraphQL ${operationName} failed: ${describeFailure(error)}`)
    }
    if (result.errors !== undefined && result.errors.length > 0) {
      const first = String(result.errors[0]?.message ?? 'unknown error').slice(0, 200)
      throw new LedgerUnavailableError(`Sui GraphQL ${operationName} returned errors: ${first}`)
    }
    if (result.data == null) throw new LedgerUnavailableError(`Sui GraphQL ${operationName} returned no data`)
    return result.data
  }
}

function sameType(a: string, b: string): boolean {
  try {
    return normalizeStructTag(a) === normalizeStructTag(b)
  } catch {
    return false
  }
}

/**
 * Only a short, fixed description: the endpoint URL can carry a provider API key, and fetch
 * errors embed the URL in their causes, so neither the URL nor the raw cause goes out.
 */
function describeFailure(error: unknown): string {
  if (error instanceof SuiGraphQLRequestError) return error.message
  if (error instanceof Error) {
    if (error.name === 'TimeoutError' || error.name === 'AbortError') return 'timed out'
    if (error instanceof SyntaxError) return 'response is not JSON'
    const code = (error.cause as { code?: unknown } | undefined)?.code
    return typeof code === 'string' ? `network error (${code})` : 'network error'
  }
  return 'unknown error'
}
