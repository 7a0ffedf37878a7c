/**
 * Browser tests: real headless Chromium (Debian's /usr/bin/chromium through playwright-core)
 * against a real server listening on 127.0.0.1, on the test's own database.
 */
import assert from 'node:assert/strict'
import { existsSync, readFileSync, mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core'
import { startHarness, type Harness } from '../helpers.ts'
import { freePort, ROOT } from '../support/process.ts'
import { DIST_DIR, PAGES } from '../../src/http/routes/pages.ts'
import { TestWallet } from './test-wallet.ts'

export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium'

/** `skip` option for the browser suites: a reason when Chromium (or the built pages) are missing. */
export const SKIP: string | false = !existsSync(CHROMIUM)
  ? `headless Chromium not found at ${CHROMIUM}: apt-get install chromium (.ci/run installs it)`
  : !PAGES.every((page) => existsSync(join(DIST_DIR, page.file)))
    ? 'the web pages are not built: npm run build:web (npm test builds them first)'
    : false

export const RESULTS_DIR = join(ROOT, 'test-results', 'web')

export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
      '--disable-component-update', '--disable-sync'],
  })
}

export interface WebServer {
  h: Harness
  /** http://127.0.0.1:<port>, also the PUBLIC_BASE_URL, so approvalUrl points at this server. */
  url: string
  close(): Promise<void>
}

export async function startWebServer(extraEnv: Record<string, string> = {}): Promise<WebServer> {
  const port = await freePort()
  const url = `http://127.0.0.1:${port}`
  // As a server runs: with its ledger watcher, expiry sweeper and webhook deliveries.
  const h = await startHarness({ PORT: String(port), PUBLIC_BASE_URL: url, LEDGER_WATCH_INTERVAL_MS: '200', ...extraEnv }, { events: true })
  await h.app.listen({ host: '127.0.0.1', port })
  return { h, url, close: () => h.close() }
}

/** Problems a page reported: CSP violations, uncaught errors, console errors. */
export interface PageWatch {
  cspViolations(): Promise<string[]>
  errors: string[]
}

/**
 * A fresh browser context and page at `viewport`, with the vendor's redirect targets
 * (https://vendor.example/*) answered locally, and the given wallets registered.
 */
export async function openPage(browser: Browser, options: {
  wallets?: TestWallet[]
  viewport?: { width: number; height: number }
  /** `phone`: 390x844 with touch (CSS `pointer: coarse`), as a phone's browser. */
  device?: 'phone'
  colorScheme?: 'light' | 'dark'
} = {}): Promise<{ context: BrowserContext; page: Page; watch: PageWatch }> {
  const phone = options.device === 'phone'
  const context = await browser.newContext({
    viewport: options.viewport ?? (phone ? { width: 390, height: 844 } : { width: 1024, height: 800 }),
    deviceScaleFactor: 1,
    hasTouch: phone,
    isMobile: phone,
    colorScheme: options.colorScheme ?? 'light',
  })
  const page = await context.newPage()
  page.setDefaultTimeout(15_000)
  await context.route('https://vendor.example/**', (route) =>
    route.fulfill({ status: 200, contentType: 'text/html', body: '<!doctype html><title>Vendor</title><h1>Back at the vendor</h1>' }))
  const errors: string[] = []
  page.on('pageerror', (err) => errors.push(`pageerror: ${err.message}`))
  page.on('console', (msg) => {
    // A 404 from transaction_details is how an unknown request looks; Chromium logs every non-2xx fetch.
    if (msg.type() === 'error' && !/Failed to load resource/.test(msg.text())) errors.push(`console: ${msg.text()}`)
  })
  await page.addInitScript(() => {
    const w = globalThis as any
    w.__cspViolations = []
    w.addEventListener('securitypolicyviolation', (e: any) => w.__cspViolations.push(`${e.violatedDirective} ${e.blockedURI}`))
  })
  for (const wallet of options.wallets ?? []) await wallet.install(page)
  return {
    context,
    page,
    watch: {
      errors,
      cspViolations: () => page.evaluate(() => (globalThis as any).__cspViolations ?? []).catch(() => []),
    },
  }
}

/**
 * Every state the tests photograph is also checked by axe-core (an independent accessibility
 * engine): no serious or critical violation. axe is evaluated in the page through the DevTools
 * protocol, which the pages' CSP (script-src 'self') does not govern, so the CSP stays as served.
 */
