/**
 * The published testnet deployment of domain.md, read through SuiLedger: by default from the
 * strict stub holding the same objects (real answers of the public service cannot be fetched
 * here, so these fixtures are built from the schema and the SDK's types, not recorded), and,
 * with `KNS_LIVE_SUI=testnet`, the same suite against the public testnet GraphQL endpoint.
 * Only facts that hold on both are asserted: the configured objects are what they should be,
 * absent things are absent, and the ledger's verdict on a signature is a verdict (true or
 * false), not an outage.
 */
import { after, before, describe, test } from 'node:test'
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { Ed25519Keypair } from '@mysten/sui/keypairs/ed25519'
import { toBase58 } from '@mysten/sui/utils'
import { SUI_NETWORKS } from '../../src/config.ts'
import { SuiLedger, type SuiLedgerOptions } from '../../src/ledger/sui-ledger.ts'
import { zkLoginWallet } from '../support/zklogin.ts'
import { startSuiGraphqlStub, type SuiGraphqlStub } from './sui-graphql-stub.ts'

const TESTNET = SUI_NETWORKS.testnet
const LIVE = process.env.KNS_LIVE_SUI

const deployment: Omit<SuiLedgerOptions, 'graphqlUrl'> = {
  knsPackageId: TESTNET.knsPackageId,
  keystorePackageId: TESTNET.keystorePackageId,
  mapPackageId: TESTNET.mapPackageId,
  idMapObjectId: TESTNET.idMapObjectId,
  idMapTableId: TESTNET.idMapTableId,
  cacheTtlS: 0,
  freshnessMs: 0,
  timeoutMs: 15_000,
}

function suite(name: string, options: { skip?: string }, endpoint: () => string): void {
  describe(name, options.skip === undefined ? {} : { skip: options.skip }, () => {
    let ledger: SuiLedger
    before(() => { ledger = new SuiLedger({ graphqlUrl: endpoint(), ...deployment }) })

    test('the start-up check passes: packages, the ID map of the map package holding its table, the page limit', async () => {
      const checks = await ledger.check()
      assert.deepEqual(checks.filter((c) => !c.ok), [], JSON.stringify(checks, null, 2))
    })

    test('the ID map object is not a Kns token nor a keystore; the KNS package is not an object', async () => {
      assert.equal(await ledger.getToken(TESTNET.idMapObjectId), null)
      assert.equal(await ledger.getKeystore(TESTNET.idMapObjectId), null)
      assert.equal(await ledger.getKeystore(TESTNET.knsPackageId), null)
    })

    test('a token no one registered has no keystores; an unknown digest is no transaction', async () => {
      assert.deepEqual(await ledger.getLinkedKeystores('0x' + randomBytes(32).toString('hex')), [])
      assert.equal(await ledger.getTransaction(toBase58(randomBytes(32))), null)
    })

    test('signatures: a verdict from the ledger, never an outage (Ed25519 right and wrong author, an unproven zkLogin)', async () => {
      const message = new TextEncoder().encode(`kns live check ${Date.now()}`)
      const keypair = new Ed25519Keypair()
      const { signature } = await keypair.signPersonalMessage(message)
      assert.deepEqual(await ledger.verifyPersonalMessage(message, signature, keypair.toSuiAddress()), { valid: true })
      assert.equal((await ledger.verifyPersonalMessage(message, signature, new Ed25519Keypair().toSuiAddress())).valid, false)
      const wallet = zkLoginWallet()
      const zk = await wallet.signPersonalMessage(new TextDecoder().decode(message))
      assert.equal((await ledger.verifyPersonalMessage(message, zk, wallet.address)).valid, false)
    })
  })
}

let stub: SuiGraphqlStub | undefined
before(async () => {
  stub = await startSuiGraphqlStub({
    knsPackageId: TESTNET.knsPackageId, keystorePackageId: TESTNET.keystorePackageId, mapPackageId: TESTNET.mapPackageId,
    idMapObjectId: TESTNET.idMapObjectId, idMapTableId: TESTNET.idMapTableId,
  })
})
after(async () => { await stub?.close() })

suite('testnet deployment (domain.md), from the strict stub', {}, () => stub!.url)
suite('testnet deployment (domain.md), live', {
  skip: LIVE === 'testnet' ? undefined : 'set KNS_LIVE_SUI=testnet to run this suite against https://graphql.testnet.sui.io (needs the internet)',
}, () => process.env.SUI_GRAPHQL_URL ?? TESTNET.graphqlUrl)
