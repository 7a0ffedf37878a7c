/**
 * The pages stay light: what each page's HTML loads before anything is asked of it (its
 * script, preloaded modules, stylesheets, icon; not the chunks loaded later: the explorer's map
 * data, the Sui transaction builder), gzip-compressed, against the budgets of issue 20:
 * 30 KB for the approval page, 100 KB for the explorer; the login page (issue 25) 20 KB. The figures are reported.
 */
import assert from 'node:assert/strict'
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { gzipSync } from 'node:zlib'
import { test } from 'node:test'
import { DIST_DIR } from '../../src/http/routes/pages.ts'

const BUDGETS = { approve: 30 * 1024, explorer: 100 * 1024, login: 20 * 1024 }

function initialBytes(page: keyof typeof BUDGETS): { total: number; files: Array<[string, number]> } {
  const html = readFileSync(join(DIST_DIR, page, 'index.html'), 'utf8')
  const assets = [...html.matchAll(/(?:src|href)="\/assets\/([^"]+)"/g)].map((m) => m[1]!)
  const files: Array<[string, number]> = [['index.html', gzipSync(html).length], ...assets.map((a): [string, number] => [a, gzipSync(readFileSync(join(DIST_DIR, 'assets', a))).length])]
  return { total: files.reduce((n, [, size]) => n + size, 0), files }
}

test('each page\'s first load, gzip, within its budget', { skip: !existsSync(join(DIST_DIR, 'approve', 'index.html')) && 'the pages are not built (npm run build:web)' }, (t) => {
  for (const page of ['approve', 'explorer', 'login'] as const) {
    const { total, files } = initialBytes(page)
    t.diagnostic(`${page}: ${(total / 1024).toFixed(1)} KB gzip (${files.map(([f, n]) => `${f} ${(n / 1024).toFixed(1)}`).join(', ')})`)
    assert.ok(total <= BUDGETS[page], `${page}: ${total} bytes gzip, budget ${BUDGETS[page]}`)
  }
})
