import { SuiGraphQLClient, SuiGraphQLRequestError } from '@mysten/sui/graphql'
import type { GraphQLQueryOptions } from '@mysten/sui/graphql'
import type { ResultOf, TadaDocumentNode } from '@mysten/sui/graphql/schema'
import { bcs } from '@mysten/sui/bcs'
import {
  isValidSuiObjectId, isValidTransactionDigest, normalizeStructTag, normalizeSuiAddress, parseStructTag, fromBase64, toBase64,
} from '@mysten/sui/utils'
import type { Executor } from '../db/engine.ts'
import { LedgerUnavailableError, LedgerUnsupportedError } from '../errors.ts'
import { toSpkiPem } from '../lib/public-keys.ts'
import { SingleFlight } from '../lib/single-flight.ts'
import type { FeedPage, Keystore, KeystoreKey, KnsToken, Ledger, LedgerCheck, LedgerEvent, LedgerTransaction, SignatureVerdict } from './ledger.ts'
import { LedgerHealth, type LedgerOutcome } from './ledger-health.ts'
import {
  APPROVAL_EVENTS_QUERY, CHECK_DEPLOYMENT_QUERY, CURRENT_EPOCH_QUERY, GET_DYNAMIC_FIELD_QUERY, GET_OBJECT_QUERY, GET_TRANSACTION_QUERY, VERIFY_SIGNATURE_QUERY,
} from './sui-queries.ts'

export interface SuiLedgerOptions {
  graphqlUrl: string
  /** Original KNS package: the `Kns` and `ApprovalEvent` types. */
  knsPackageId: string
  /** Latest KNS package (the calls' target); checked to exist by `check()`. Defaults to the original. */
  knsLatestPackageId?: string
  /** Original keystore package: a keystore object must be of one of its types. */
  keystorePackageId: string
  /** Original map package and the ID map object: checked by `check()`. */
  mapPackageId?: string
  idMapObjectId?: string
  idMapTableId: string
  /** How long a decision re-reads a "not found" or a stale owner (ms); the indexer can lag the chain. */
  freshnessMs?: number
  /** Seconds a token / keystore / ID-map read may be reused. 0 = no caching. */
  cacheTtlS: number
  fetch?: typeof fetch
  /** Per-request deadline; a hung RPC must not hold a caller's request forever. */
  timeoutMs?: number
  /** Injectable clock (epoch ms) so cache expiry is testable without sleeping. */
  now?: () => number
}