export async function screenshot(page: Page, name: string): Promise<void> {
  mkdirSync(RESULTS_DIR, { recursive: true })
  const original = page.viewportSize()
  // Every state at both widths and in both colour schemes: photographed, and checked by axe.
  for (const viewport of SCREENSHOT_VIEWPORTS) {
    for (const colorScheme of ['light', 'dark'] as const) {
      await page.setViewportSize(viewport)
      await page.emulateMedia({ colorScheme })
      await settle(page)
      // caret 'initial': Playwright hides the caret by adding a <style> to the page, which the
      // page's CSP blocks and reports (seen once as 12 console errors after 4 screenshots).
      await page.screenshot({ path: join(RESULTS_DIR, `${name}-${viewport.width}${colorScheme === 'dark' ? '-dark' : ''}.png`), fullPage: true, caret: 'initial' })
      await assertAccessible(page, `${name} at ${viewport.width}x${viewport.height}, ${colorScheme}`)
    }
  }
  if (original !== null) await page.setViewportSize(original)
  await page.emulateMedia({ colorScheme: null })
  await settle(page)
}

/** The widths every state is photographed and checked at: a laptop's and a phone's. */
export const SCREENSHOT_VIEWPORTS = [{ width: 1440, height: 900 }, { width: 390, height: 844 }] as const

/** Two animation frames: resize observers and style changes have run. */
function settle(page: Page): Promise<void> {
  return page.evaluate(() => new Promise<void>((resolve) => {
    const g = globalThis as any
    g.requestAnimationFrame(() => g.requestAnimationFrame(() => resolve()))
  }))
}

let axeSource: string | undefined

export async function assertAccessible(page: Page, state: string): Promise<void> {
  axeSource ??= readFileSync(join(ROOT, 'node_modules', 'axe-core', 'axe.min.js'), 'utf8')
  if (await page.evaluate('typeof axe') === 'undefined') await page.evaluate(`${axeSource};0`)
  const result = await page.evaluate(`axe.run(document, { resultTypes: ['violations'] }).then((r) => r.violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => ({ id: v.id, impact: v.impact, help: v.help, targets: v.nodes.slice(0, 5).map((n) => n.target.join(' ')) })))`) as Array<{ id: string; impact: string; help: string; targets: string[] }>
  assert.deepEqual(result, [], `${state}: accessibility violations (axe-core)`)
}

/** The page must have produced no CSP violation and no script error. */
export async function assertClean(watch: PageWatch): Promise<void> {
  assert.deepEqual(await watch.cspViolations(), [], 'CSP violations')
  assert.deepEqual(watch.errors, [], 'page errors')
}

/**
 * Reads the QR code drawn in #qr-code with an independent decoder (jsQR): the SVG is drawn onto
 * a canvas in the page (a data: image, which the CSP allows) and its pixels decoded here.
 */
export async function decodeQr(page: Page): Promise<string | null> {
  const { width, height, pixels } = await page.evaluate(async () => {
    const doc = (globalThis as any).document
    const svg = doc.querySelector('#qr-code svg')
    const image = new (globalThis as any).Image()
    image.src = `data:image/svg+xml;base64,${(globalThis as any).btoa(new (globalThis as any).XMLSerializer().serializeToString(svg))}`
    await image.decode()
    const size = 300
    const canvas = doc.createElement('canvas')
    canvas.width = size
    canvas.height = size
    const context = canvas.getContext('2d')
    context.imageSmoothingEnabled = false
    context.drawImage(image, 0, 0, size, size)
    return { width: size, height: size, pixels: Array.from(context.getImageData(0, 0, size, size).data as number[]) }
  })
  // A CommonJS module whose types say `export default`: Node's import gives module.exports as `default`, the function itself.
  const jsQR = (await import('jsqr')).default as unknown as (data: Uint8ClampedArray, width: number, height: number) => { data: string } | null
  return jsQR(Uint8ClampedArray.from(pixels), width, height)?.data ?? null
}

/** Widest content vs. viewport: > 0 means the page scrolls sideways. */
export function horizontalOverflow(page: Page): Promise<number> {
  return page.evaluate(() => {
    const doc = (globalThis as any).document.documentElement
    return doc.scrollWidth - doc.clientWidth
  })
}

/** Cumulative layout shift so far (Layout Instability API, buffered from navigation). */
export function layoutShift(page: Page): Promise<number> {
  return page.evaluate(() => new Promise<number>((resolve) => {
    let total = 0
    const observer = new (globalThis as any).PerformanceObserver((list: any) => {
      for (const entry of list.getEntries()) if (!entry.hadRecentInput) total += entry.value
    })
    observer.observe({ type: 'layout-shift', buffered: true })
    setTimeout(() => { observer.disconnect(); resolve(total) }, 300)
  }))
}
