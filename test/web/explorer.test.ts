/**
 * The public network explorer (GET /) in headless Chromium, against a real server seeded with
 * the demo network of `kns seed --demo` (small: 3000 sessions over 30 days), and against an
 * empty database. Screenshots go to test-results/web/.
 */
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import type { Browser, Page, Request } from 'playwright-core'
import { seedCommand } from '../../src/cli/stats-commands.ts'
import { demoNodes, demoSessions, demoSignups, type DemoOptions } from '../../src/stats/demo/demo.ts'
import { upsertWifiNodes } from '../../src/stats/ingest/ingest.ts'
import { describePeriod, formatChange, formatData, previousLabel } from '../../web/explorer/format.ts'
import { assertClean, horizontalOverflow, launchChromium, openPage, screenshot, SKIP, startWebServer, type WebServer } from './support.ts'

const CHARTS = ['gateway-data', 'gateway-clients', 'gateway-sessions', 'wifi-data', 'wifi-clients', 'wifi-sessions']
const int = new Intl.NumberFormat('en-US', { maximumFractionDigits: 0 })
const dec = new Intl.NumberFormat('en-US', { minimumFractionDigits: 2, maximumFractionDigits: 2 })
const DAY = 86_400_000

async function api<T>(server: WebServer, path: string, body?: unknown): Promise<T> {
  const res = await fetch(`${server.url}/api/v1/${path}`, body === undefined ? {} : {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body),
  })
  assert.equal(res.status, 200, path)
  return await res.json() as T
}

interface RangeStats { periodUsage: { currentSessions: number; currentClients: number; currentUsageMB: number; sessions: number[][]; gatewayNodes: { uid: string }[] } }

/** Seven WiFi nodes on one spot in Tokyo, as a venue with several access points reports them. */
const TOKYO_SPOT = Array.from({ length: 7 }, (_, i) => ({
  uid: `wifi-tokyo-${i + 1}`, name: `Tokyo Station AP ${i + 1}`, status: i === 6 ? 'Offline' : 'Online', model: 'KNS-AP2',
  wifi_level: 'WiFi 6', lat: 35.6812, lon: 139.7671,
}))

/** The demo network seeded: up to now, as `kns seed --demo` defaults to (the data reaches the present). */
const DEMO: DemoOptions = { sessions: 3000, days: 30, numbers: 300, seed: 7, until: Date.now() }

async function seed(server: WebServer): Promise<void> {
  const values = { demo: true, sessions: '3000', days: '30', numbers: '300', seed: '7', until: new Date(DEMO.until).toISOString() }
  await seedCommand(server.h.service, { values, positionals: [] } as unknown as Parameters<typeof seedCommand>[1],
    { json: true, result: () => {}, note: () => {} })
  await upsertWifiNodes(server.h.service.db, TOKYO_SPOT as unknown as Parameters<typeof upsertWifiNodes>[1])
}

/** The map's targets (single nodes and clusters) as drawn: how many nodes each stands for, its box, and what is hit at its centre. */
async function mapTargets(page: Page): Promise<Array<{ key: string; count: number; w: number; h: number; cx: number; cy: number; hitsItself: boolean; hit: string }>> {
  // elementFromPoint sees the viewport only: the map in the middle of it.
  await page.evaluate(`document.querySelector('#map').scrollIntoView({ block: 'center' })`)
  return page.evaluate(`[...document.querySelectorAll('#map .node, #map .cluster')].map((g) => {
    const box = (g.querySelector('.hit, .cluster-disc')).getBoundingClientRect()
    const cx = box.left + box.width / 2
    const cy = box.top + box.height / 2
    const hit = document.elementFromPoint(cx, cy)
    return { key: g.dataset.key, count: Number(g.dataset.count ?? 1), w: box.width, h: box.height, cx, cy, hitsItself: hit !== null && g.contains(hit),
      hit: hit === null ? 'nothing' : hit.tagName + '.' + hit.getAttribute('class') }
  })`)
}

/** Markers and clusters whose box meets a zoom button's box (the buttons must never cover one). */
function markersUnderControls(page: Page): Promise<string[]> {
  return page.evaluate(`(() => {
    const buttons = [...document.querySelectorAll('#map .map-button')].map((b) => b.getBoundingClientRect())
    if (buttons.length !== 3) return ['zoom buttons: ' + buttons.length]
    const meet = (a, b) => a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom
    return [...document.querySelectorAll('#map .node, #map .cluster')]
      .filter((g) => buttons.some((b) => meet(b, g.getBoundingClientRect()))).map((g) => g.getAttribute('aria-label'))
  })()`)
}

