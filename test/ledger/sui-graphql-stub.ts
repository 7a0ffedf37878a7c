/**
 * A local stand-in for Sui's GraphQL RPC. It answers exactly the operations SuiLedger sends,
 * in the response shapes of the real schema (bundled with @mysten/sui), from an in-memory world.
 * Dispatch is by operation name, so a renamed or new query fails loudly instead of silently.
 */
import { createServer } from 'node:http'
import type { IncomingMessage, ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { fromBase64, normalizeStructTag, normalizeSuiAddress, toHex } from '@mysten/sui/utils'

export const STUB_KNS_PACKAGE_ID = '0x' + '6b'.repeat(32)
export const STUB_ID_MAP_TABLE_ID = '0x' + '7a'.repeat(32)
export const STUB_KEYSTORE_TYPE = `0x${'5c'.repeat(32)}::keystore::Keystore`
/** The real service's default max page size; the adapter asks for `first: 50`. */
const EVENTS_PAGE_SIZE = 50

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

interface StoredObject { type: string; json: Record<string, unknown>; owner: StubOwner }

export interface SuiGraphqlWorld {
  addToken(objectId: string, owner: StubOwner, type?: string): void
  addKeystore(keystore: StubKeystore): void
  /** Any Move object, e.g. a keystore with hand-made JSON. */
  addObject(objectId: string, object: StoredObject): void
  /** A Move package: exists, but `asMoveObject` is null. */
  addPackage(objectId: string): void
  addTransaction(tx: StubTransaction): void
  link(tokenId: string, keystoreIds: string[]): void
  unlink(tokenId: string): void
  /** Make every request fail: HTTP 500, or HTTP 200 with a GraphQL `errors` array. */
  fail(mode: 'http500' | 'graphql-errors' | null): void
  /** Delay every answer, to exercise client timeouts. */
  delay(ms: number): void
  /** Every request received, oldest first. */
  readonly requests: StubRequest[]
  clearRequests(): void
}

export interface SuiGraphqlStub {
  url: string
  world: SuiGraphqlWorld
  knsPackageId: string
  idMapTableId: string
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

function cursor(index: number): string {
  return Buffer.from(JSON.stringify({ c: 1, i: index })).toString('base64')
}

function cursorIndex(value: unknown): number {
  if (typeof value !== 'string') return 0
  const parsed = JSON.parse(Buffer.from(value, 'base64').toString('utf8')) as { i: number }
  return parsed.i + 1
}

export async function startSuiGraphqlStub(options: { knsPackageId?: string; idMapTableId?: string } = {}): Promise<SuiGraphqlStub> {
  const knsPackageId = id(options.knsPackageId ?? STUB_KNS_PACKAGE_ID)
  const idMapTableId = id(options.idMapTableId ?? STUB_ID_MAP_TABLE_ID)
  const objects = new Map<string, StoredObject | 'package'>()
  const transactions = new Map<string, StubTransaction>()
  const links = new Map<string, string[]>()
  const requests: StubRequest[] = []
  let failure: 'http500' | 'graphql-errors' | null = null
  let delayMs = 0

  const world: SuiGraphqlWorld = {
    addToken(objectId, owner, type = `${knsPackageId}::kns::Kns`) {
      objects.set(id(objectId), { type, json: { id: id(objectId) }, owner })
    },
    addKeystore(k) {
      objects.set(id(k.objectId), {
        type: k.type ?? STUB_KEYSTORE_TYPE,
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
    fail(mode) { failure = mode },
    delay(ms) { delayMs = ms },
    requests,
    clearRequests() { requests.length = 0 },
  }

  function getObject(variables: Record<string, unknown>): unknown {
    const address = id(String(variables.address))
    const stored = objects.get(address)
    if (stored === undefined) return { object: null }
    if (stored === 'package') return { object: { address, owner: { __typename: 'Immutable' }, asMoveObject: null } }
    return {
      object: {
        address,
        owner: ownerJson(stored.owner),
        asMoveObject: { contents: { type: { repr: normalizeStructTag(stored.type) }, json: stored.json } },
      },
    }
  }

  function getTransaction(variables: Record<string, unknown>): unknown {
    const tx = transactions.get(String(variables.digest))
    if (tx === undefined) return { transaction: null }
    // A failed transaction's effects carry no events, whatever the test world says.
    const all = tx.success ? tx.events : []
    const start = cursorIndex(variables.eventsAfter)
    const page = all.slice(start, start + EVENTS_PAGE_SIZE)
    return {
      transaction: {
        digest: tx.digest,
        sender: { address: id(tx.sender) },
        effects: {
          status: tx.success ? 'SUCCESS' : 'FAILURE',
          timestamp: tx.timestampMs === null ? null : new Date(tx.timestampMs).toISOString(),
          events: {
            pageInfo: {
              hasNextPage: start + page.length < all.length,
              endCursor: page.length === 0 ? null : cursor(start + page.length - 1),
            },
            nodes: page.map((event) => ({
              sender: { address: id(event.sender ?? tx.sender) },
              contents: { type: { repr: normalizeStructTag(event.type) }, json: event.json },
            })),
          },
        },
      },
    }
  }

  function getDynamicField(variables: Record<string, unknown>): unknown {
    const parent = id(String(variables.parent))
    const name = variables.name as { type?: string; bcs?: string } | undefined
    const nameType = name?.type === undefined ? null : normalizeStructTag(name.type)
    const keyBytes = name?.bcs === undefined ? new Uint8Array() : fromBase64(name.bcs)
    // Sui keys dynamic fields by (type, bcs): a different name type is a different field.
    const found = parent === idMapTableId && nameType === normalizeStructTag('0x2::object::ID') && keyBytes.length === 32
      ? links.get('0x' + toHex(keyBytes))
      : undefined
    if (found === undefined) return { address: { dynamicField: null } }
    return {
      address: {
        dynamicField: {
          value: {
            __typename: 'MoveValue',
            type: { repr: `vector<${normalizeStructTag('0x2::object::ID')}>` },
            json: found,
          },
        },
      },
    }
  }

  const handlers: Record<string, (variables: Record<string, unknown>) => unknown> = {
    knsGetObject: getObject,
    knsGetTransaction: getTransaction,
    knsGetDynamicField: getDynamicField,
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const send = (status: number, body: unknown): void => {
      res.writeHead(status, { 'content-type': 'application/json' })
      res.end(JSON.stringify(body))
    }
    if (req.method !== 'POST' || req.url !== '/graphql') return send(404, { errors: [{ message: 'Not found' }] })
    const chunks: Buffer[] = []
    for await (const chunk of req) chunks.push(chunk as Buffer)
    let body: { query?: string; operationName?: string | null; variables?: Record<string, unknown> | null }
    try {
      body = JSON.parse(Buffer.concat(chunks).toString('utf8'))
    } catch {
      return send(400, { errors: [{ message: 'Invalid JSON body' }] })
    }
    const query = body.query ?? ''
    const operationName = body.operationName ?? /\b(?:query|mutation)\s+(\w+)/.exec(query)?.[1] ?? null
    const variables = body.variables ?? {}
    requests.push({ operationName, query, variables })
    if (delayMs > 0) await new Promise((resolve) => setTimeout(resolve, delayMs))
    if (failure === 'http500') {
      res.writeHead(500, { 'content-type': 'text/plain' })
      return void res.end('Internal Server Error')
    }
    if (failure === 'graphql-errors') {
      return send(200, { data: null, errors: [{ message: 'Request timed out', extensions: { code: 'REQUEST_TIMEOUT' } }] })
    }
    const handler = operationName === null ? undefined : handlers[operationName]
    if (handler === undefined) {
      return send(200, { errors: [{ message: `Stub does not know operation ${String(operationName)}` }] })
    }
    send(200, { data: handler(variables) })
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
    idMapTableId,
    close: () => new Promise<void>((resolve, reject) => {
      server.closeAllConnections()
      server.close((error) => (error ? reject(error) : resolve()))
    }),
  }
}