const ID_TYPE = '0x2::object::ID'
/** Events per page of the watcher's feed: the services' default page size, which every limit allows. */
const FEED_PAGE = 20
const TX_CACHE_MAX = 10_000
const TTL_CACHE_MAX = 10_000
/** Events per page asked for once the service's limit is known (`check()`), unless that limit is lower. */
const EVENTS_PAGE = 50
/** Guards against a misbehaving server paging forever; 1 000 events is Sui's per-tx cap. */
const MAX_EVENTS = 1000
/** How long the current epoch is reused: an epoch lasts about a day; a minute late is harmless. */
const EPOCH_CACHE_MS = 60_000

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
  readonly freshnessMs: number
  readonly health: LedgerHealth
  readonly feedSource: string

  readonly #client: SuiGraphQLClient
  readonly #options: Required<Pick<SuiLedgerOptions, 'knsPackageId' | 'knsLatestPackageId' | 'keystorePackageId' | 'idMapTableId'>> & Pick<SuiLedgerOptions, 'mapPackageId' | 'idMapObjectId'>
  readonly #ttlMs: number
  readonly #timeoutMs: number
  /** Events per page: the service's default until `check()` has read its limit. */
  #eventsPage: number | null = null
  readonly #objects: BoundedCache<ObjectNode | null>
  readonly #links: BoundedCache<string[]>
  readonly #transactions: BoundedCache<LedgerTransaction>
  /** Concurrent identical reads share one request, so a burst costs one RPC. */
  readonly #inflight = new SingleFlight<string, unknown>()
  #epoch: { value: number; at: number } | undefined

  constructor(options: SuiLedgerOptions) {
    const pkg = normalizeSuiAddress(options.knsPackageId)
    this.tokenType = normalizeStructTag(`${pkg}::kns::Kns`)
    this.approvalEventType = normalizeStructTag(`${pkg}::kns::ApprovalEvent`)
    // Cursors are the GraphQL service's own: one network's cursor means nothing on another.
    this.feedSource = `sui:${guessNetwork(options.graphqlUrl)}:${this.approvalEventType}`
    const optional = (value: string | undefined) => (value === undefined ? undefined : normalizeSuiAddress(value))
    this.#options = {
      knsPackageId: pkg,
      knsLatestPackageId: normalizeSuiAddress(options.knsLatestPackageId ?? pkg),
      keystorePackageId: normalizeSuiAddress(options.keystorePackageId),
      idMapTableId: normalizeSuiAddress(options.idMapTableId),
      ...(options.mapPackageId === undefined ? {} : { mapPackageId: optional(options.mapPackageId) }),
      ...(options.idMapObjectId === undefined ? {} : { idMapObjectId: optional(options.idMapObjectId) }),
    }
    this.#ttlMs = Math.max(0, options.cacheTtlS) * 1000
    this.#timeoutMs = options.timeoutMs ?? 10_000
    this.freshnessMs = options.freshnessMs ?? 3_000
    const now = options.now ?? Date.now
    this.health = new LedgerHealth(now)
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

  async approvalEvents(after: string | null, limit: number): Promise<FeedPage> {
    // The service's default page size is within every limit it sets; more is not needed.
    const first = Math.min(limit, FEED_PAGE)
    const data = await this.#query(APPROVAL_EVENTS_QUERY, 'knsApprovalEvents', { type: this.approvalEventType, first, after }, (answer) =>
      answer.events == null ? 'returned no events connection' : null)
    const connection = data.events!
    const events: FeedPage['events'] = []
    for (const edge of connection.edges) {
      const node = edge.node
      const digest = node.transaction?.digest
      // Not indexed yet (should not happen for a checkpoint's events): read it again later
      // rather than pass it by.
      if (typeof digest !== 'string') throw this.#fail('knsApprovalEvents', 'error', 'returned an event without its transaction')
      const json = node.contents?.json
      const timestamp = typeof node.timestamp === 'string' ? Date.parse(node.timestamp) : Number.NaN
      events.push({
        cursor: edge.cursor,
        digest,
        index: Number(node.sequenceNumber),
        sender: node.sender?.address ? normalizeSuiAddress(node.sender.address) : '',
        json: isRecord(json) ? json : {},
        timestampMs: Number.isFinite(timestamp) ? timestamp : null,
      })
    }
    return { events, more: connection.pageInfo.hasNextPage }
  }

  async getKeystore(objectId: string, options?: { fresh?: boolean }): Promise<Keystore | null> {
    const object = await this.#readObject(objectId, options?.fresh === true)
    const json = object?.asMoveObject?.contents?.json
    if (object == null || !isRecord(json) || !Array.isArray(json.public_keys)) return null
    // Anyone can publish an object with a `public_keys` field and link it: only the keystore
    // package's types are certificate registries.
    if (!ofPackage(object.asMoveObject?.contents?.type?.repr, this.#options.keystorePackageId)) return null
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
        parent: this.#options.idMapTableId,
        name: { type: ID_TYPE, bcs: bcs.Address.serialize(key).toBase64() },
      }, (answer) => {
        const value = answer.address?.dynamicField?.value
        return value?.__typename === 'MoveValue' && !Array.isArray(value.json) ? 'returned an ID-map entry that is not a vector of IDs' : null
      })
      const value = data.address?.dynamicField?.value
      if (value == null || value.__typename !== 'MoveValue' || !Array.isArray(value.json)) return []
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
    for (;;) {
      const data: ResultOf<typeof GET_TRANSACTION_QUERY> = await this.#query(
        GET_TRANSACTION_QUERY, 'knsGetTransaction', { digest, eventsFirst: this.#eventsPage, eventsAfter: after },
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
        if (events.length >= MAX_EVENTS) throw new LedgerUnavailableError('Sui returned more events for one transaction than a transaction can emit')
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
  }

  /**
   * Whether `signature` (any Sui scheme; zkLogin needs the chain's JWKs and epoch, so it is the
   * reason this exists) signs the personal message `message` for `author`, as the ledger judges
   * it. false only when the ledger says the signature does not verify; an outage, a timeout or
   * an error of the ledger's own is LedgerUnavailableError, never a false.
   */
  async verifyPersonalMessage(message: Uint8Array, signature: string, author: string): Promise<SignatureVerdict> {
    // Re-encoded: callers may send Base64 without its padding (atob accepts it), which the
    // service's strict Base64 scalar refuses before it verifies anything.
    const result = await this.#request(VERIFY_SIGNATURE_QUERY, 'knsVerifySignature', {
      message: toBase64(message), signature: toBase64(fromBase64(signature)), author: normalizeSuiAddress(author),
    }, { userErrors: true, accept: (data) => (data.verifySignature?.success === true ? null : 'answered without a verdict') })
    return result.rejected ? { valid: false, reason: `Sui: ${result.reason}` } : { valid: true }
  }

  /** The current epoch, read once per EPOCH_CACHE_MS (epochs last about a day). */
  async currentEpoch(): Promise<number> {
    const now = Date.now()
    if (this.#epoch !== undefined && now - this.#epoch.at < EPOCH_CACHE_MS) return this.#epoch.value
    const data = await this.#once('epoch', () => this.#query(CURRENT_EPOCH_QUERY, 'knsCurrentEpoch', {},
      (d) => (typeof d.epoch?.epochId === 'number' ? null : 'answered without the current epoch')))
    const value = data.epoch!.epochId
    this.#epoch = { value, at: now }
    return value
  }

  /**
   * The start-up check (`kns doctor`, the start log): the configured packages exist, the ID map
   * object is of the map package's type and holds the configured table, and the service's page
   * limit (the events page is lowered to it). One request; throws LedgerUnavailableError when
   * the ledger cannot be asked.
   */
  async check(): Promise<LedgerCheck[]> {
    const o = this.#options
    const data = await this.#query(CHECK_DEPLOYMENT_QUERY, 'knsCheckDeployment', {
      kns: o.knsPackageId, knsLatest: o.knsLatestPackageId, keystore: o.keystorePackageId,
      map: o.mapPackageId ?? o.knsPackageId, idMap: o.idMapObjectId ?? o.idMapTableId,
    })
    const pkg = (name: string, env: string, id: string, found: { asMovePackage?: { address: string } | null } | null) =>
      found?.asMovePackage != null
        ? { name, ok: true, detail: `${id} is a package` }
        : { name, ok: false, detail: `${env}=${id} is not a package on this network (wrong network or ID?)` }
    const checks: LedgerCheck[] = [
      pkg('kns package (types)', 'KNS_PACKAGE_ID', o.knsPackageId, data.kns),
      pkg('kns package (calls)', 'KNS_LATEST_PACKAGE_ID', o.knsLatestPackageId, data.knsLatest),
      pkg('keystore package', 'SUI_KEYSTORE_PACKAGE_ID', o.keystorePackageId, data.keystore),
    ]
    if (o.mapPackageId !== undefined) checks.push(pkg('map package', 'SUI_MAP_PACKAGE_ID', o.mapPackageId, data.map))
    if (o.idMapObjectId !== undefined) checks.push(checkIdMap(data.idMap?.asMoveObject?.contents ?? null, o.idMapObjectId, o.mapPackageId, o.idMapTableId))
    const limit = data.serviceConfig?.eventsPageLimit
    if (typeof limit === 'number' && limit > 0) {
      this.#eventsPage = Math.min(EVENTS_PAGE, limit)
      checks.push({ name: 'page limit', ok: true, detail: `the service pages events by at most ${limit}; asking ${this.#eventsPage}` })
    } else {
      checks.push({ name: 'page limit', ok: false, detail: 'the service did not say its page limit for transaction events' })
    }
    const epoch = data.epoch?.epochId
    checks.push({ name: 'epoch', ok: typeof epoch === 'number', detail: typeof epoch === 'number' ? `current epoch ${epoch}` : 'the service did not say the current epoch' })
    return checks
  }

  #once<T>(key: string, load: () => Promise<T>): Promise<T> {
    return this.#inflight.run(key, load) as Promise<T>
  }

  #fail(operation: string, outcome: LedgerOutcome, detail: string): LedgerUnavailableError {
    this.health.record(operation, outcome, detail)
    return new LedgerUnavailableError(`Sui GraphQL ${operation} ${detail}`)
  }

  async #query<Result, Variables>(
    query: TadaDocumentNode<Result, Variables>,
    operationName: string,
    variables: Variables,
    accept?: (data: Result) => string | null,
  ): Promise<Result> {
    const result = await this.#request(query, operationName, variables, accept === undefined ? {} : { accept })
    if (result.rejected) throw new Error('unreachable: user errors are not accepted here')
    return result.data
  }

  /**
   * One request, under the deadline. With `userErrors`, an answer whose errors are all the
   * caller's (BAD_USER_INPUT: e.g. a signature that does not verify) comes back as `rejected`;
   * any other error is the ledger's and throws LedgerUnavailableError, counted in `health`.
   * `accept` judges the data of an answer without errors: a reason means it is malformed (an
   * error of the ledger's, counted as such).
   */
  async #request<Result, Variables>(
    query: TadaDocumentNode<Result, Variables>,
    operationName: string,
    variables: Variables,
    options: { userErrors?: boolean; accept?: (data: Result) => string | null },
  ): Promise<{ rejected: true; reason: string } | { rejected: false; data: Result }> {
    let result
    try {
      // The SDK's options type is conditional on Variables, which TS cannot resolve for a generic.
      const options = { query, operationName, variables, signal: AbortSignal.timeout(this.#timeoutMs) }
      result = await this.#client.query(options as unknown as GraphQLQueryOptions<Result, Variables>)
    } catch (error) {
      const detail = describeFailure(error)
      throw this.#fail(operationName, detail === 'timed out' ? 'timeout' : 'unreachable', `failed: ${detail}`)
    }
    const errors = result.errors ?? []
    if (errors.length > 0) {
      if (options.userErrors === true && errors.every((e) => errorCode(e) === 'BAD_USER_INPUT')) {
        this.health.record(operationName, 'rejected')
        return { rejected: true, reason: String(errors[0]?.message ?? 'rejected').slice(0, 300) }
      }
      const code = errorCode(errors[0])
      const first = String(errors[0]?.message ?? 'unknown error').slice(0, 200)
      throw this.#fail(operationName, code === 'REQUEST_TIMEOUT' ? 'timeout' : 'error', `returned errors: ${code === undefined ? '' : `${code}: `}${first}`)
    }
    if (result.data == null) throw this.#fail(operationName, 'error', 'returned no data')
    const malformed = options.accept?.(result.data) ?? null
    if (malformed !== null) throw this.#fail(operationName, 'error', malformed)
    this.health.record(operationName, 'ok')
    return { rejected: false, data: result.data }
  }
}

function errorCode(error: unknown): string | undefined {
  const code = (error as { extensions?: { code?: unknown } } | undefined)?.extensions?.code
  return typeof code === 'string' ? code : undefined
}

/** Whether a Move type (as Sui renders it) is declared in `packageId`. */
function ofPackage(type: string | undefined, packageId: string): boolean {
  if (type === undefined) return false
  try {
    return normalizeSuiAddress(parseStructTag(type).address) === packageId
  } catch {
    return false
  }
}

/** The ID map object must be the map package's and hold the configured table (its UID inside). */
function checkIdMap(contents: { type?: { repr: string } | null; json?: unknown } | null, objectId: string, mapPackageId: string | undefined, tableId: string): LedgerCheck {
  const name = 'id map'
  if (contents == null) return { name, ok: false, detail: `SUI_ID_MAP_OBJECT_ID=${objectId} is not a Move object on this network` }
  const type = contents.type?.repr
  if (mapPackageId !== undefined && !ofPackage(type, mapPackageId)) {
    return { name, ok: false, detail: `SUI_ID_MAP_OBJECT_ID=${objectId} is a ${type ?? 'object of unknown type'}, not of the map package ${mapPackageId}` }
  }
  if (!JSON.stringify(contents.json ?? null).toLowerCase().includes(tableId.slice(2))) {
    return { name, ok: false, detail: `the ID map object does not hold the table SUI_ID_MAP_TABLE_ID=${tableId}` }
  }
  return { name, ok: true, detail: `${objectId} (${type ?? 'unknown type'}) holds the table ${tableId}` }
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
