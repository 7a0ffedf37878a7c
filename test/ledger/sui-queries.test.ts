/**
 * The queries the service sends, against the schema shipped with the installed @mysten/sui;
 * and the stub, which must refuse what the real service refuses (a stub that answers anything
 * would let tests pass while the live network rejects every query).
 */
import { after, before, beforeEach, describe, test } from 'node:test'
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { print, validate } from 'graphql'
import { toBase58 } from '@mysten/sui/utils'
import { LedgerUnavailableError } from '../../src/errors.ts'
import { SuiLedger } from '../../src/ledger/sui-ledger.ts'
import { SUI_QUERIES } from '../../src/ledger/sui-queries.ts'
import { sdkSchema } from './sui-graphql-schema.ts'
import { MAX_PAGE_SIZE, startSuiGraphqlStub, STUB_ID_MAP_OBJECT_ID, type SuiGraphqlStub } from './sui-graphql-stub.ts'

const hexId = (): string => '0x' + randomBytes(32).toString('hex')

let stub: SuiGraphqlStub
before(async () => { stub = await startSuiGraphqlStub() })
after(async () => { await stub.close() })
beforeEach(() => {
  stub.world.setMaxPageSize(MAX_PAGE_SIZE)
  stub.world.clearRequests()
})

async function post(body: unknown): Promise<{ status: number; body: { data?: unknown; errors?: Array<{ message: string; extensions?: { code?: string } }> } }> {
  const res = await fetch(stub.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })
  return { status: res.status, body: await res.json() as never }
}

describe('the service\'s queries', () => {
  for (const [name, document] of Object.entries(SUI_QUERIES)) {
    test(`${name} validates against the schema shipped with @mysten/sui (no deprecated field)`, () => {
      assert.deepEqual(validate(sdkSchema(), document as never).map((e) => e.message), [])
      assert.doesNotMatch(print(document as never), /verifyZkLoginSignature/)
    })
  }
})

describe('the stub refuses what the real service refuses', () => {
  test('a field that does not exist: GRAPHQL_VALIDATION_FAILED, no data', async () => {
    const res = await post({ query: 'query q($a: SuiAddress!) { object(address: $a) { address noSuchField } }', variables: { a: hexId() } })
    assert.equal(res.body.data, undefined)
    assert.equal(res.body.errors?.[0]?.extensions?.code, 'GRAPHQL_VALIDATION_FAILED')
    assert.match(res.body.errors![0]!.message, /noSuchField/)
  })

  test('a syntax error: GRAPHQL_PARSE_FAILED', async () => {
    const res = await post({ query: 'query { object(address: ' })
    assert.equal(res.body.errors?.[0]?.extensions?.code, 'GRAPHQL_PARSE_FAILED')
  })

  test('an operation name the document does not have: an error, not an empty answer', async () => {
    const res = await post({ query: 'query knsGetObject($address: SuiAddress!) { object(address: $address) { address } }', operationName: 'other', variables: { address: hexId() } })
    assert.equal(res.body.data, undefined)
    assert.match(res.body.errors?.[0]?.message ?? '', /Unknown operation named "other"/)
  })

  test('a malformed address or Base64 variable: refused', async () => {
    const address = await post({ query: 'query q($a: SuiAddress!) { object(address: $a) { address } }', variables: { a: 'not-an-address' } })
    assert.match(address.body.errors?.[0]?.message ?? '', /SuiAddress/)
    const base64 = await post({
      query: 'query q($m: Base64!, $s: Base64!, $a: SuiAddress!) { verifySignature(message: $m, signature: $s, intentScope: PERSONAL_MESSAGE, author: $a) { success } }',
      variables: { m: '!!', s: 'AA==', a: hexId() },
    })
    assert.match(base64.body.errors?.[0]?.message ?? '', /Base64/)
  })

  test('a page larger than the service\'s limit: BAD_USER_INPUT, as the real pagination says it', async () => {
    stub.world.setMaxPageSize(5)
    const digest = toBase58(randomBytes(32))
    stub.world.addTransaction({ digest, sender: hexId(), success: true, timestampMs: 1, events: [] })
    const res = await post({ query: 'query q($d: String!) { transaction(digest: $d) { effects { events(first: 6) { nodes { sender { address } } } } } }', variables: { d: digest } })
    assert.equal(res.body.errors?.[0]?.extensions?.code, 'BAD_USER_INPUT')
    assert.equal(res.body.errors?.[0]?.message, 'Page size of 6 exceeds max of 5 for connection')
  })
})

