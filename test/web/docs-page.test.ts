/**
 * The API reference at /docs in headless Chromium: drawn from the service's own /openapi.json,
 * every operation present with its anchor, Markdown rendered (no raw backticks), readable at
 * 390 px without sideways scrolling, axe-clean, and nothing the strict CSP refuses.
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
