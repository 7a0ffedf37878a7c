import { after, afterEach, before, beforeEach, describe, test } from 'node:test'
import assert from 'node:assert/strict'
import { generateKeyPairSync, randomBytes } from 'node:crypto'
import { toBase58 } from '@mysten/sui/utils'
import { SuiLedger } from '../../src/ledger/sui-ledger.ts'
import { toSpkiPem } from '../../src/lib/public-keys.ts'
import type { SuiLedgerOptions } from '../../src/ledger/sui-ledger.ts'
import { LedgerUnavailableError, LedgerUnsupportedError } from '../../src/errors.ts'
import { startSuiGraphqlStub, STUB_KEYSTORE_TYPE } from './sui-graphql-stub.ts'
import type { SuiGraphqlStub } from './sui-graphql-stub.ts'

const hexId = (): string => '0x' + randomBytes(32).toString('hex')
const digest = (): string => toBase58(randomBytes(32))
const pem = (): string =>
  generateKeyPairSync('ec', { namedCurve: 'P-256' }).publicKey.export({ type: 'spki', format: 'pem' }).toString()
const pemBody = (value: string): string => value.replace(/-----[A-Z ]+-----|\s+/g, '')

let stub: SuiGraphqlStub

function ledger(overrides: Partial<SuiLedgerOptions> = {}): SuiLedger {
  return new SuiLedger(stub.ledgerOptions(overrides))
}

before(async () => {
  stub = await startSuiGraphqlStub()
})
after(async () => {
  await stub.close()
})
// Every query the adapter sent was valid and answered without error (a stub error is a bug in a query).
afterEach(() => {
  assert.deepEqual(stub.world.errors, [])
})
beforeEach(() => {
  stub.world.fail(null)
  stub.world.delay(0)
  stub.world.clearRequests()
})

describe('SuiLedger.getToken', () => {
  test('returns an address-owned KNS token with its owner', async () => {
    const tokenId = hexId()
    const owner = hexId()
    stub.world.addToken(tokenId, owner)
    assert.deepEqual(await ledger().getToken(tokenId), { objectId: tokenId, owner })
  })

  test('accepts upper-case IDs and answers with the canonical form', async () => {
    const tokenId = hexId()
    stub.world.addToken(tokenId, hexId())
    const token = await ledger().getToken(tokenId.toUpperCase().replace('0X', '0x'))
    assert.equal(token?.objectId, tokenId)
  })

  test('returns null for an unknown object', async () => {
    assert.equal(await ledger().getToken(hexId()), null)
  })

  test('returns null for a Move object of another type, even with the same module name', async () => {
    const otherPackage = hexId()
    const tokenId = hexId()
    stub.world.addToken(tokenId, hexId(), `${otherPackage}::kns::Kns`)
    assert.equal(await ledger().getToken(tokenId), null)
    const coinId = hexId()
    stub.world.addToken(coinId, hexId(), '0x2::coin::Coin<0x2::sui::SUI>')
    assert.equal(await ledger().getToken(coinId), null)
  })

  test('returns null for a package', async () => {
    const packageId = hexId()
    stub.world.addPackage(packageId)
    assert.equal(await ledger().getToken(packageId), null)
  })

  test('owner is null for shared, immutable and object-owned tokens', async () => {
    for (const owner of ['shared', 'immutable', { objectOwner: hexId() }] as const) {
      const tokenId = hexId()
      stub.world.addToken(tokenId, owner)
      assert.deepEqual(await ledger().getToken(tokenId), { objectId: tokenId, owner: null })
    }
  })

  test('does not query for a malformed ID', async () => {
    assert.equal(await ledger().getToken('not-an-id'), null)
    assert.equal(stub.world.requests.length, 0)
  })

  test('exposes normalized token and approval event types', () => {
    const l = ledger()
    assert.equal(l.kind, 'sui')
    assert.equal(l.tokenType, `${stub.knsPackageId}::kns::Kns`)
    assert.equal(l.approvalEventType, `${stub.knsPackageId}::kns::ApprovalEvent`)
  })
})

