/**
 * The API reference at /docs in headless Chromium: drawn from the service's own /openapi.json,
 * every operation present with its anchor, Markdown rendered (no raw backticks), enumerations as
 * their allowed values, an example request (curl) and answer per operation, readable at 390 px
 * without sideways scrolling, axe-clean, and nothing the strict CSP refuses.
 */
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import type { Browser } from 'playwright-core'
import { anchorOf } from '../../web/docs/anchor.ts'
import { assertClean, horizontalOverflow, launchChromium, openPage, screenshot, SKIP, startWebServer, type WebServer } from './support.ts'

describe('API reference page', { skip: SKIP, timeout: 120_000 }, () => {
  let server: WebServer
  let browser: Browser
  before(async () => {
    server = await startWebServer()
    browser = await launchChromium()
  })
  after(async () => {
    await browser?.close()
    await server?.close()
  })

  test('every operation of /openapi.json, with its anchor; descriptions rendered; CSP clean', async () => {
    const doc = await (await fetch(`${server.url}/openapi.json`)).json() as { paths: Record<string, Record<string, unknown>> }
    const expected = Object.entries(doc.paths).flatMap(([path, item]) => Object.keys(item).filter((m) => ['get', 'post', 'put', 'patch', 'delete'].includes(m)).map((m) => anchorOf(m, path)))
    const { context, page, watch } = await openPage(browser, { viewport: { width: 1440, height: 900 } })
    await page.goto(`${server.url}/docs`)
    await page.locator('article.op').first().waitFor()
    const anchors = await page.locator('article.op').evaluateAll((nodes) => nodes.map((n) => n.id))
    assert.deepEqual([...anchors].sort(), [...expected].sort())
    assert.equal(new Set(anchors).size, anchors.length, 'anchors are unique')
    for (const where of ['main', '#contents']) {
      assert.doesNotMatch(await page.locator(where).innerText(), /`|^\* /m, `${where}: backticks and list marks are rendered, not shown`)
    }
    assert.ok(await page.locator('article.op code').count() > expected.length)
    // The contents link to the operations.
    await page.locator('#contents a[href="#post-numsys-approval-phone"]').click()
    assert.equal(new URL(page.url()).hash, '#post-numsys-approval-phone')
    await screenshot(page, 'docs-reference')
    await assertClean(watch)
    await context.close()
  })

  test('enumerations show their allowed values (fields, parameters, nested objects, arrays); every operation an example request as curl, and an answer', async () => {
    const doc = await (await fetch(`${server.url}/openapi.json`)).json() as {
      servers: Array<{ url: string }>; paths: Record<string, Record<string, { responses?: Record<string, { content?: unknown }> }>>
    }
    const { context, page, watch } = await openPage(browser, { viewport: { width: 1440, height: 900 } })
    await page.goto(`${server.url}/docs`)
    await page.locator('article.op').first().waitFor()
    // textContent: the answers' fields are in folded <details>, which innerText leaves out.
    const text = async (anchor: string) => await page.locator(`#${anchor}`).textContent() ?? ''
    assert.doesNotMatch(await page.locator('main').textContent() ?? '', /string \| string/)
    const details = await text('get-numsys-transaction-details')
    for (const values of ['"sign", "event"', '"pending", "approved", "cancelled", "expired"', '"denied", "not_me"']) assert.ok(details.includes(`Allowed values: ${values}`), values)
    assert.match(await text('get-api-v1-admin-webhook-deliveries'), /Allowed values: "true", "false"/, 'a query parameter')
    assert.match(await text('post-stir-v1-signing'), /Allowed values: "A", "B", "C"/, 'a field of a nested object')
    assert.match(await text('post-api-v1-admin-webhooks'), /Each item one of: "approval\.approved", "approval\.cancelled", "approval\.expired"/, 'an array of an enumeration')
    const ops = await page.locator('article.op').count()
    assert.equal(await page.locator('article.op pre.curl').count(), ops)
    // An example answer wherever a success has a body: a 204 No Content has none to show.
    const bodiless = Object.values(doc.paths).flatMap((item) => Object.values(item)).filter((op) => {
      const successes = Object.entries(op.responses ?? {}).filter(([status]) => status.startsWith('2'))
      return successes.length > 0 && successes.every(([, answer]) => answer.content === undefined)
    }).length
    assert.equal(await page.locator('article.op pre.answer').count(), ops - bodiless)
    const base = doc.servers[0]!.url.replace(/\/+$/, '')
    const curl = (anchor: string) => page.locator(`#${anchor} pre.curl`).innerText()
    const create = await curl('post-numsys-approval-phone')
    assert.ok(create.startsWith(`curl -X POST '${base}/numsys/approval-phone'`), create)
    assert.match(create, /-H "x-api-key: \$KNS_API_KEY"/)
    assert.match(create, /-d '\{"title":"Confirm the transfer",.*"phoneNumber":"\+14155550100"\}'/)
    const read = await curl('get-numsys-transaction-details')
    assert.equal(read, `curl '${base}/numsys/transaction_details?ref=22c855f9b4801ff9e0d8c2ec&wait=30'`, 'a GET without key or body')
    assert.match(await curl('delete-api-v1-admin-webhooks-id'), /^curl -X DELETE '[^']+\/api\/v1\/admin\/webhooks\/whk_[0-9a-f]{24}' \\\n {2}-H "x-api-key: \$KNS_API_KEY"$/)
    // The CAMARA APIs: their own tag, an access token with the operation's scopes, CAMARA's error shape.
    const subscriptions = page.locator('#tag-sim-swap-subscriptions')
    assert.match(await subscriptions.locator('.tag-text').innerText(), /SIM Swap Subscriptions 0\.3\.0/)
    assert.equal(await subscriptions.locator('article.op').count(), 4)
    const subscribe = 'post-sim-swap-subscriptions-v0-3-subscriptions'
    assert.equal(await page.locator(`#${subscribe} .auth`).innerText(),
      'needs an access token (Authorization: Bearer) with the scopes sim-swap-subscriptions:org.camaraproject.sim-swap-subscriptions.v0.swapped:create and dpv:FraudPreventionAndDetection')
    const subscribeCurl = await curl(subscribe)
    assert.match(subscribeCurl, /-H "Authorization: Bearer \$ACCESS_TOKEN"/)
    assert.doesNotMatch(subscribeCurl, /x-api-key/)
    assert.match(subscribeCurl, /"sinkCredential":\{"credentialType":"ACCESSTOKEN"/)
    assert.match(await text(subscribe), /4XX object · client errors, in CAMARA's error shape/)
    assert.match(await page.locator('#post-sim-swap-v2-check .auth').innerText(), /with the scopes sim-swap:check and dpv:FraudPreventionAndDetection, or sim-swap and dpv:FraudPreventionAndDetection/)
    assert.equal(await page.locator('#delete-sim-swap-subscriptions-v0-3-subscriptions-subscriptionid pre.answer').count(), 0, 'a 204 has no example answer')
    assert.match(await text('post-numsys-approval-phone'), /4XX object · client errors, in the service's error shape/)
    // The example answer is folded, like the answers: opened, it shows.
    await page.locator('#post-numsys-approval-phone summary', { hasText: 'Example answer (200)' }).click()
    assert.match(await page.locator('#post-numsys-approval-phone pre.answer').innerText(), /"approvalNumber": "22c855f9b4801ff9e0d8c2ec"/)
    await page.locator('#post-stir-v1-signing').scrollIntoViewIfNeeded()
    await screenshot(page, 'docs-examples')
    await assertClean(watch)
    await context.close()
  })

  test('on a 390 px phone: no sideways scroll, the contents folded away, an operation opened by its address', async () => {
    const { context, page, watch } = await openPage(browser, { device: 'phone' })
    await page.goto(`${server.url}/docs#get-numsys-transaction-details`)
    await page.locator('article.op').first().waitFor()
    assert.equal(await page.locator('#contents-box').getAttribute('open'), null)
    assert.equal(await horizontalOverflow(page), 0)
    await assertClean(watch)
    await context.close()
  })
})