/** Waits until the period's answers are drawn (main not busy) and the map is there. */
async function settled(page: Page): Promise<void> {
  await page.locator('main[aria-busy="false"]').waitFor()
  await page.locator('#map svg .land').waitFor()
  await page.locator('#fig-ns:not(.loading)').waitFor()
}

const text = async (page: Page, selector: string) => ((await page.locator(selector).first().textContent()) ?? '').trim()

/** A period of `days` ending now, as the page asks for it. */
const presetBody = (days: number) => ({ start: new Date(Date.now() - days * DAY).toISOString(), end: new Date().toISOString() })

describe('network explorer', { skip: SKIP, timeout: 180_000 }, () => {
  let server: WebServer
  let browser: Browser

  before(async () => {
    server = await startWebServer({ PUBLIC_RATE_LIMIT: '0' })
    await seed(server)
    browser = await launchChromium()
  })
  after(async () => {
    await browser?.close()
    await server?.close()
  })

  test('seeded: figures equal the API, charts, map and tables are drawn', async (t) => {
    const { context, page, watch } = await openPage(browser)
    const response = await page.goto(`${server.url}/`)
    const csp = response!.headers()['content-security-policy']!
    assert.match(csp, /script-src 'self'/)
    assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval|https?:/)
    await settled(page)
    const nav = await page.evaluate(() => Math.round((globalThis as any).performance.getEntriesByType('navigation')[0].duration))
    t.diagnostic(`page loaded in ${nav} ms`)

    const global = await api<{ totalUniqueClients: number; totalGB: number; totalSessions: number }>(server, 'UsageGraph/global-public-stats')
    assert.ok(global.totalSessions > 2000, 'seeded')
    const ns = await api<{ totalNS: number; totalPerCountry: Record<string, number> }>(server, 'UsageGraph/global-public-ns-stats',
      presetBody(1))
    assert.equal(ns.totalNS, [...demoSignups(DEMO)].length)
    assert.equal(await text(page, '#fig-clients'), int.format(global.totalUniqueClients))
    assert.equal(await text(page, '#fig-gb'), formatData(global.totalGB * 1000))
    assert.equal(await text(page, '#fig-sessions'), int.format(global.totalSessions))
    assert.equal(await text(page, '#fig-ns'), int.format(ns.totalNS))
    assert.equal(await page.locator('#empty').isVisible(), false)

    // Every chart draws a line with one point per finished bucket (30 days, daily: 30 or 31
    // buckets), and the unfinished current one (the period ends now) as a dashed segment.
    for (const id of CHARTS) {
      const d = await page.locator(`#chart-${id} svg path.line:not(.partial)`).getAttribute('d')
      assert.ok(d !== null && (d.match(/[ML]/g) ?? []).length >= 29, `chart ${id}: ${d?.slice(0, 80)}`)
      assert.equal(await page.locator(`#chart-${id} svg path.line.partial`).count(), 1, `chart ${id}: the current bucket is marked unfinished`)
    }
    assert.ok(await page.locator('#chart-ns svg rect.bar').count() > 0, 'sign-up bars')

    // The map: the land outline and one marker per node.
    const gateways = (await api<RangeStats>(server, 'UsageGraph/global-public-gateway-stats',
      presetBody(1))).periodUsage.gatewayNodes
    const wifi = await api<{ uid: string }[]>(server, 'Wifi/wifi-nodes', {})
    assert.ok(gateways.length >= 8 && wifi.length >= 8)
    assert.ok(((await page.locator('#map svg path.land').getAttribute('d')) ?? '').length > 5000, 'land outline')
    const targets = await mapTargets(page)
    assert.equal(targets.reduce((n, t) => n + t.count, 0), gateways.length + wifi.length, 'every node is a marker or in a cluster')
    assert.ok(await page.locator('#map .marker.status-online').count() > 0)

    // The node table: every node, by uid.
    const uids = await page.locator('#node-table tbody tr').evaluateAll((rows) => rows.map((r) => (r as any).dataset.uid as string))
    assert.deepEqual(uids.sort(), [...gateways.map((g) => g.uid), ...wifi.map((w) => w.uid)].sort())
    await page.locator('#node-filter').selectOption('wifi')
    assert.equal(await page.locator('#node-table tbody tr').count(), wifi.length)
    await page.locator('#node-filter').selectOption('all')

    // Sign-ups per country: a row per country, totals as the API's.
    const countries = Object.entries(ns.totalPerCountry)
    assert.equal(await page.locator('#country-table tbody tr').count(), countries.length)
    for (const [code, total] of countries) {
      assert.equal(await text(page, `#country-table tr[data-country="${code}"] td:last-child`), int.format(total), code)
    }
    assert.equal(await text(page, '[data-total="ns-total"]'), int.format(ns.totalNS))

    // Details on hover.
    const marker = page.locator('#map .node[data-network="gateway"]').first()
    const uid = await marker.getAttribute('data-uid')
    await marker.hover()
    await page.locator('#map-tip').waitFor()
    assert.match(await text(page, '#map-tip'), new RegExp(`Gateway · ${uid}`))
    await screenshot(page, 'explorer-seeded')

    // The demo reaches now: the current (dashed) bucket holds its sessions so far, as the chart
    // reads it out, and not a zero for a day the data never reached (the dive to 0 it was).
    const demo = [...demoSessions(DEMO, demoNodes(DEMO))].flat()
    for (const network of ['gateway', 'wifi'] as const) {
      const [since, value] = (await api<RangeStats>(server, `UsageGraph/global-public-${network}-stats`, presetBody(30))).periodUsage.sessions.at(-1)!
      const soFar = demo.filter((s) => s.network === network && s.start >= since!).length
      assert.equal(value, soFar, `${network}: the current bucket counts the demo's sessions since ${new Date(since!).toISOString()}`)
      await page.locator(`#chart-${network}-sessions`).focus()
      const readout = await text(page, `#chart-${network}-sessions .chart-readout`)
      assert.ok(readout.includes('(so far)') && readout.endsWith(`${int.format(soFar)} sessions`), readout)
    }
    await assertClean(watch)
    await context.close()
  })

  test('changing the period refetches and redraws; the totals are the API\'s for that period', async () => {
    const { context, page, watch } = await openPage(browser)
    await page.goto(`${server.url}/`)
    await settled(page)
    const before = await page.locator('#chart-gateway-sessions svg path.line:not(.partial)').getAttribute('d')

    const posted: Request[] = []
    page.on('request', (r) => { if (r.method() === 'POST' && r.url().includes('/api/v1/UsageGraph/')) posted.push(r) })

    for (const [preset, minPoints, maxPoints] of [['7d', 7, 8], ['24h', 24, 26], ['1y', 2, 60]] as const) {
      posted.length = 0
      const answered = page.waitForResponse((r) => r.url().endsWith('/global-public-wifi-stats'))
      await page.getByRole('button', { name: preset.replace(/(\d)([a-z])/, '$1 $2') }).click()
      await answered
      await page.locator('main[aria-busy="false"]').waitFor()
      assert.equal(await page.getByRole('button', { name: preset.replace(/(\d)([a-z])/, '$1 $2') }).getAttribute('aria-pressed'), 'true')
      // Each endpoint twice: the period, and the period of the same length before it (the changes).
      const paths = posted.map((r) => new URL(r.url()).pathname).sort()
      assert.deepEqual(paths, ['gateway', 'gateway', 'ns', 'ns', 'wifi', 'wifi'].map((n) => `/api/v1/UsageGraph/global-public-${n}-stats`))
      const [body, earlier] = posted.filter((r) => r.url().endsWith('gateway-stats')).map((r) => JSON.parse(r.postData()!) as { start: string; end: string })
        .sort((a, b) => Date.parse(b.start) - Date.parse(a.start)) as [{ start: string; end: string }, { start: string; end: string }]
      const length = Date.parse(body.end) - Date.parse(body.start)
      assert.ok(Math.abs(length - { '7d': 7, '24h': 1, '1y': 365 }[preset] * DAY) < 60_000, `${preset}: ${length}`)
      assert.equal(earlier.end, body.start, 'the period before ends where this one starts')
      assert.equal(Date.parse(earlier.end) - Date.parse(earlier.start), length)
      const previous = await api<RangeStats>(server, 'UsageGraph/global-public-gateway-stats', earlier)
      const now = await api<RangeStats>(server, 'UsageGraph/global-public-gateway-stats', body)
      const change = formatChange(now.periodUsage.currentSessions, previous.periodUsage.currentSessions)
      const wanted = change === '' ? '' : `${change} vs ${previousLabel(length)}`
      // The changes come from the second pair of answers, drawn after the first: aria-busy can
      // read false from before the click for a moment under load (seen once), so wait for it.
      await page.waitForFunction(([selector, want]) => ((globalThis as any).document.querySelector(selector)?.textContent ?? '').trim() === want,
        ['[data-change="gateway-sessions"]', wanted] as const, { timeout: 5000 }).catch(() => {})
      assert.equal(await text(page, '[data-change="gateway-sessions"]'), wanted)
      const expected = await api<RangeStats>(server, 'UsageGraph/global-public-gateway-stats', body)
      assert.equal(await text(page, '[data-total="gateway-sessions"]'), int.format(expected.periodUsage.currentSessions))
      assert.equal(await text(page, '[data-total="gateway-clients"]'), int.format(expected.periodUsage.currentClients))
      assert.equal(await text(page, '[data-total="gateway-mb"]'), formatData(expected.periodUsage.currentUsageMB))
      const d = await page.locator('#chart-gateway-sessions svg path.line:not(.partial)').getAttribute('d')
      // The finished buckets, and the current one as the dashed segment.
      const points = (d?.match(/[ML]/g) ?? []).length + await page.locator('#chart-gateway-sessions svg path.line.partial').count()
      assert.equal(points, expected.periodUsage.sessions.length)
      assert.ok(points >= minPoints && points <= maxPoints, `${preset}: ${points} points`)
      assert.notEqual(d, before, `${preset} redrew`)
      await screenshot(page, `explorer-period-${preset}`)
    }

    // Custom: both days included, in UTC.
    posted.length = 0
    await page.getByRole('button', { name: 'Custom' }).click()
    const from = new Date(Date.now() - 10 * DAY).toISOString().slice(0, 10)
    const to = new Date(Date.now() - 3 * DAY).toISOString().slice(0, 10)
    await page.locator('#custom-start').fill(from)
    await page.locator('#custom-end').fill(to)
    const answered = page.waitForResponse((r) => r.url().endsWith('/global-public-wifi-stats'))
    await page.getByRole('button', { name: 'Show' }).click()
    await answered
    await page.locator('main[aria-busy="false"]').waitFor()
    const body = posted.filter((r) => r.url().endsWith('gateway-stats')).map((r) => JSON.parse(r.postData()!) as { start: string; end: string })
      .sort((a, b) => Date.parse(b.start) - Date.parse(a.start))[0]!
    assert.equal(body.start, `${from}T00:00:00.000Z`)
    assert.equal(body.end, new Date(Date.parse(`${to}T00:00:00Z`) + DAY).toISOString())
    assert.equal((((await page.locator('#chart-gateway-sessions svg path.line:not(.partial)').getAttribute('d')) ?? '').match(/[ML]/g) ?? []).length, 8)
    assert.equal(await page.locator('#chart-gateway-sessions svg path.line.partial').count(), 0, 'a finished period has no unfinished bucket')
    // Both days included, neither later than the period: "… – <to> <year> (UTC, daily)".
    assert.equal(await text(page, '#period-label'), describePeriod(body, DAY, Date.now()))
    assert.match(await text(page, '#period-label'), new RegExp(` – ${Number(to.slice(8, 10))} \\w+ ${to.slice(0, 4)} `))
    // A start after the end is refused in the page, without a request.
    posted.length = 0
    await page.locator('#custom-start').fill(to)
    await page.locator('#custom-end').fill(from)
    await page.getByRole('button', { name: 'Show' }).click()
    assert.match(await text(page, '#custom-error'), /start must be on or before/)
    assert.equal(posted.length, 0)
    await screenshot(page, 'explorer-custom')
    await assertClean(watch)
    await context.close()
  })

  test('what the public reads right: no future end date, data in a unit that scales, legible status badges', async () => {
    const { context, page, watch } = await openPage(browser)
    await page.goto(`${server.url}/`)
    await settled(page)
    const label = await text(page, '#period-label')
    assert.match(label, / – now \(UTC, daily\)$/, label)
    assert.match(label, /^\d{1,2} \w{3,4} \d{4} – /, 'the year is there')
    // Badges: white (light scheme) text on each status colour at least 4.5:1 (WCAG AA).
    const ratios = await page.evaluate(`(() => {
      const luminance = (rgb) => {
        const [r, g, b] = (rgb.match(/\\d+/g) ?? []).slice(0, 3).map((c) => { const v = Number(c) / 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4 })
        return 0.2126 * r + 0.7152 * g + 0.0722 * b
      }
      return [...document.querySelectorAll('.badge')].slice(0, 50).map((el) => {
        const style = getComputedStyle(el)
        const [a, b] = [luminance(style.color), luminance(style.backgroundColor)].sort((x, y) => y - x)
        return { status: el.className, ratio: (a + 0.05) / (b + 0.05) }
      })
    })()`) as Array<{ status: string; ratio: number }>
    assert.ok(ratios.length > 0, 'badges drawn')
    for (const { status, ratio } of ratios) assert.ok(ratio >= 4.5, `${status}: ${ratio.toFixed(2)}:1`)
    await assertClean(watch)
    await context.close()
  })

  for (const [label, device] of [['1440x900', undefined], ['390x844 (phone)', 'phone']] as const) {
    test(`map at ${label}: every node reachable through a 24 px+ target; clusters count, zoom by keyboard, and list nodes that share a spot`, async () => {
      const { context, page, watch } = await openPage(browser, device === 'phone' ? { device } : { viewport: { width: 1440, height: 900 } })
      await page.goto(`${server.url}/`)
      await settled(page)
      const nodes = (await page.locator('#node-table tbody tr').count())
      const targets = await mapTargets(page)
      assert.equal(targets.reduce((n, t) => n + t.count, 0), nodes, 'markers and cluster counts add up to every node')
      for (const t of targets) {
        assert.ok(t.w >= 24 && t.h >= 24, `target ${t.key.slice(0, 40)} is ${t.w.toFixed(1)}x${t.h.toFixed(1)} px`)
        assert.ok(t.hitsItself, `target ${t.key.slice(0, 40)} is not covered by another (${t.hit} at ${t.cx.toFixed(0)},${t.cy.toFixed(0)})`)
      }
      assert.ok(targets.some((t) => t.count >= 7), 'the seven nodes on one spot are one cluster')
      // The zoom buttons sit outside the drawing: they cover no marker (at 390 px they sat on the Tokyo cluster).
      assert.deepEqual(await markersUnderControls(page), [], 'markers under the zoom buttons')

      // Keyboard: Tab reaches the map's targets; Enter on the Tokyo cluster zooms in, until its
      // nodes are apart or (one spot) listed, each with a link to its page.
      const tokyo = () => page.locator('#map .cluster[aria-label*="Tokyo Station AP"]').first()
      let listed = 0
      await tokyo().focus()
      for (let i = 0; i < 8 && listed === 0; i++) {
        const zoom = Number(await page.locator('#map').getAttribute('data-zoom'))
        // No refocusing between presses: after a zoom, focus stays on the cluster (or what it split into).
        await page.keyboard.press('Enter')
        listed = await page.locator('#map-tip a').count()
        if (listed === 0) assert.ok(Number(await page.locator('#map').getAttribute('data-zoom')) > zoom, 'Enter on a cluster zooms in')
      }
      assert.ok(listed >= 7, `the spot's nodes are listed (${listed})`)
      // Escape in the list goes back to the cluster (focus never falls to the page).
      await page.keyboard.press('Escape')
      assert.equal(await page.locator('#map-tip a').count(), 0, 'the list is closed')
      assert.match((await page.evaluate(() => (globalThis as any).document.activeElement?.getAttribute('aria-label'))) ?? '', /Tokyo Station AP/, 'focus back on the cluster')
      await tokyo().focus()
      await page.keyboard.press('Enter')
      await page.locator('#map-tip a').first().waitFor()
      const names = await page.locator('#map-tip a').allTextContents()
      for (const n of TOKYO_SPOT) assert.ok(names.some((name) => name.startsWith(n.name)), `${n.name} listed`)
      assert.equal(await page.evaluate(() => (globalThis as any).document.activeElement?.tagName), 'A', 'focus moves into the list')
      // The tip keeps node IDs whole.
      const broken = await page.evaluate(`[...document.querySelectorAll('#map-tip a')].filter((a) => a.getClientRects().length > 1).length`)
      assert.equal(broken, 0)
      await screenshot(page, `explorer-map-${device ?? 'desktop'}-cluster-list`)

      // The controls: zoom in, and out to the whole world again.
      if (Number(await page.locator('#map').getAttribute('data-zoom')) > 1) await page.getByRole('button', { name: 'Zoom out to the whole world' }).click()
      assert.equal(await page.locator('#map').getAttribute('data-zoom'), '1.00')
      assert.equal(await page.getByRole('button', { name: 'Zoom out to the whole world' }).getAttribute('aria-disabled'), 'true', 'nothing to reset at the whole world')
      await page.getByRole('button', { name: 'Zoom in', exact: true }).click()
      assert.equal(await page.locator('#map').getAttribute('data-zoom'), '2.00')
      assert.deepEqual(await markersUnderControls(page), [], 'markers under the zoom buttons, zoomed in')
      await page.getByRole('button', { name: 'Zoom out to the whole world' }).click()
      assert.equal(await page.locator('#map').getAttribute('data-zoom'), '1.00')
      await assertClean(watch)
      await context.close()
    })
  }

  for (const [label, device] of [['1440x900', undefined], ['390x844 (phone)', 'phone']] as const) {
    test(`charts at ${label}: 12 px axis labels, several dates, each bucket's value by hover or tap and by keyboard`, async () => {
      const { context, page, watch } = await openPage(browser, device === 'phone' ? { device } : { viewport: { width: 1440, height: 900 } })
      await page.goto(`${server.url}/`)
      await settled(page)
      for (const id of CHARTS) {
        const axis = await page.locator(`#chart-${id} svg`).evaluate((root: any) => {
          const scale = root.getBoundingClientRect().width / root.viewBox.baseVal.width
          const texts = [...root.querySelectorAll('text.axis')] as any[]
          const g = globalThis as any
          return { px: Math.min(...texts.map((t) => parseFloat(g.getComputedStyle(t).fontSize) * scale)), xLabels: texts.filter((t) => /[A-Za-z]/.test(t.textContent)).length }
        })
        assert.ok(axis.px >= 12, `${id}: axis text ${axis.px.toFixed(1)} px on screen`)
        assert.ok(axis.xLabels >= 3, `${id}: ${axis.xLabels} date labels`)
      }
      // Clients per day are daily uniques: the chart never adds them up into a "total" that would contradict the headline.
      assert.doesNotMatch(await text(page, '#chart-gateway-clients svg > title'), /total/)
      assert.match(await text(page, '#chart-gateway-sessions svg > title'), /total/)

      // Hover (or tap) the third bucket: its date and the API's value.
      const body = presetBody(30)
      const stats = await api<RangeStats>(server, 'UsageGraph/global-public-gateway-stats', body)
      const series = stats.periodUsage.sessions
      const chart = page.locator('#chart-gateway-sessions')
      await chart.scrollIntoViewIfNeeded()
      const box = (await chart.locator('svg').boundingBox())!
      const x = box.x + 44 + ((box.width - 54) * 2) / (series.length - 1)
      if (device === 'phone') await page.touchscreen.tap(x, box.y + box.height / 2)
      else await page.mouse.move(x, box.y + box.height / 2)
      const readout = chart.locator('.chart-readout')
      await readout.waitFor()
      assert.match(await readout.innerText(), new RegExp(`${int.format(series[2]![1]!)} sessions`))
      await screenshot(page, `explorer-${device ?? 'desktop'}-chart-readout`)

      // Keyboard: focus the chart, End is the (unfinished) current bucket, ArrowLeft the one before.
      await chart.focus()
      await page.keyboard.press('End')
      assert.match(await readout.innerText(), new RegExp(`\\(so far\\)[\\s\\S]*${int.format(series.at(-1)![1]!)} sessions`))
      await page.keyboard.press('ArrowLeft')
      assert.match(await readout.innerText(), new RegExp(`${int.format(series.at(-2)![1]!)} sessions`))
      await page.keyboard.press('Escape')
      assert.equal(await readout.isVisible(), false)
      await assertClean(watch)
      await context.close()
    })
  }

  test('nodes: search, sort, a page per node (from the table, the map and a link), cards that fit a phone', async () => {
    const { context, page, watch } = await openPage(browser, { device: 'phone' })
    await page.goto(`${server.url}/`)
    await settled(page)
    const all = await page.locator('#node-table tbody tr').count()
    // No 638 px table in a 324 px box: every row fits, the status included.
    const fit = await page.evaluate(`(() => {
      const box = document.querySelector('#node-table').parentElement.getBoundingClientRect()
      const rows = [...document.querySelectorAll('#node-table tbody tr')]
      return { table: document.querySelector('#node-table').scrollWidth, box: box.width,
        badgesOutside: rows.filter((r) => { const b = r.querySelector('.badge').getBoundingClientRect(); return b.right > box.right + 0.5 || b.left < box.left - 0.5 }).length }
    })()`) as { table: number; box: number; badgesOutside: number }
    assert.ok(fit.table <= fit.box + 0.5, `table ${fit.table} px in a ${fit.box} px box`)
    assert.equal(fit.badgesOutside, 0, 'every status is inside the box')

    await page.getByRole('searchbox', { name: 'Search' }).fill('tokyo station')
    assert.equal(await page.locator('#node-table tbody tr').count(), TOKYO_SPOT.length)
    assert.equal(await text(page, '#node-count'), `7 of 7 matching (${all} in all)`)
    await screenshot(page, 'explorer-390-node-search')
    await page.getByRole('searchbox', { name: 'Search' }).fill('no such node')
    assert.equal(await text(page, '#node-table tbody'), 'No node matches the search')
    await page.getByRole('searchbox', { name: 'Search' }).fill('')

    // Sort by status: Offline first, then (again) Pending first.
    const statusSort = page.locator('#node-table th[data-sort="status"] button')
    await statusSort.click()
    assert.equal(await page.locator('#node-table th[data-sort="status"]').getAttribute('aria-sort'), 'ascending')
    assert.equal(await text(page, '#node-table tbody tr:first-child .badge'), 'Offline')
    await statusSort.click()
    assert.equal(await page.locator('#node-table th[data-sort="status"]').getAttribute('aria-sort'), 'descending')
    assert.equal(await text(page, '#node-table tbody tr:first-child .badge'), 'Pending')
    assert.equal(await page.locator('#node-table th[data-sort="name"]').getAttribute('aria-sort'), null)

    // A node's page, from its name in the table; the address can be shared.
    await page.getByRole('searchbox', { name: 'Search' }).fill('Tokyo Station AP 3')
    await page.getByRole('link', { name: 'Tokyo Station AP 3' }).click()
    await page.getByRole('heading', { name: 'Tokyo Station AP 3' }).waitFor()
    assert.equal(new URL(page.url()).hash, '#node=wifi:wifi-tokyo-3')
    assert.match(await text(page, '#node-page-facts'), /IDwifi-tokyo-3/)
    assert.match(await text(page, '#node-page-facts'), /Location35\.6812, 139\.7671/)
    await screenshot(page, 'explorer-390-node-page')
    await page.goBack()
    assert.equal(await page.locator('#node-page').isVisible(), false)

    await page.goto(`${server.url}/#node=gateway:gw-0001`)
    await settled(page)
    await page.locator('#node-page').waitFor()
    assert.match(await text(page, '#node-page-facts'), /IDgw-0001/)
    await page.goto(`${server.url}/#node=gateway:no-such-node`)
    await settled(page)
    await page.getByRole('heading', { name: 'Node not found' }).waitFor()
    await assertClean(watch)
    await context.close()
  })

  test('headline: node count and share online; "last updated", refreshed every minute without a reload', async () => {
    const { context, page, watch } = await openPage(browser, { viewport: { width: 1440, height: 900 } })
    await page.clock.install()
    await page.goto(`${server.url}/`)
    await settled(page)
    const gateways = (await api<RangeStats & { periodUsage: { gatewayNodes: { status: string }[] } }>(server, 'UsageGraph/global-public-gateway-stats', presetBody(1))).periodUsage.gatewayNodes
    const wifi = await api<{ status: string }[]>(server, 'Wifi/wifi-nodes', {})
    const nodes = [...gateways, ...wifi]
    const online = nodes.filter((n) => n.status === 'Online').length
    assert.equal(await text(page, '#fig-nodes'), int.format(nodes.length))
    assert.equal(await text(page, '#fig-online'), `${int.format(online)} (${Math.round((online / nodes.length) * 100)}%)`)
    const updated = await page.locator('#updated time').getAttribute('datetime')
    assert.ok(updated !== null && Math.abs(Date.parse(updated) - Date.now()) < 120_000, `updated ${updated}`)
    assert.match(await text(page, '#updated'), /^Updated \d\d:\d\d:\d\d UTC · refreshes every minute$/)

    // A keyboard user on a node's link and one reading a chart keep their place through the refresh.
    await page.locator('#node-table tbody a').nth(2).focus()
    const focusedHref = await page.locator('#node-table tbody a').nth(2).getAttribute('href')
    const refreshed = page.waitForResponse((r) => r.url().endsWith('/Wifi/wifi-nodes'))
    await page.clock.fastForward(65_000)
    await refreshed
    // The rows are drawn again once every answer is in (the node list is the last to be asked for again).
    await page.waitForFunction(() => (globalThis as any).document.querySelector('#node-table tbody tr')?.isConnected)
    await page.evaluate(() => new Promise((resolve) => (globalThis as any).setTimeout(resolve, 0)))
    await page.clock.runFor(100)
    await page.waitForFunction((before) => (globalThis as any).document.querySelector('#updated time')?.getAttribute('datetime') !== before, updated)
    await page.locator('main[aria-busy="false"]').waitFor()
    assert.equal(await page.locator('main').getAttribute('aria-busy'), 'false', 'a refresh does not blank the page')
    assert.equal(await page.evaluate(() => (globalThis as any).document.activeElement?.getAttribute('href')), focusedHref, 'focus kept on the node link')
    await assertClean(watch)
    await context.close()
  })

  test('first render: figures, charts and map on screen well under 1 s after navigation start', async (t) => {
    // A plain context: openPage's request interception would slow every request down.
    const context = await browser.newContext()
    const page = await context.newPage()
    const times: number[] = []
    for (let i = 0; i < 3; i++) {
      await page.goto(`${server.url}/`)
      await settled(page)
      // The last of the API answers and the map chunk: the page draws right after each.
      times.push(await page.evaluate(() => Math.round(Math.max(...(globalThis as any).performance.getEntriesByType('resource')
        .filter((e: any) => e.name.includes('/api/v1/') || e.name.includes('/assets/map-')).map((e: any) => e.responseEnd)))))
    }
    t.diagnostic(`last API answer / map chunk at ${times.join(', ')} ms after navigation start (cold, warm, warm)`)
    assert.ok(Math.min(...times) < 1000, times.join(', '))
    await context.close()
  })

  test('375 px: no horizontal scroll, map tap shows details', async () => {
    const { context, page, watch } = await openPage(browser, { device: 'phone', viewport: { width: 375, height: 740 } })
    await page.goto(`${server.url}/`)
    await settled(page)
    assert.equal(await horizontalOverflow(page), 0)
    // Tap clusters (each zooms in) until single markers show, then tap one.
    for (let i = 0; i < 6 && await page.locator('#map .node').count() === 0; i++) await page.locator('#map .cluster').first().tap()
    const marker = page.locator('#map .node').first()
    const network = await marker.getAttribute('data-network')
    await marker.tap()
    await page.locator('#map-tip').waitFor()
    assert.match(await text(page, '#map-tip'), network === 'wifi' ? /WiFi node · wifi-/ : /Gateway · gw-/)
    assert.equal(await horizontalOverflow(page), 0)
    await screenshot(page, 'explorer-375')
    await assertClean(watch)
    await context.close()
  })

  test('empty database: the banner and the zero figures, not empty charts and a bare map', async () => {
    const empty = await startWebServer({ PUBLIC_RATE_LIMIT: '0' })
    try {
      const { context, page, watch } = await openPage(browser, { viewport: { width: 390, height: 844 } })
      await page.goto(`${empty.url}/`)
      await page.locator('main[aria-busy="false"]').waitFor()
      await page.locator('#empty').waitFor()
      assert.match(await text(page, '#empty .empty-hint'), /npx kns seed --demo/, 'the operator of a fresh server learns how to see it filled')
      await page.locator('#fig-ns:not(.loading)').waitFor()
      assert.equal(await text(page, '#fig-sessions'), '0')
      assert.equal(await text(page, '#fig-ns'), '0')
      assert.equal(await text(page, '#fig-gb'), '0.00 MB')
      // The charts, the map and the tables are drawn (so they are ready when data comes) but not shown.
      for (const id of CHARTS) assert.equal(await text(page, `#chart-${id} .chart-empty`), 'No data in this period')
      for (const section of ['.period', '.network', '.nodes', '.signups']) {
        assert.equal(await page.locator(`main > section${section}`).first().isVisible(), false, `${section} hidden`)
      }
      const height = await page.evaluate(() => (globalThis as any).document.documentElement.scrollHeight as number)
      assert.ok(height < 1500, `the empty page is ${height} px tall on a phone`)
      assert.equal(await horizontalOverflow(page), 0)
      await screenshot(page, 'explorer-empty')
      await assertClean(watch)
      await context.close()
    } finally {
      await empty.close()
    }
  })

  test('loading: the skeleton holds the space while the API answers', async () => {
    const { context, page, watch } = await openPage(browser)
    let release!: () => void
    const gate = new Promise<void>((resolve) => { release = resolve })
    await page.route('**/api/v1/UsageGraph/**', async (route) => { await gate; await route.continue() })
    await page.goto(`${server.url}/`)
    assert.equal(await page.locator('main').getAttribute('aria-busy'), 'true')
    assert.equal(await page.locator('#fig-clients.loading').count(), 1)
    assert.equal(await page.locator('.chart-box.loading').count(), 7)
    await screenshot(page, 'explorer-loading')
    release()
    await settled(page)
    assert.equal(await page.locator('.chart-box.loading').count(), 0)
    await assertClean(watch)
    await context.close()
  })
})