describe('SuiLedger.getTransaction', () => {
  test('a successful approval transaction with its event', async () => {
    const d = digest()
    const sender = hexId()
    const tokenId = hexId()
    const timestampMs = Date.UTC(2026, 0, 2, 3, 4, 5, 678)
    stub.world.addTransaction({
      digest: d,
      sender,
      success: true,
      timestampMs,
      events: [{ type: `${stub.knsPackageId}::kns::ApprovalEvent`, json: { object_id: tokenId, ref: 'A-123' } }],
    })
    const l = ledger()
    const tx = await l.getTransaction(d)
    assert.deepEqual(tx, {
      digest: d,
      sender,
      success: true,
      timestampMs,
      events: [{ type: l.approvalEventType, sender, json: { object_id: tokenId, ref: 'A-123' } }],
    })
  })

  test('a failed transaction is reported as not successful and without events', async () => {
    const d = digest()
    stub.world.addTransaction({
      digest: d,
      sender: hexId(),
      success: false,
      timestampMs: null,
      events: [{ type: `${stub.knsPackageId}::kns::ApprovalEvent`, json: { object_id: hexId(), ref: 'x' } }],
    })
    const tx = await ledger().getTransaction(d)
    assert.equal(tx?.success, false)
    assert.deepEqual(tx?.events, [])
    assert.equal(tx?.timestampMs, null)
  })

  test('follows event pages', async () => {
    const d = digest()
    const events = Array.from({ length: 120 }, (_, i) => ({
      type: `${stub.knsPackageId}::kns::MintedEvent`, json: { object_id: hexId(), n: i },
    }))
    stub.world.addTransaction({ digest: d, sender: hexId(), success: true, timestampMs: 1, events })
    // Before the start-up check: pages of the service's default size (20).
    const tx = await ledger().getTransaction(d)
    assert.equal(tx?.events.length, 120)
    assert.deepEqual(tx?.events.map((e) => e.json.n), events.map((e) => e.json.n))
    assert.equal(stub.world.requests.length, 6)
    // After it: pages of 50, the most the service allows.
    const checked = ledger()
    await checked.check()
    stub.world.clearRequests()
    assert.equal((await checked.getTransaction(d))?.events.length, 120)
    assert.equal(stub.world.requests.length, 3)
  })

  test('unknown digest -> null, and a malformed one is not sent', async () => {
    assert.equal(await ledger().getTransaction(digest()), null)
    assert.equal(await ledger().getTransaction('not base58 !'), null)
    assert.equal(stub.world.requests.length, 1)
  })

  test('found transactions are cached even with the TTL cache off; misses are not', async () => {
    const l = ledger({ cacheTtlS: 0 })
    const d = digest()
    assert.equal(await l.getTransaction(d), null)
    stub.world.addTransaction({ digest: d, sender: hexId(), success: true, timestampMs: 5, events: [] })
    assert.equal((await l.getTransaction(d))?.digest, d)
    assert.equal((await l.getTransaction(d))?.digest, d)
    assert.equal(stub.world.requests.length, 2)
  })
})

describe('SuiLedger.mintToken', () => {
  test('is unsupported', async () => {
    await assert.rejects(ledger().mintToken(hexId()), LedgerUnsupportedError)
    assert.equal(stub.world.requests.length, 0)
  })
})

