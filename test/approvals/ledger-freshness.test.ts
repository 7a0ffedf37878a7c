/**
 * LEDGER=sui decisions over an indexer that lags the chain: a transaction executed a moment
 * ago is "not found", a token transferred a moment ago shows its previous owner. The service
 * re-reads for LEDGER_FRESHNESS_MS before it concludes, and its answer says when it did.
 */
import { after, before, describe, test } from 'node:test'
import assert from 'node:assert/strict'
import { SuiLedger } from '../../src/ledger/sui-ledger.ts'
import { startHarness, type Harness } from '../helpers.ts'
import { startSuiGraphqlStub, type SuiGraphqlStub } from '../ledger/sui-graphql-stub.ts'
import { zkLoginWallet } from '../support/zklogin.ts'
import {
  approvalBody, assertVerdict, createApproval, details, newKeypair, randomDigest, randomObjectId, signApproval, suiEventApproval, verifySignature,
  verifyTransaction,
} from '../support/kns.ts'

const WINDOW_MS = 1500

let stub: SuiGraphqlStub
let h: Harness
let key: string

before(async () => {
  stub = await startSuiGraphqlStub()
  h = await startHarness({}, { ledger: new SuiLedger(stub.ledgerOptions({ freshnessMs: WINDOW_MS })) })
  key = await h.key({ scopes: ['approvals'], vendor: 'Acme Bank' })
})
after(async () => {
  await h?.close()
  await stub?.close()
})

const eventApproval = (owner: string) => suiEventApproval(h, key, stub, owner)

describe('re-reading a lagging ledger before deciding', () => {
  test('a transaction indexed 500 ms after verify_transaction is asked: found, approved', async () => {
    const owner = newKeypair().toSuiAddress()
    const { tokenId, ref } = await eventApproval(owner)
    const digest = randomDigest()
    setTimeout(() => stub.world.addTransaction({
      digest, sender: owner, success: true, timestampMs: Date.now(),
      events: [{ type: `${stub.knsPackageId}::kns::ApprovalEvent`, json: { object_id: tokenId, ref } }],
    }), 500)
    assertVerdict(await verifyTransaction(h, ref, digest), true)
    assert.equal((await details(h, ref)).status, 'approved')
  })

  test('a transaction never indexed: TRANSACTION_NOT_FOUND once the window is over, saying it re-read', async () => {
    const { ref } = await eventApproval(newKeypair().toSuiAddress())
    const started = performance.now()
    const res = await verifyTransaction(h, ref, randomDigest())
    assertVerdict(res, 'TRANSACTION_NOT_FOUND')
    assert.ok(performance.now() - started >= WINDOW_MS, 'answered only after the window')
    assert.match(res.json().error, /still so after re-reading the ledger for 1\.\d s/)
  })

  test('a token transferred to the signer 500 ms before the indexer shows it: approved', async () => {
    const signer = newKeypair()
    const tokenId = randomObjectId()
    stub.world.addToken(tokenId, newKeypair().toSuiAddress())
    const ref = await createApproval(h, key, approvalBody({ objectId: tokenId }))
    const signature = await signApproval(h, signer, ref)
    setTimeout(() => stub.world.addToken(tokenId, signer.toSuiAddress()), 500)
    assertVerdict(await verifySignature(h, ref, signature), true)
    assert.equal((await details(h, ref)).wallet, signer.toSuiAddress())
  })

  test('zkLogin: a token moved to the legacy address of the signer\'s proof 500 ms before the indexer shows it: approved, that address recorded', async () => {
    const wallet = zkLoginWallet()
    stub.world.acceptZkProof(wallet.proof)
    const tokenId = randomObjectId()
    stub.world.addToken(tokenId, newKeypair().toSuiAddress())
    const ref = await createApproval(h, key, approvalBody({ objectId: tokenId }))
    const signature = await wallet.signPersonalMessage((await details(h, ref)).signMessage as string)
    setTimeout(() => stub.world.addToken(tokenId, wallet.legacyAddress), 500)
    assertVerdict(await verifySignature(h, ref, signature), true)
    assert.equal((await details(h, ref)).wallet, wallet.legacyAddress)
  })

  test('a signer who does not own the token: WRONG_SIGNER after the window, saying it re-read', async () => {
    const stranger = newKeypair()
    const tokenId = randomObjectId()
    stub.world.addToken(tokenId, newKeypair().toSuiAddress())
    const ref = await createApproval(h, key, approvalBody({ objectId: tokenId }))
    const res = await verifySignature(h, ref, await signApproval(h, stranger, ref))
    assertVerdict(res, 'WRONG_SIGNER')
    assert.match(res.json().error, /does not own the number-system token .*still so after re-reading the ledger/)
  })
})
