/**
 * Multi-page build of the pages the service serves (src/http/routes/pages.ts).
 * Every web/<page>/index.html is an entry, so adding a page is adding a folder (and its route).
 * Output: dist/web/<page>/index.html and content-hashed dist/web/assets/*.
 */
import { existsSync, readdirSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { defineConfig } from 'vite'

const webDir = dirname(fileURLToPath(import.meta.url))

const pages = Object.fromEntries(
  readdirSync(webDir, { withFileTypes: true })
    .filter((entry) => entry.isDirectory() && existsSync(join(webDir, entry.name, 'index.html')))
    .map((entry) => [entry.name, join(webDir, entry.name, 'index.html')]),
)

export default defineConfig({
  root: webDir,
  base: '/',
  publicDir: false,
  resolve: {
    // Only the Poseidon arities zkLogin's nonce and address seed use (see the file).
    alias: [{ find: /^poseidon-lite$/, replacement: join(webDir, 'approve', 'poseidon-subset.ts') }],
  },
  build: {
    outDir: resolve(webDir, '..', 'dist', 'web'),
    emptyOutDir: true,
    target: 'es2022',
    // Everything as files (no data: URIs), so the CSP needs nothing beyond 'self'.
    assetsInlineLimit: 0,
    // Every browser that runs a Sui wallet supports modulepreload; the polyfill would be inline-ish code.
    modulePreload: { polyfill: false },
    cssCodeSplit: true,
    sourcemap: false,
    reportCompressedSize: true,
    chunkSizeWarningLimit: 600,
    rollupOptions: {
      input: pages,
      onwarn(warning, warn) {
        // @scure/base (via @mysten/sui) has a /* @__PURE__ */ comment Rollup cannot place: harmless.
        if (warning.code === 'INVALID_ANNOTATION' && warning.id?.includes('node_modules')) return
        warn(warning)
      },
    },
  },
})