describe('SuiLedger against the service\'s page limit', () => {
  function transactionWith(events: number): string {
    const digest = toBase58(randomBytes(32))
    stub.world.addTransaction({
      digest, sender: hexId(), success: true, timestampMs: 1,
      events: Array.from({ length: events }, (_, n) => ({ type: `${stub.knsPackageId}::kns::MintedEvent`, json: { n } })),
    })
    return digest
  }

  test('before the start-up check (or when it could not run): the service\'s default page size, every event in order', async () => {
    stub.world.setMaxPageSize(10)
    const tx = await new SuiLedger(stub.ledgerOptions()).getTransaction(transactionWith(45))
    assert.deepEqual(tx?.events.map((e) => e.json.n), Array.from({ length: 45 }, (_, n) => n))
    assert.deepEqual(stub.world.requests.map((r) => r.variables.eventsFirst), [null, null, null, null, null])
    assert.deepEqual(stub.world.errors, [])
  })

  test('after check(): pages of the service\'s size, following the cursor, every event in order', async () => {
    stub.world.setMaxPageSize(3)
    const ledger = new SuiLedger(stub.ledgerOptions())
    const checks = await ledger.check()
    assert.ok(checks.every((c) => c.ok), JSON.stringify(checks))
    stub.world.clearRequests()
    const tx = await ledger.getTransaction(transactionWith(7))
    assert.deepEqual(tx?.events.map((e) => e.json.n), [0, 1, 2, 3, 4, 5, 6])
    assert.deepEqual(stub.world.requests.map((r) => r.variables.eventsFirst), [3, 3, 3])
    assert.deepEqual(stub.world.errors, [])
  })
})

describe('SuiLedger.check(): the configured deployment', () => {
  test('the stub\'s deployment passes every check', async () => {
    const checks = await new SuiLedger(stub.ledgerOptions()).check()
    assert.deepEqual(checks.filter((c) => !c.ok), [])
    assert.deepEqual(checks.map((c) => c.name), ['kns package (types)', 'kns package (calls)', 'keystore package', 'map package', 'id map', 'page limit', 'epoch'])
  })

  test('a package ID that is not a package, an ID map of another package, a table it does not hold: each named', async () => {
    const checks = await new SuiLedger(stub.ledgerOptions({ keystorePackageId: hexId(), idMapTableId: hexId() })).check()
    const failed = Object.fromEntries(checks.filter((c) => !c.ok).map((c) => [c.name, c.detail]))
    assert.match(failed['keystore package'] ?? '', /SUI_KEYSTORE_PACKAGE_ID=0x[0-9a-f]{64} is not a package/)
    assert.match(failed['id map'] ?? '', /does not hold the table SUI_ID_MAP_TABLE_ID/)
    const wrongMap = await new SuiLedger(stub.ledgerOptions({ mapPackageId: stub.knsPackageId })).check()
    assert.match(wrongMap.find((c) => c.name === 'id map')?.detail ?? '', new RegExp(`${STUB_ID_MAP_OBJECT_ID}.*not of the map package`))
  })

  test('an unreachable ledger: LedgerUnavailableError (the caller reports it)', async () => {
    await assert.rejects(new SuiLedger(stub.ledgerOptions({ graphqlUrl: 'http://127.0.0.1:9/graphql' })).check(), LedgerUnavailableError)
  })
})
