/**
 * The approval page's outcomes in headless Chromium: the mark over each final heading (a tick
 * for an approval, a cross for a denial or cancellation) and, at 390 px, the link on to the
 * vendor on one line, or wrapped between words onto centred lines inside the button, for a
 * short brand and for the longest a key can have (64 characters). Measured in the DOM.
 */
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import type { Browser, Page } from 'playwright-core'
import { approvalBody, details, newKeypair, ownedToken, post } from '../support/kns.ts'
import { assertAccessible, assertClean, horizontalOverflow, launchChromium, openPage, SKIP, startWebServer, type WebServer } from './support.ts'
import { TestWallet } from './test-wallet.ts'

const PHONE = { width: 390, height: 844 }
const SHORT = 'Acme Mobile'
/** 64 characters, the most a key's vendor may have, in words of ordinary length. */
const LONG = 'Northwind Mobile Telecommunications and Broadband Services Group'

/** The mark shown over the final heading, as drawn. */
async function mark(page: Page): Promise<{ icon: string; glyph: string; hidden: string | null; size: number; heading: string }> {
  return page.evaluate(`(() => {
    const icon = document.querySelector('#final .final-icon')
    const box = icon.getBoundingClientRect()
    return { icon: document.querySelector('#final').dataset.icon, glyph: getComputedStyle(icon, '::after').content,
      hidden: icon.getAttribute('aria-hidden'), size: Math.min(box.width, box.height), heading: document.querySelector('#final-heading').textContent }
  })()`)
}

interface Lines {
  /** One per line of the link's text: its box, and the text on it. */
  lines: Array<{ left: number; right: number; top: number; bottom: number; text: string }>
  button: { left: number; right: number; top: number; bottom: number }
  card: { left: number; right: number }
}

/** The lines the link's text is laid out in, found from each character's box (a new line starts where the top moves down). */
async function linkLines(page: Page): Promise<Lines> {
  return page.evaluate(`(() => {
    const link = document.querySelector('#final-link')
    const node = link.firstChild
    const lines = []
    for (let i = 0; i < node.length; i++) {
      const range = document.createRange()
      range.setStart(node, i)
      range.setEnd(node, i + 1)
      const r = range.getBoundingClientRect()
      const last = lines.at(-1)
      // A space at a line's end has no width: it belongs to the line it ends.
      if (last !== undefined && (r.width === 0 || r.top < last.bottom - 2)) {
        last.text += node.data[i]
        if (r.width > 0) { last.right = Math.max(last.right, r.right); last.left = Math.min(last.left, r.left) }
      } else lines.push({ left: r.left, right: r.right, top: r.top, bottom: r.bottom, text: node.data[i] })
    }
    const b = link.getBoundingClientRect()
    const c = document.querySelector('.card').getBoundingClientRect()
    return { lines, button: { left: b.left, right: b.right, top: b.top, bottom: b.bottom }, card: { left: c.left, right: c.right } }
  })()`)
}

/** One line, or lines broken between words, each inside the button and centred in it. */
function assertFits(layout: Lines, label: string, what: string): void {
  const { lines, button, card } = layout
  assert.equal(lines.map((l) => l.text).join(''), label, `${what}: the whole label is drawn`)
  assert.ok(button.left >= card.left && button.right <= card.right, `${what}: the button is inside the card`)
  for (const [i, line] of lines.entries()) {
    const text = `${what}, line ${i + 1} "${line.text}"`
    assert.ok(line.left >= button.left && line.right <= button.right && line.top >= button.top && line.bottom <= button.bottom,
      `${text}: inside the button ${JSON.stringify(button)}, is ${JSON.stringify(line)}`)
    assert.ok(Math.abs((line.left - button.left) - (button.right - line.right)) <= 2, `${text}: centred`)
    if (i < lines.length - 1) assert.ok(line.text.endsWith(' '), `${text}: broken between words, not inside one`)
  }
}

describe('approval page outcomes', { skip: SKIP, timeout: 180_000 }, () => {
  let server: WebServer
  let browser: Browser
  const keys: Record<string, string> = {}

  before(async () => {
    server = await startWebServer()
    for (const vendor of [SHORT, LONG]) keys[vendor] = await server.h.key({ vendor })
    browser = await launchChromium()
  })
  after(async () => {
    await browser?.close()
    await server?.close()
  })

  async function newApproval(vendor: string) {
    const owner = newKeypair()
    const token = await ownedToken(server.h, owner)
    const res = await post(server.h, '/numsys/approval-phone', approvalBody({ phoneNumber: token.phoneNumber }, { method: 'sign' }), { 'x-api-key': keys[vendor]! })
    assert.equal(res.statusCode, 200, res.body)
    const { approvalUrl, approvalNumber } = res.json() as { approvalUrl: string; approvalNumber: string }
    return { owner, approvalUrl, ref: approvalNumber }
  }

  for (const vendor of [SHORT, LONG]) {
    test(`approved (here, then on reload): a tick; at 390 px "Continue to ${vendor.slice(0, 20)}…" fits its button`, async () => {
      const a = await newApproval(vendor)
      const { context, page, watch } = await openPage(browser, { wallets: [new TestWallet({ keypair: a.owner })], viewport: PHONE })
      await page.goto(a.approvalUrl)
      await page.getByRole('button', { name: 'Approve' }).click()
      await page.locator('#final[data-state="approved-here"]').waitFor()
      assert.deepEqual(await mark(page), { icon: 'tick', glyph: '"✓"', hidden: 'true', size: 48, heading: 'Approved' })
      const layout = await linkLines(page)
      assertFits(layout, `Continue to ${vendor}`, 'Continue')
      if (vendor === SHORT) assert.equal(layout.lines.length, 1, 'a short brand: one line')
      assert.equal(await horizontalOverflow(page), 0)
      await assertAccessible(page, `approved-here, ${vendor}, 390 px`)

      await page.reload()
      await page.locator('#final[data-state="approved"]').waitFor()
      assert.deepEqual(await mark(page), { icon: 'tick', glyph: '"✓"', hidden: 'true', size: 48, heading: 'Already approved' })
      assertFits(await linkLines(page), `Back to ${vendor}`, 'Back (approved)')
      assert.equal((await details(server.h, a.ref)).approved, true)
      await assertClean(watch)
      await context.close()
    })
  }

  test('denied (here, then on reload as cancelled): a cross; "Back to …" fits its button at 390 px', async () => {
    const a = await newApproval(LONG)
    const { context, page, watch } = await openPage(browser, { wallets: [new TestWallet({ keypair: a.owner })], viewport: PHONE })
    await page.goto(a.approvalUrl)
    await page.getByRole('button', { name: 'Deny' }).click()
    await page.getByRole('button', { name: 'Yes, deny' }).click()
    await page.locator('#final[data-state="denied-here"]').waitFor()
    assert.deepEqual(await mark(page), { icon: 'cross', glyph: '"✕"', hidden: 'true', size: 48, heading: 'Request denied' })
    assertFits(await linkLines(page), `Back to ${LONG}`, 'Back (denied)')
    await assertAccessible(page, 'denied-here, 390 px')

    await page.reload()
    await page.locator('#final[data-state="cancelled"]').waitFor()
    assert.deepEqual(await mark(page), { icon: 'cross', glyph: '"✕"', hidden: 'true', size: 48, heading: 'Request cancelled' })
    assertFits(await linkLines(page), `Back to ${LONG}`, 'Back (cancelled)')
    await assertClean(watch)
    await context.close()
  })
})
