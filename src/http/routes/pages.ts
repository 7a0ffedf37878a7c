/**
 * The web pages (web/, built by Vite into dist/web): each page's HTML at its path, and the
 * content-hashed files under /assets/. Everything is read and compressed once at start and
 * served from memory. The HTML carries a strict Content-Security-Policy (scripts, styles and
 * connections from this origin only, nothing inline, no framing) and the page config
 * (`<meta name="kns-page-config">`, see web/shared/page-config.ts).
 */
import { createHash } from 'node:crypto'
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { dirname, extname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { brotliCompress, constants as zlib, gzip as gzipCompress } from 'node:zlib'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { NotFoundError } from '../../errors.ts'
import type { Service } from '../../service.ts'

export const DIST_DIR = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..', 'dist', 'web')

/** Path -> built HTML. A new page is a web/<name>/index.html (a Vite entry) and a line here. */
export const PAGES: ReadonlyArray<{ path: string; file: string }> = [
  { path: '/approve', file: 'approve/index.html' },
  { path: '/docs', file: 'docs/index.html' },
  { path: '/', file: 'explorer/index.html' },
]

export const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  // data: for the icons wallets announce through the Wallet Standard (data URIs by its rules).
  "img-src 'self' data:",
  "font-src 'self'",
  "connect-src 'self'",
  "manifest-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ')

/** On every HTML page. no-referrer: the approval URL's `ref` is a capability and must not leak to the vendor. */
const PAGE_HEADERS: Record<string, string> = {
  'content-security-policy': CONTENT_SECURITY_POLICY,
  'referrer-policy': 'no-referrer',
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  // Popups allowed: web wallets sign in a window they open and answer through window.opener.
  'cross-origin-opener-policy': 'same-origin-allow-popups',
  'permissions-policy': 'camera=(), microphone=(), geolocation=(), payment=()',
  'cache-control': 'no-cache',
}

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.json': 'application/json',
  '.png': 'image/png',
  '.webp': 'image/webp',
  '.woff2': 'font/woff2',
}

const CONFIG_PLACEHOLDER = '<meta name="kns-page-config" content="{}">'

/**
 * A file in memory with its brotli and gzip forms: the build's `.br`/`.gz` files for assets
 * (web/build.ts), otherwise made on the first request that accepts them, on the libuv thread
 * pool (never blocking the event loop), and kept.
 */
interface Asset {
  type: string
  etag: string
  identity: Buffer
  br?: Promise<Buffer>
  gzip?: Promise<Buffer>
}

const brotliAsync = promisify(brotliCompress)
const gzipAsync = promisify(gzipCompress)

