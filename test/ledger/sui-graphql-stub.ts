/**
 * A local stand-in for Sui's GraphQL RPC (`sui-indexer-alt-graphql`), strict where the real
 * one is strict: every request is parsed and validated against the schema that ships with the
 * installed `@mysten/sui` and then executed against it (graphql-js), so a field that does not
 * exist, a wrong argument type, a malformed address or a page larger than the service's limit
 * gets the GraphQL errors the real service gives (`extensions.code` as in its src/error.rs),
 * and only the fields asked for come back. What it answers comes from an in-memory world.
 *
 * It cannot run what needs the live network: a zkLogin proof (Groth16 against the chain's
 * JWKs) is accepted when the test registered it (`acceptZkProof`), bound to the issuer, the
 * kid, the address seed, the ephemeral key and the max epoch as the real proof is; everything
 * else in a zkLogin signature is checked as Sui checks it (sui-graphql-zklogin.ts: the header,
 * the providers and JWKs the chain holds, the max epoch's window, the author's address, the
 * ephemeral signature over the message), and other signature schemes with real crypto.
 */
import { createServer } from 'node:http'
import type { IncomingMessage, ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { execute, type GraphQLError } from 'graphql'
import { parseSerializedSignature } from '@mysten/sui/cryptography'
import { verifyPersonalMessageSignature } from '@mysten/sui/verify'
import type { JWK } from 'jose'
import { fromBase64, normalizeStructTag, normalizeSuiAddress, toHex } from '@mysten/sui/utils'
import type { SuiLedgerOptions } from '../../src/ledger/sui-ledger.ts'
import { checkQuery, executableSchema, SUI_ERROR, suiError } from './sui-graphql-schema.ts'
import { ZkLoginVerifier, type StubZkProof } from './sui-graphql-zklogin.ts'

export {
  STUB_ZKLOGIN_ISSUER, STUB_ZKLOGIN_JWK, STUB_ZKLOGIN_KID, ZKLOGIN_MAX_EPOCH_UPPER_BOUND_DELTA, type StubZkProof,
} from './sui-graphql-zklogin.ts'

export const STUB_KNS_PACKAGE_ID = '0x' + '6b'.repeat(32)
export const STUB_KEYSTORE_PACKAGE_ID = '0x' + '5c'.repeat(32)
export const STUB_MAP_PACKAGE_ID = '0x' + '4d'.repeat(32)
export const STUB_ID_MAP_OBJECT_ID = '0x' + '7b'.repeat(32)
export const STUB_ID_MAP_TABLE_ID = '0x' + '7a'.repeat(32)
export const STUB_KEYSTORE_TYPE = `${STUB_KEYSTORE_PACKAGE_ID}::keystore::Keystore`
/** The real service's page limits when not configured otherwise (default 20, max 50; the default never above the max). */
export const DEFAULT_PAGE_SIZE = 20
export const MAX_PAGE_SIZE = 50

export type StubOwner = string | 'shared' | 'immutable' | { objectOwner: string } | { consensusOwner: string }

export interface StubEvent { type: string; sender?: string; json: Record<string, unknown> }
export interface StubTransaction {
  digest: string
  sender: string
  success: boolean
  events: StubEvent[]
  timestampMs: number | null
}
export interface StubKeystore {
  objectId: string
  name: string
  creator: string
  imageUrl?: string | null
  publicKeys: Array<{ keyId: string; publicKey: string }>
  type?: string
}
export interface StubRequest { operationName: string | null; query: string; variables: Record<string, unknown> }
/** A fault injected into one root field: an error the real service can answer, and/or a stall. */
export interface StubFault { error?: 'INTERNAL_SERVER_ERROR' | 'REQUEST_TIMEOUT'; delayMs?: number }

interface StoredObject { type: string; json: Record<string, unknown>; owner: StubOwner }

export interface SuiGraphqlWorld {
  addToken(objectId: string, owner: StubOwner, type?: string): void
  addKeystore(keystore: StubKeystore): void
  /** Any Move object, e.g. a keystore with hand-made JSON. */
  addObject(objectId: string, object: StoredObject): void
  /** A Move package: exists, `asMovePackage` set and `asMoveObject` null. */
  addPackage(objectId: string): void
  addTransaction(tx: StubTransaction): void
  link(tokenId: string, keystoreIds: string[]): void
  unlink(tokenId: string): void
  /** A zkLogin proof the stub treats as valid (it cannot run the Groth16 verifier), bound to its iss, kid, seed, ephemeral key, max epoch. */
  acceptZkProof(proof: StubZkProof): void
  /**
   * An OpenID provider whose JWKs the chain holds (merged into those it has): only its tokens'
   * proofs verify, and only with a kid it holds. Held from the start: STUB_ZKLOGIN_ISSUER
   * (Google) with STUB_ZKLOGIN_KID.
   */
  addZkLoginProvider(iss: string, jwks: { keys: JWK[] }): void
  /** A JWK rotated out: signatures whose header names it no longer verify. */
  removeZkLoginJwk(iss: string, kid: string): void
  /** The current epoch (zkLogin signatures with a smaller max epoch have expired, or more than 30 above it are refused). */
  setEpoch(epoch: number): void
  setMaxPageSize(size: number): void
  /** Make every request fail: HTTP 500, or HTTP 200 with a GraphQL `errors` array. */
  fail(mode: 'http500' | 'graphql-errors' | null): void
  /** A fault on one root field (e.g. `verifySignature`), null to clear. */
  fault(field: string, fault: StubFault | null): void
  /** Delay every answer, to exercise client timeouts. */
  delay(ms: number): void
  /** Every request received, oldest first (invalid ones too). */
  readonly requests: StubRequest[]
  /** The GraphQL errors the stub answered, oldest first: a test can assert there were none. */
  readonly errors: Array<{ operationName: string | null; message: string; code: unknown }>
  clearRequests(): void
}

export interface SuiGraphqlStub {
  url: string
  world: SuiGraphqlWorld
  knsPackageId: string
  keystorePackageId: string
  mapPackageId: string
  idMapObjectId: string
  idMapTableId: string
  /** SuiLedger options for this stub's deployment (no cache unless overridden). */
  ledgerOptions(overrides?: Partial<SuiLedgerOptions>): SuiLedgerOptions
  /** The environment of a server on LEDGER=sui against this stub. */
  ledgerEnv(): Record<string, string>
  close(): Promise<void>
}

const id = (value: string): string => normalizeSuiAddress(value)

function ownerJson(owner: StubOwner): Record<string, unknown> {
  if (owner === 'shared') return { __typename: 'Shared', initialSharedVersion: 3 }
  if (owner === 'immutable') return { __typename: 'Immutable' }
  if (typeof owner === 'string') return { __typename: 'AddressOwner', address: { address: id(owner) } }
  if ('objectOwner' in owner) return { __typename: 'ObjectOwner', address: { address: id(owner.objectOwner) } }
  return { __typename: 'ConsensusAddressOwner', address: { address: id(owner.consensusOwner) } }
}

/** Opaque cursors, as the real service's are; a cursor it did not issue is a user error. */
function cursor(index: number): string {
  return Buffer.from(JSON.stringify({ c: 1, i: index })).toString('base64')
}

function cursorIndex(value: unknown): number {
  if (value == null) return 0
  try {
    const parsed = JSON.parse(Buffer.from(String(value), 'base64').toString('utf8')) as { i?: unknown }
    if (typeof parsed.i === 'number' && Number.isSafeInteger(parsed.i) && parsed.i >= 0) return parsed.i + 1
  } catch { /* below */ }
  throw suiError('Failed to parse cursor', SUI_ERROR.BAD_USER_INPUT)
}

/** A forward page of `all`, as a connection: `first` (default page size when absent) from after `after`. */
function page<T>(all: readonly T[], args: { first?: number | null; after?: string | null }, defaultSize: number): unknown {
  const start = cursorIndex(args.after)
  const nodes = all.slice(start, start + (args.first ?? defaultSize))
  return {
    pageInfo: {
      hasNextPage: start + nodes.length < all.length,
      hasPreviousPage: start > 0,
      startCursor: nodes.length === 0 ? null : cursor(start),
      endCursor: nodes.length === 0 ? null : cursor(start + nodes.length - 1),
    },
    nodes,
    edges: nodes.map((node, i) => ({ cursor: cursor(start + i), node })),
  }
}

/** The real filter's three forms: `0xpkg`, `0xpkg::module`, `0xpkg::module::Type` (generics optional). */
function eventTypeMatcher(filter: string | null): (type: string) => boolean {
  if (filter === null) return () => true
  const parts = filter.split('::')
  try {
    if (parts.length === 1) {
      const pkg = id(parts[0]!)
      return (type) => id(type.split('::')[0]!) === pkg
    }
    if (parts.length === 2) {
      const prefix = `${id(parts[0]!)}::${parts[1]}`
      return (type) => { const [p, m] = normalizeStructTag(type).split('::'); return `${p}::${m}` === prefix }
    }
    const wanted = normalizeStructTag(filter)
    const generic = filter.includes('<')
    return (type) => {
      const full = normalizeStructTag(type)
      return generic ? full === wanted : full.split('<')[0] === wanted
    }
  } catch {
    throw suiError(`Invalid filter, expected: type, package, or package::module: ${filter.slice(0, 80)}`, SUI_ERROR.BAD_USER_INPUT)
  }
}

/** The deployment the stub holds; by default made-up IDs, or e.g. the published testnet ones of domain.md. */
export interface StubOptions {
  knsPackageId?: string
  keystorePackageId?: string
  mapPackageId?: string
  idMapObjectId?: string
  idMapTableId?: string
}

export async function startSuiGraphqlStub(options: StubOptions = {}): Promise<SuiGraphqlStub> {
  const knsPackageId = id(options.knsPackageId ?? STUB_KNS_PACKAGE_ID)
  const keystorePackageId = id(options.keystorePackageId ?? STUB_KEYSTORE_PACKAGE_ID)
  const mapPackageId = id(options.mapPackageId ?? STUB_MAP_PACKAGE_ID)
  const idMapObjectId = id(options.idMapObjectId ?? STUB_ID_MAP_OBJECT_ID)
  const idMapTableId = id(options.idMapTableId ?? STUB_ID_MAP_TABLE_ID)
  const keystoreType = `${keystorePackageId}::keystore::Keystore`
  const objects = new Map<string, StoredObject | 'package'>()
  const transactions = new Map<string, StubTransaction>()
  const links = new Map<string, string[]>()
  const zkLogin = new ZkLoginVerifier()
  const faults = new Map<string, StubFault>()
  const requests: StubRequest[] = []
  const errors: SuiGraphqlWorld['errors'] = []
  let failure: 'http500' | 'graphql-errors' | null = null
  let delayMs = 0
  let epoch = 100
  let maxPageSize = MAX_PAGE_SIZE
  const schema = executableSchema(() => maxPageSize)

  const world: SuiGraphqlWorld = {
    addToken(objectId, owner, type = `${knsPackageId}::kns::Kns`) {
      objects.set(id(objectId), { type, json: { id: id(objectId) }, owner })
    },
    addKeystore(k) {
      objects.set(id(k.objectId), {
        type: k.type ?? keystoreType,
        owner: 'shared',
        json: {
          id: id(k.objectId),
          name: k.name,
          creator: id(k.creator),
          ...(k.imageUrl === undefined ? {} : { image_url: k.imageUrl }),
          public_keys: k.publicKeys.map((key) => ({ key_id: key.keyId, public_key: key.publicKey })),
        },
      })
    },
    addObject(objectId, object) { objects.set(id(objectId), object) },
    addPackage(objectId) { objects.set(id(objectId), 'package') },
    addTransaction(tx) { transactions.set(tx.digest, tx) },
    link(tokenId, keystoreIds) { links.set(id(tokenId), keystoreIds.map(id)) },
    unlink(tokenId) { links.delete(id(tokenId)) },
    acceptZkProof(proof) { zkLogin.acceptProof(proof) },
    addZkLoginProvider(iss, jwks) { zkLogin.addProvider(iss, jwks) },
    removeZkLoginJwk(iss, kid) { zkLogin.removeJwk(iss, kid) },
    setEpoch(value) { epoch = value },
    setMaxPageSize(size) { maxPageSize = size },
    fail(mode) { failure = mode },
    fault(field, value) { if (value === null) faults.delete(field); else faults.set(field, value) },
    delay(ms) { delayMs = ms },
    requests,
    errors,
    clearRequests() { requests.length = 0; errors.length = 0 },
  }

  // The published objects every deployment has: the packages and the ID map holding its table.
  for (const pkg of [knsPackageId, keystorePackageId, mapPackageId]) world.addPackage(pkg)
  world.addObject(idMapObjectId, {
    type: `${mapPackageId}::map::IdMap`,
    owner: 'shared',
    json: { id: idMapObjectId, map: { id: idMapTableId, size: '0' } },
  })

  function objectNode(address: string): unknown {
    const stored = objects.get(address)
    if (stored === undefined) return null
    if (stored === 'package') return { address, owner: { __typename: 'Immutable' }, asMoveObject: null, asMovePackage: { address } }
    return {
      address,
      owner: ownerJson(stored.owner),
      asMovePackage: null,
      asMoveObject: { address, contents: { type: { repr: normalizeStructTag(stored.type) }, json: stored.json } },
    }
  }

  function transactionNode(digest: string): unknown {
    const tx = transactions.get(digest)
    if (tx === undefined) return null
    // A failed transaction's effects carry no events, whatever the test world says.
    const events = (tx.success ? tx.events : []).map((event) => ({
      sender: { address: id(event.sender ?? tx.sender) },
      contents: { type: { repr: normalizeStructTag(event.type) }, json: event.json },
    }))
    return {
      digest: tx.digest,
      sender: { address: id(tx.sender) },
      effects: {
        status: tx.success ? 'SUCCESS' : 'FAILURE',
        timestamp: tx.timestampMs === null ? null : new Date(tx.timestampMs).toISOString(),
        events: (args: { first?: number; after?: string }) => page(events, args, Math.min(DEFAULT_PAGE_SIZE, maxPageSize)),
      },
    }
  }

  function dynamicField(parent: string, name: { type: string; bcs: string }): unknown {
    let nameType: string
    try {
      nameType = normalizeStructTag(name.type)
    } catch {
      throw suiError(`Invalid type: ${name.type.slice(0, 80)}`, SUI_ERROR.BAD_USER_INPUT)
    }
    const keyBytes = fromBase64(name.bcs)
    // Sui keys dynamic fields by (type, bcs): a different name type is a different field.
    const found = parent === idMapTableId && nameType === normalizeStructTag('0x2::object::ID') && keyBytes.length === 32
      ? links.get('0x' + toHex(keyBytes))
      : undefined
    if (found === undefined) return null
    return { value: { __typename: 'MoveValue', type: { repr: `vector<${normalizeStructTag('0x2::object::ID')}>` }, json: found } }
  }

  /** The real service's verify_signature: success, or a BAD_USER_INPUT error saying why not. */
  async function verify(message: string, signature: string, personal: boolean, author: string, zkLoginOnly: boolean): Promise<{ success: boolean }> {
    if (!personal) throw suiError('Failed to deserialize TransactionData from bytes', SUI_ERROR.BAD_USER_INPUT)
    let parsed: ReturnType<typeof parseSerializedSignature>
    try {
      parsed = parseSerializedSignature(signature)
    } catch {
      throw suiError('Cannot parse signature', SUI_ERROR.BAD_USER_INPUT)
    }
    const bytes = fromBase64(message)
    const failed = (why: string) => suiError(`Verification failed: ${why}`, SUI_ERROR.BAD_USER_INPUT)
    if (parsed.signatureScheme !== 'ZkLogin') {
      if (zkLoginOnly) throw suiError('Cannot parse signature', SUI_ERROR.BAD_USER_INPUT)
      try {
        await verifyPersonalMessageSignature(bytes, signature, { address: author })
      } catch (err) {
        throw failed((err as Error).message)
      }
      return { success: true }
    }
    await zkLogin.verify(parsed.zkLogin, bytes, author, epoch)
    return { success: true }
  }

  async function faulted<T>(field: string, answer: () => T | Promise<T>): Promise<T> {
    const fault = faults.get(field)
    if (fault?.delayMs !== undefined) await new Promise((resolve) => setTimeout(resolve, fault.delayMs))
    if (fault?.error === 'REQUEST_TIMEOUT') throw suiError('Request timed out after 10.00s', SUI_ERROR.REQUEST_TIMEOUT)
    if (fault?.error === 'INTERNAL_SERVER_ERROR') throw suiError('Failed to fetch current Epoch', SUI_ERROR.INTERNAL_SERVER_ERROR)
    return answer()
  }

  /**
   * `events(filter:)`: every event of every successful transaction, in the order the
   * transactions were added (checkpoint order). The type filter takes a package, a
   * package::module or a full type, as the real one does; with `module` as well it is refused.
   */
  function eventsConnection(args: { first?: number | null; after?: string | null; last?: number | null; before?: string | null; filter?: { type?: string | null; module?: string | null } | null }): unknown {
    if (args.last != null || args.before != null) throw suiError('the stub pages events forward only', SUI_ERROR.BAD_USER_INPUT)
    const filter = args.filter ?? {}
    if (filter.type != null && filter.module != null) {
      throw suiError('Filtering by both emitting module and event type is not supported', SUI_ERROR.BAD_USER_INPUT)
    }
    const matches = eventTypeMatcher(filter.type ?? null)
    const all: unknown[] = []
    for (const tx of transactions.values()) {
      if (!tx.success) continue
      tx.events.forEach((event, index) => {
        if (!matches(event.type)) return
        all.push({
          sequenceNumber: index,
          timestamp: tx.timestampMs === null ? null : new Date(tx.timestampMs).toISOString(),
          sender: { address: id(event.sender ?? tx.sender) },
          transaction: transactionNode(tx.digest),
          contents: { type: { repr: normalizeStructTag(event.type) }, json: event.json },
        })
      })
    }
    return page(all, args, Math.min(DEFAULT_PAGE_SIZE, maxPageSize))
  }

  const rootValue = {
    events: (args: Parameters<typeof eventsConnection>[0]) => faulted('events', () => eventsConnection(args)),
    object: (args: { address: string }) => faulted('object', () => objectNode(args.address)),
    address: (args: { address: string }) => faulted('address', () => ({
      address: args.address,
      dynamicField: ({ name }: { name: { type: string; bcs: string } }) => dynamicField(args.address, name),
    })),
    transaction: (args: { digest: string }) => faulted('transaction', () => transactionNode(args.digest)),
    epoch: () => faulted('epoch', () => ({ epochId: epoch })),
    serviceConfig: () => faulted('serviceConfig', () => ({
      maxPageSize: (args: { type: string; field: string }) => {
        const type = schema.getType(args.type) as { getFields?: () => Record<string, { args: Array<{ name: string }> }> } | undefined
        const field = type?.getFields?.()[args.field]
        return field?.args.some((a) => a.name === 'first') ? maxPageSize : null
      },
      defaultPageSize: () => DEFAULT_PAGE_SIZE,
      queryTimeoutMs: () => 40_000,
    })),
    verifySignature: (args: { message: string; signature: string; intentScope: string; author: string }) =>
      faulted('verifySignature', () => verify(args.message, args.signature, args.intentScope === 'PERSONAL_MESSAGE', args.author, false)),
    verifyZkLoginSignature: (args: { bytes: string; signature: string; intentScope: string; author: string }) =>
      faulted('verifyZkLoginSignature', () => verify(args.bytes, args.signature, args.intentScope === 'PERSONAL_MESSAGE', args.author, true)),
  }

  async function answer(query: string, operationName: string | null, variables: Record<string, unknown>): Promise<{ data?: unknown; errors?: readonly GraphQLError[] }> {
    const checked = checkQuery(schema, query)
    if ('errors' in checked) return { errors: checked.errors }
    const result = await execute({ schema, document: checked.document, rootValue, variableValues: variables, operationName })
    return result
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const send = (status: number, body: unknown): void => {
      res.writeHead(status, { 'content-type': 'application/json' })
      res.end(JSON.stringify(body))
    }
    if (req.method !== 'POST' || req.url !== '/graphql') return send(404, { errors: [{ message: 'Not found' }] })
    const chunks: Buffer[] = []
    for await (const chunk of req) chunks.push(chunk as Buffer)
    let body: { query?: unknown; operationName?: unknown; variables?: unknown }
    try {
      body = JSON.parse(Buffer.concat(chunks).toString('utf8'))
    } catch {
      return send(400, { errors: [{ message: 'Invalid JSON body' }] })
    }
    const query = typeof body.query === 'string' ? body.query : ''
    const operationName = typeof body.operationName === 'string' ? body.operationName : null
    const variables = typeof body.variables === 'object' && body.variables !== null ? body.variables as Record<string, unknown> : {}
    requests.push({ operationName: operationName ?? /\b(?:query|mutation)\s+(\w+)/.exec(query)?.[1] ?? null, query, variables })
    if (delayMs > 0) await new Promise((resolve) => setTimeout(resolve, delayMs))
    if (failure === 'http500') {
      res.writeHead(500, { 'content-type': 'text/plain' })
      return void res.end('Internal Server Error')
    }
    if (failure === 'graphql-errors') {
      return send(200, { data: null, errors: [{ message: 'Request timed out', extensions: { code: SUI_ERROR.REQUEST_TIMEOUT } }] })
    }
    const result = await answer(query, operationName, variables)
    for (const error of result.errors ?? []) errors.push({ operationName, message: error.message, code: error.extensions?.code })
    send(200, result)
  }

  const server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      if (!res.headersSent) res.writeHead(500)
      res.end(String(error))
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}/graphql`,
    world,
    knsPackageId,
    keystorePackageId,
    mapPackageId,
    idMapObjectId,
    idMapTableId,
    ledgerOptions: (overrides = {}) => ({
      graphqlUrl: `http://127.0.0.1:${port}/graphql`,
      knsPackageId,
      keystorePackageId,
      mapPackageId,
      idMapObjectId,
      idMapTableId,
      cacheTtlS: 0,
      freshnessMs: 0,
      ...overrides,
    }),
    ledgerEnv: () => ({
      LEDGER: 'sui',
      SUI_GRAPHQL_URL: `http://127.0.0.1:${port}/graphql`,
      KNS_PACKAGE_ID: knsPackageId,
      SUI_KEYSTORE_PACKAGE_ID: keystorePackageId,
      SUI_MAP_PACKAGE_ID: mapPackageId,
      SUI_ID_MAP_OBJECT_ID: idMapObjectId,
      SUI_ID_MAP_TABLE_ID: idMapTableId,
      LEDGER_FRESHNESS_MS: '0',
    }),
    close: () => new Promise<void>((resolve, reject) => {
      server.closeAllConnections()
      server.close((error) => (error ? reject(error) : resolve()))
    }),
  }
}
