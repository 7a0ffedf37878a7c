/**
 * zkLogin approvals with LEDGER=sui, against the strict GraphQL stub: the ledger verifies
 * (`verifySignature`, not the deprecated field), an outage of the ledger is a 503
 * LEDGER_UNAVAILABLE and never INVALID_SIGNATURE, every call has a deadline, and both address
 * derivations of one proof (padded and legacy) are accepted as the owner.
 */
import { after, before, beforeEach, describe, test } from 'node:test'
import assert from 'node:assert/strict'
import { SuiLedger } from '../../src/ledger/sui-ledger.ts'
import { startHarness, type Harness } from '../helpers.ts'
import { startSuiGraphqlStub, type SuiGraphqlStub } from '../ledger/sui-graphql-stub.ts'
import { approvalBody, assertVerdict, createApproval, details, randomObjectId, verifySignature } from '../support/kns.ts'
import { zkLoginWallet, type ZkLoginWallet } from '../support/zklogin.ts'

const TIMEOUT_MS = 400

let stub: SuiGraphqlStub
let h: Harness
let key: string

before(async () => {
  stub = await startSuiGraphqlStub()
  h = await startHarness({}, { ledger: new SuiLedger(stub.ledgerOptions({ timeoutMs: TIMEOUT_MS })) })
  key = await h.key({ scopes: ['approvals'], vendor: 'Acme Bank' })
})
after(async () => {
  await h?.close()
  await stub?.close()
})
beforeEach(() => {
  stub.world.fault('verifySignature', null)
  stub.world.setEpoch(100)
})

/** A token owned by `owner` on the stub and a `sign` approval for it. */
async function approvalOwnedBy(owner: string): Promise<string> {
  const tokenId = randomObjectId()
  stub.world.addToken(tokenId, owner)
  return createApproval(h, key, approvalBody({ objectId: tokenId }))
}

async function signed(wallet: ZkLoginWallet, ref: string): Promise<string> {
  return wallet.signPersonalMessage((await details(h, ref)).signMessage as string)
}

function accepted(): ZkLoginWallet {
  const wallet = zkLoginWallet()
  stub.world.acceptZkProof(wallet.proof)
  return wallet
}

describe('zkLogin approvals on LEDGER=sui', () => {
  test('the owner\'s zkLogin signature approves, verified by the ledger through verifySignature', async () => {
    const wallet = accepted()
    const ref = await approvalOwnedBy(wallet.address)
    stub.world.clearRequests()
    assertVerdict(await verifySignature(h, ref, await signed(wallet, ref)), true)
    const d = await details(h, ref)
    assert.equal(d.status, 'approved')
    assert.equal(d.wallet, wallet.address)
    const operations = stub.world.requests.map((r) => r.operationName)
    assert.ok(operations.includes('knsVerifySignature'), operations.join(', '))
    assert.deepEqual(stub.world.errors, [])
  })

  test('a signature sent as Base64 without its padding (which atob and the route accept) is verified, not a 503', async () => {
    // The signature's length varies with its proof's digits: take one that has padding to strip.
    let wallet: ZkLoginWallet, ref: string, signature: string
    do {
      wallet = accepted()
      ref = await approvalOwnedBy(wallet.address)
      signature = await signed(wallet, ref)
    } while (!signature.endsWith('='))
    const unpadded = signature.replace(/=+$/, '')
    assertVerdict(await verifySignature(h, ref, unpadded), true)
    assert.deepEqual(stub.world.errors, [])
  })

  test('a token held under the legacy derivation of the same proof: approved, that address recorded', async () => {
    const wallet = accepted()
    assert.notEqual(wallet.legacyAddress, wallet.address)
    const ref = await approvalOwnedBy(wallet.legacyAddress)
    assertVerdict(await verifySignature(h, ref, await signed(wallet, ref)), true)
    assert.equal((await details(h, ref)).wallet, wallet.legacyAddress)
  })

  test('a zkLogin signature the ledger rejects is INVALID_SIGNATURE: wrong message, expired epoch, unknown proof', async () => {
    const wallet = accepted()
    const ref = await approvalOwnedBy(wallet.address)
    assertVerdict(await verifySignature(h, ref, await wallet.signPersonalMessage('another message')), 'INVALID_SIGNATURE')
    stub.world.setEpoch(wallet.proof.maxEpoch + 1)
    assertVerdict(await verifySignature(h, ref, await signed(wallet, ref)), 'INVALID_SIGNATURE')
    stub.world.setEpoch(100)
    const unproven = zkLoginWallet()
    const other = await approvalOwnedBy(unproven.address)
    assertVerdict(await verifySignature(h, other, await signed(unproven, other)), 'INVALID_SIGNATURE')
    assert.equal((await details(h, ref)).status, 'pending')
  })

  test('a zkLogin signature from someone else\'s proof: WRONG_SIGNER, not approved', async () => {
    const owner = accepted()
    const stranger = accepted()
    const ref = await approvalOwnedBy(owner.address)
    assertVerdict(await verifySignature(h, ref, await signed(stranger, ref)), 'WRONG_SIGNER')
    assert.equal((await details(h, ref)).status, 'pending')
  })

  for (const [name, fault] of [
    ['an INTERNAL_SERVER_ERROR answer', { error: 'INTERNAL_SERVER_ERROR' as const }],
    ['a REQUEST_TIMEOUT answer', { error: 'REQUEST_TIMEOUT' as const }],
    ['a stall past the deadline', { delayMs: TIMEOUT_MS * 4 }],
  ] as const) {
    test(`${name} while verifying is a ledger outage: 503 LEDGER_UNAVAILABLE, never INVALID_SIGNATURE; counted in /metrics`, async () => {
      const wallet = accepted()
      const ref = await approvalOwnedBy(wallet.address)
      const signature = await signed(wallet, ref)
      stub.world.fault('verifySignature', fault)
      const res = await verifySignature(h, ref, signature)
      assert.equal(res.statusCode, 503, res.body)
      assert.equal(res.json().code, 'LEDGER_UNAVAILABLE')
      // Still ready (the API serves what does not need the ledger), and saying the ledger is not.
      const ready = await h.app.inject({ method: 'GET', url: '/readyz' })
      assert.equal(ready.statusCode, 200)
      assert.match(ready.json().ledger, /^unreachable since .* on knsVerifySignature\)$/)
      const metrics = (await h.app.inject({ method: 'GET', url: '/metrics' })).body
      const outcome = 'error' in fault && fault.error === 'INTERNAL_SERVER_ERROR' ? 'error' : 'timeout'
      assert.match(metrics, new RegExp(`^kns_ledger_requests_total\\{operation="knsVerifySignature",outcome="${outcome}"\\} [1-9]`, 'm'))
      assert.match(metrics, /^kns_ledger_unavailable 1$/m)
      assert.equal((await details(h, ref)).status, 'pending')
      // The same signature goes through once the ledger is back.
      stub.world.fault('verifySignature', null)
      assertVerdict(await verifySignature(h, ref, signature), true)
      assert.match((await h.app.inject({ method: 'GET', url: '/metrics' })).body, /^kns_ledger_unavailable 0$/m)
      assert.equal((await h.app.inject({ method: 'GET', url: '/readyz' })).json().ledger, 'reachable')
    })
  }
})