function asset(body: Buffer, type: string): Asset {
  return { type, etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"`, identity: body }
}

function encoded(file: Asset, encoding: 'br' | 'gzip'): Promise<Buffer> {
  const body = file.identity
  if (encoding === 'br') {
    file.br ??= brotliAsync(body, { params: { [zlib.BROTLI_PARAM_QUALITY]: 11, [zlib.BROTLI_PARAM_SIZE_HINT]: body.length } })
    return file.br
  }
  file.gzip ??= gzipAsync(body, { level: 9 })
  return file.gzip
}

function escapeAttribute(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;').replace(/>/g, '&gt;')
}

/** What the pages need to know about this server (never secrets). */
export function pageConfig(service: Service): Record<string, string> {
  const { ledger, suiNetwork, knsLatestPackageId, zkLoginClientId, publicBaseUrl } = service.config
  return {
    ledger, suiNetwork,
    // Calls go to the latest version of the package (types keep the original ID).
    callPackageId: knsLatestPackageId,
    // "Approve with your phone number": the built-in client's login at this server's provider.
    loginAuthUrl: `${service.accounts.provider.mountPath}/auth`,
    loginClientId: zkLoginClientId,
    loginRedirectUri: `${publicBaseUrl}/approve`,
  }
}

/** Inserts the page config; the placeholder is in every page's source (web/<page>/index.html). */
export function renderPage(html: string, config: Record<string, string>): string {
  if (!html.includes(CONFIG_PLACEHOLDER)) throw new Error(`a built page lacks ${CONFIG_PLACEHOLDER}`)
  return html.replace(CONFIG_PLACEHOLDER, `<meta name="kns-page-config" content="${escapeAttribute(JSON.stringify(config))}">`)
}

async function send(request: FastifyRequest, reply: FastifyReply, file: Asset): Promise<FastifyReply> {
  reply.header('content-type', file.type).header('etag', file.etag).header('vary', 'accept-encoding')
  if (request.headers['if-none-match'] === file.etag) return reply.status(304).send()
  const accepted = String(request.headers['accept-encoding'] ?? '')
  // Tiny files are not worth it (and may grow): only compressed from 1 KiB.
  if (file.identity.length >= 1024 && /\bbr\b/.test(accepted)) return reply.header('content-encoding', 'br').send(await encoded(file, 'br'))
  if (file.identity.length >= 1024 && /\bgzip\b/.test(accepted)) return reply.header('content-encoding', 'gzip').send(await encoded(file, 'gzip'))
  return reply.send(file.identity)
}

export interface PagesOptions {
  service: Service
  /** The Vite output (dist/web); tests may point elsewhere. */
  distDir?: string
}

/** The login page, served by the login provider's routes at `<issuer path>/interaction/:uid` (src/http/routes/accounts.ts). */
export const LOGIN_PAGE_FILE = 'login/index.html'

const NOT_BUILT = 'The web pages have not been built: run `npm run build:web`.\n'

/**
 * A route handler for one built page: its HTML with the page config and the page headers,
 * read once now; 503 with the command to run while the pages are not built.
 */
export function pageHandler(service: Service, file: string, distDir = DIST_DIR): (request: FastifyRequest, reply: FastifyReply) => Promise<FastifyReply> {
  if (!existsSync(join(distDir, file))) {
    return async (_request, reply) => reply.status(503).type('text/plain; charset=utf-8').send(NOT_BUILT)
  }
  const html = asset(Buffer.from(renderPage(readFileSync(join(distDir, file), 'utf8'), pageConfig(service))), TYPES['.html']!)
  return async (request, reply) => send(request, reply.headers(PAGE_HEADERS), html)
}

export async function pageRoutes(app: FastifyInstance, { service, distDir = DIST_DIR }: PagesOptions): Promise<void> {
  const built = [...PAGES.map((page) => page.file), LOGIN_PAGE_FILE].every((file) => existsSync(join(distDir, file)))
  if (!built) app.log.warn({ distDir }, 'web pages are not built (npm run build:web); their paths answer 503')
  for (const page of PAGES) app.get(page.path, { schema: { hide: true } }, pageHandler(service, page.file, distDir))
  // Where Swagger UI used to answer: the same page, at its one address.
  app.get('/docs/', { schema: { hide: true } }, async (_request, reply) => reply.redirect('/docs', 301))

  const assets = new Map<string, Asset>()
  const assetDir = join(distDir, 'assets')
  if (existsSync(assetDir)) {
    const names = readdirSync(assetDir)
    for (const name of names) {
      if (name.endsWith('.br') || name.endsWith('.gz')) continue
      const file = asset(readFileSync(join(assetDir, name)), TYPES[extname(name)] ?? 'application/octet-stream')
      if (names.includes(`${name}.br`)) file.br = Promise.resolve(readFileSync(join(assetDir, `${name}.br`)))
      if (names.includes(`${name}.gz`)) file.gzip = Promise.resolve(readFileSync(join(assetDir, `${name}.gz`)))
      assets.set(name, file)
    }
  }
  app.get('/assets/*', { schema: { hide: true } }, async (request, reply) => {
    const name = (request.params as { '*': string })['*']
    const file = assets.get(name)
    if (file === undefined) throw new NotFoundError('no such asset')
    // Names carry a content hash: a changed file is a new URL.
    reply.header('cache-control', 'public, max-age=31536000, immutable').header('x-content-type-options', 'nosniff')
    return send(request, reply, file)
  })
}
