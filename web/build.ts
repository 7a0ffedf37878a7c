/**
 * Builds the web pages into dist/web with Vite (web/vite.config.ts).
 *
 *   node web/build.ts              always build (npm run build:web)
 *   node web/build.ts --if-stale   build only when dist/web is missing or was built from other
 *                                  sources (npm start and npm test run this first)
 *
 * "Other sources" is a SHA-256 over every file under web/, the server files the pages bundle
 * (src/contract/) and package-lock.json, kept in
 * dist/web/.build-stamp: unlike mtimes it survives clones and checkouts. Vite is imported only
 * when a build is needed, so a deployment that ships dist/web needs no dev dependencies.
 * Assets are also written brotli- and gzip-compressed (`.br`, `.gz`) for the server to send as they are.
 */
import { createHash } from 'node:crypto'
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { dirname, join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'
import { brotliCompressSync, constants as zlib, gzipSync } from 'node:zlib'

const webDir = dirname(fileURLToPath(import.meta.url))
const root = join(webDir, '..')
const outDir = join(root, 'dist', 'web')
/** What the pages share with the server (src/contract/: the page bundles it too); it counts as sources. */
const sharedWithServer = () => files(join(root, 'src', 'contract'))
const stampFile = join(outDir, '.build-stamp')

function files(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) return entry.name === 'node_modules' ? [] : files(path)
    return [path]
  })
}

export function sourceHash(): string {
  const hash = createHash('sha256')
  const inputs = [...files(webDir), ...sharedWithServer(), join(root, 'package-lock.json')].filter(existsSync).sort()
  for (const path of inputs) {
    hash.update(relative(root, path)).update('\0').update(readFileSync(path)).update('\0')
  }
  return hash.digest('hex')
}

export function isFresh(): boolean {
  return existsSync(stampFile) && readFileSync(stampFile, 'utf8').trim() === sourceHash()
}

/**
 * Brotli (quality 11) and gzip (level 9) copies of every asset from 1 KiB, as `<name>.br` and
 * `<name>.gz`: compressed once here, so the server sends them without spending CPU per start.
 */
function precompress(): void {
  const assets = join(outDir, 'assets')
  for (const name of readdirSync(assets)) {
    const path = join(assets, name)
    const body = readFileSync(path)
    if (body.length < 1024) continue
    writeFileSync(`${path}.br`, brotliCompressSync(body, {
      params: { [zlib.BROTLI_PARAM_QUALITY]: 11, [zlib.BROTLI_PARAM_SIZE_HINT]: body.length },
    }))
    writeFileSync(`${path}.gz`, gzipSync(body, { level: 9 }))
  }
}

async function main(): Promise<void> {
  if (process.argv.includes('--if-stale') && isFresh()) return
  const { build } = await import('vite').catch((err: unknown) => {
    if ((err as { code?: string }).code !== 'ERR_MODULE_NOT_FOUND' || !String(err).includes("'vite'")) throw err
    throw new Error('the pages need building and Vite is not installed (a dev dependency): run `npm ci` with the dev dependencies, then `npm run build:web`')
  })
  await build({ configFile: join(webDir, 'vite.config.ts') })
  precompress()
  writeFileSync(stampFile, `${sourceHash()}\n`)
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  main().catch((err: unknown) => {
    console.error(err instanceof Error ? err.message : err)
    process.exit(1)
  })
}