describe('SuiLedger.getKeystore', () => {
  test('reads name, creator, image and keys, normalizing base64 bodies to PEM', async () => {
    const keystoreId = hexId()
    const creator = hexId()
    const fullPem = pem()
    const bareBody = pemBody(pem())
    stub.world.addKeystore({
      objectId: keystoreId,
      name: 'Carrier A',
      creator,
      imageUrl: 'https://example.com/a.png',
      publicKeys: [{ keyId: 'k1', publicKey: fullPem }, { keyId: 'k2', publicKey: bareBody }],
    })
    const keystore = await ledger().getKeystore(keystoreId)
    assert.ok(keystore)
    assert.equal(keystore.objectId, keystoreId)
    assert.equal(keystore.name, 'Carrier A')
    assert.equal(keystore.creator, creator)
    assert.equal(keystore.imageUrl, 'https://example.com/a.png')
    assert.deepEqual(keystore.keys.map((k) => [k.keyId, k.revoked]), [['k1', false], ['k2', false]])
    assert.equal(keystore.keys[0]?.publicKey, fullPem)
    assert.match(keystore.keys[1]!.publicKey, /^-----BEGIN PUBLIC KEY-----\n[\s\S]+\n-----END PUBLIC KEY-----\n$/)
    assert.equal(pemBody(keystore.keys[1]!.publicKey), bareBody)
  })

  test('a keystore without image and with a malformed key entry', async () => {
    const keystoreId = hexId()
    stub.world.addObject(keystoreId, {
      type: STUB_KEYSTORE_TYPE,
      owner: 'shared',
      json: {
        id: keystoreId, name: 'B', creator: hexId(), image_url: null,
        public_keys: [{ key_id: 'bad', public_key: 'not base64 !!' }, { key_id: 'ok', public_key: pemBody(pem()) }],
      },
    })
    const keystore = await ledger().getKeystore(keystoreId)
    assert.equal(keystore?.imageUrl, null)
    assert.deepEqual(keystore?.keys.map((k) => k.keyId), ['ok'])
  })

  test('an object shaped like a keystore but of another package is not a keystore (anyone can publish one and link it)', async () => {
    const forged = hexId()
    const key = pem()
    stub.world.addKeystore({ objectId: forged, name: 'Forged', creator: hexId(), publicKeys: [{ keyId: 'k', publicKey: key }], type: `${hexId()}::keystore::Keystore` })
    assert.equal(await ledger().getKeystore(forged), null)
    const genuine = hexId()
    stub.world.addKeystore({ objectId: genuine, name: 'Genuine', creator: hexId(), publicKeys: [{ keyId: 'k', publicKey: key }] })
    assert.equal((await ledger().getKeystore(genuine))?.name, 'Genuine')
  })

  test('null when missing, a package, or not shaped like a keystore', async () => {
    const packageId = hexId()
    stub.world.addPackage(packageId)
    const tokenId = hexId()
    stub.world.addToken(tokenId, hexId())
    const l = ledger()
    assert.equal(await l.getKeystore(hexId()), null)
    assert.equal(await l.getKeystore(packageId), null)
    assert.equal(await l.getKeystore(tokenId), null)
  })

  test('toSpkiPem rejects other PEM labels and garbage', () => {
    assert.equal(toSpkiPem('-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----'), null)
    assert.equal(toSpkiPem(''), null)
    assert.equal(toSpkiPem('abc'), null)
  })
})

describe('SuiLedger.getLinkedKeystores', () => {
  test('returns the linked IDs with exactly one point lookup (never a listing)', async () => {
    const tokenId = hexId()
    const keystores = [hexId(), hexId()]
    stub.world.link(tokenId, keystores)
    assert.deepEqual(await ledger().getLinkedKeystores(tokenId), keystores)
    assert.equal(stub.world.requests.length, 1)
    const [request] = stub.world.requests
    assert.equal(request?.operationName, 'knsGetDynamicField')
    assert.doesNotMatch(request!.query, /dynamicFields/)
    assert.equal(request?.variables.parent, stub.idMapTableId)
    assert.deepEqual(request?.variables.name, {
      type: '0x2::object::ID',
      bcs: Buffer.from(tokenId.slice(2), 'hex').toString('base64'),
    })
  })

  test('[] when the token has no entry', async () => {
    assert.deepEqual(await ledger().getLinkedKeystores(hexId()), [])
    assert.equal(stub.world.requests.length, 1)
  })

  test('[] when the entry holds an empty vector', async () => {
    const tokenId = hexId()
    stub.world.link(tokenId, [])
    assert.deepEqual(await ledger().getLinkedKeystores(tokenId), [])
  })
})

