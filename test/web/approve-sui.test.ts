/**
 * The approval page with LEDGER=sui (against the local Sui GraphQL stub): an `event` approval
 * is the Move call `<KNS package>::kns::approve(token, ref)` built in the page and executed by
 * the wallet (sui:signAndExecuteTransaction); the page then verifies the digest, and while Sui's
 * indexer has not seen it, waits (transaction_details?wait=) for the ledger watcher to.
 */
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { after, before, describe, test } from 'node:test'
import type { Browser } from 'playwright-core'
import { bcs } from '@mysten/sui/bcs'
import { Transaction } from '@mysten/sui/transactions'
import { fromBase64, normalizeSuiAddress } from '@mysten/sui/utils'
import { linkNumber } from '../../src/identity/numbers.ts'
import { startSuiGraphqlStub, type SuiGraphqlStub } from '../ledger/sui-graphql-stub.ts'
import { approvalBody, details, newKeypair, post, randomDigest, randomPhone } from '../support/kns.ts'
import { assertClean, launchChromium, openPage, screenshot, SKIP, startWebServer, type WebServer } from './support.ts'
import { TestWallet } from './test-wallet.ts'

describe('approval page on LEDGER=sui', { skip: SKIP, timeout: 120_000 }, () => {
  let stub: SuiGraphqlStub
  let server: WebServer
  let browser: Browser
  let key: string
  /** The KNS package was upgraded: calls go to the latest version, types keep the original ID. */
  const latestPackageId = normalizeSuiAddress(`0x${randomBytes(32).toString('hex')}`)

  before(async () => {
    stub = await startSuiGraphqlStub()
    stub.world.addPackage(latestPackageId)
    server = await startWebServer({
      ...stub.ledgerEnv(), KNS_LATEST_PACKAGE_ID: latestPackageId, LEDGER_CACHE_TTL_S: '0',
    })
    key = await server.h.key({ vendor: 'Sui Bank' })
    browser = await launchChromium()
  })
  after(async () => {
    await browser?.close()
    await server?.close()
    await stub?.close()
  })

  test('event: the wallet executes kns::approve(token, ref) on the latest package; the page verifies the digest (event of the original type) and redirects', async () => {
    const owner = newKeypair()
    const tokenId = normalizeSuiAddress(`0x${randomBytes(32).toString('hex')}`)
    stub.world.addToken(tokenId, owner.toSuiAddress())
    const phone = randomPhone()
    await linkNumber(server.h.service.db, phone, tokenId, 'linked')
    const res = await post(server.h, '/numsys/approval-object-id', approvalBody({ objectId: tokenId }, { method: 'event' }), { 'x-api-key': key })
    assert.equal(res.statusCode, 200, res.body)
    const { approvalUrl, approvalNumber } = res.json() as { approvalUrl: string; approvalNumber: string }

    const wallet = new TestWallet({ keypair: owner })
    const seen: { chain: string; sender: string }[] = []
    wallet.execute = async (json, sender, chain) => {
      seen.push({ chain, sender })
      const data = Transaction.from(json).getData()
      assert.equal(data.sender, owner.toSuiAddress())
      assert.equal(data.commands.length, 1)
      const call = data.commands[0]!.MoveCall!
      assert.deepEqual([normalizeSuiAddress(call.package), call.module, call.function], [latestPackageId, 'kns', 'approve'])
      const [tokenArg, refArg] = call.arguments.map((arg) => data.inputs[(arg as { Input: number }).Input]!)
      assert.equal(normalizeSuiAddress(tokenArg!.UnresolvedObject!.objectId), tokenId)
      assert.equal(bcs.string().parse(fromBase64(refArg!.Pure!.bytes)), approvalNumber)
      // As on Sui, the digest reaches the indexer a little after the wallet returns it: the page
      // waits for the decision, which the ledger watcher takes when it sees the event.
      const digest = randomDigest()
      setTimeout(() => stub.world.addTransaction({
        digest, sender, success: true, timestampMs: Date.now(),
        events: [{ type: `${stub.knsPackageId}::kns::ApprovalEvent`, sender, json: { object_id: tokenId, ref: approvalNumber } }],
      }), 1500)
      return digest
    }

    const { context, page, watch } = await openPage(browser, { wallets: [wallet] })
    const posts: string[] = []
    const waits: string[] = []
    page.on('request', (r) => {
      const url = new URL(r.url())
      if (r.method() === 'POST') posts.push(url.pathname)
      else if (url.searchParams.has('wait')) waits.push(url.search)
    })
    await page.goto(approvalUrl)
    await page.locator('#request').waitFor()
    assert.match((await page.locator('[data-field="method"]').textContent())!, /Sui transaction/)
    await screenshot(page, 'approve-sui-pending')
    await page.getByRole('button', { name: 'Approve' }).click()
    await page.locator('#final[data-state="approved-here"]').waitFor({ timeout: 20_000 })
    await page.getByRole('link', { name: /^Continue to / }).click()
    await page.waitForURL('https://vendor.example/approved')

    assert.deepEqual(seen, [{ chain: 'sui:testnet', sender: owner.toSuiAddress() }])
    assert.deepEqual(posts, ['/numsys/verify_transaction'], 'asked once, then waited instead of asking again')
    assert.ok(waits.length >= 1, 'waited with transaction_details?wait=')
    assert.deepEqual(wallet.signed, [], 'no personal message on Sui')
    const d = await details(server.h, approvalNumber)
    assert.equal(d.approved, true)
    assert.equal(d.wallet, owner.toSuiAddress())
    await assertClean(watch)
    await context.close()
  })

  test('a wallet without sui:signAndExecuteTransaction is not offered for an event approval: the page says why before any tap', async () => {
    const owner = newKeypair()
    const tokenId = normalizeSuiAddress(`0x${randomBytes(32).toString('hex')}`)
    stub.world.addToken(tokenId, owner.toSuiAddress())
    const res = await post(server.h, '/numsys/approval-object-id', approvalBody({ objectId: tokenId }, { method: 'event' }), { 'x-api-key': key })
    const { approvalUrl } = res.json() as { approvalUrl: string }
    const wallet = new TestWallet({ keypair: owner, features: ['standard:connect', 'sui:signPersonalMessage'] })
    const { context, page, watch } = await openPage(browser, { wallets: [wallet] })
    await page.goto(approvalUrl)
    await page.locator('#no-wallet').getByText('KNS Test Wallet cannot execute Sui transactions, which this request needs.', { exact: false }).waitFor()
    assert.equal(await page.getByRole('button', { name: 'Approve' }).count(), 0)
    assert.deepEqual(wallet.signed, [])
    await assertClean(watch)
    await context.close()
  })
})