describe('SuiLedger failures', () => {
  const calls = (l: SuiLedger): Array<[string, () => Promise<unknown>]> => [
    ['getToken', () => l.getToken(hexId())],
    ['getTransaction', () => l.getTransaction(digest())],
    ['getKeystore', () => l.getKeystore(hexId())],
    ['getLinkedKeystores', () => l.getLinkedKeystores(hexId())],
  ]

  for (const mode of ['http500', 'graphql-errors'] as const) {
    test(`${mode} -> LedgerUnavailableError on every read`, async () => {
      stub.world.fail(mode)
      for (const [name, call] of calls(ledger())) {
        await assert.rejects(call(), (error: unknown) => {
          assert.ok(error instanceof LedgerUnavailableError, name)
          assert.equal(error.status, 503)
          assert.doesNotMatch(error.message, /127\.0\.0\.1/)
          return true
        })
      }
    })
  }

  test('unreachable endpoint -> LedgerUnavailableError without the URL', async () => {
    const l = new SuiLedger(stub.ledgerOptions({ graphqlUrl: 'http://127.0.0.1:9/graphql?apiKey=secret' }))
    await assert.rejects(l.getToken(hexId()), (error: unknown) => {
      assert.ok(error instanceof LedgerUnavailableError)
      assert.doesNotMatch(error.message, /secret|127\.0\.0\.1/)
      return true
    })
  })

  test('a hung endpoint times out as LedgerUnavailableError', async () => {
    stub.world.delay(500)
    await assert.rejects(ledger({ timeoutMs: 50 }).getToken(hexId()), LedgerUnavailableError)
  })

  test('uses an injected fetch', async () => {
    let used = 0
    const l = ledger({ fetch: (input, init) => { used++; return fetch(input, init) } })
    await l.getToken(hexId())
    assert.equal(used, 1)
  })
})

describe('SuiLedger cache', () => {
  test('TTL cache serves repeats until expiry, then re-reads', async () => {
    let now = 1_000_000
    const l = ledger({ cacheTtlS: 2, now: () => now })
    const tokenId = hexId()
    const firstOwner = hexId()
    stub.world.addToken(tokenId, firstOwner)
    stub.world.link(tokenId, [hexId()])

    assert.equal((await l.getToken(tokenId))?.owner, firstOwner)
    await l.getLinkedKeystores(tokenId)
    assert.equal(stub.world.requests.length, 2)

    const secondOwner = hexId()
    stub.world.addToken(tokenId, secondOwner)
    now += 1_999
    assert.equal((await l.getToken(tokenId))?.owner, firstOwner)
    await l.getLinkedKeystores(tokenId)
    assert.equal(stub.world.requests.length, 2)

    now += 1
    assert.equal((await l.getToken(tokenId))?.owner, secondOwner)
    await l.getLinkedKeystores(tokenId)
    assert.equal(stub.world.requests.length, 4)
  })

  test('misses are cached too, and cacheTtlS 0 turns caching off', async () => {
    const cached = ledger({ cacheTtlS: 60 })
    const uncached = ledger({ cacheTtlS: 0 })
    const keystoreId = hexId()
    await cached.getKeystore(keystoreId)
    await cached.getKeystore(keystoreId)
    assert.equal(stub.world.requests.length, 1)
    stub.world.clearRequests()
    await uncached.getKeystore(keystoreId)
    await uncached.getKeystore(keystoreId)
    assert.equal(stub.world.requests.length, 2)
  })

  test('concurrent reads of the same object share one request', async () => {
    const tokenId = hexId()
    stub.world.addToken(tokenId, hexId())
    const l = ledger()
    const results = await Promise.all([l.getToken(tokenId), l.getToken(tokenId), l.getToken(tokenId)])
    assert.equal(new Set(results.map((r) => r?.owner)).size, 1)
    assert.equal(stub.world.requests.length, 1)
  })

  test('a returned list cannot corrupt the cache', async () => {
    const l = ledger({ cacheTtlS: 60 })
    const tokenId = hexId()
    const keystoreId = hexId()
    stub.world.link(tokenId, [keystoreId])
    ;(await l.getLinkedKeystores(tokenId)).push('0xdead')
    assert.deepEqual(await l.getLinkedKeystores(tokenId), [keystoreId])
  })

  test('close() resolves', async () => {
    await ledger().close()
  })
})
