import { test } from 'node:test'
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { availableParallelism } from 'node:os'
import { fileURLToPath } from 'node:url'

const MAIN = fileURLToPath(new URL('../../src/cli/main.ts', import.meta.url))

/** Imports the CLI entry (as `kns serve` does), uses the pool, and counts libuv's worker threads. */
function poolThreads(env: Record<string, string>): Promise<number> {
  const script = `
    await import(${JSON.stringify(MAIN)})
    await crypto.subtle.digest('SHA-256', new Uint8Array(8))
    const { readdirSync, readFileSync } = await import('node:fs')
    const names = readdirSync('/proc/self/task').map((t) => readFileSync('/proc/self/task/' + t + '/comm', 'utf8').trim())
    console.log(names.filter((n) => n.startsWith('libuv-worker')).length)`
  return new Promise((resolve, reject) => {
    execFile(process.execPath, ['--no-warnings', '--input-type=module', '-e', script], { env: { PATH: process.env.PATH ?? '', ...env }, timeout: 30_000 },
      (err, stdout, stderr) => (err ? reject(new Error(`${err.message}\n${stderr}`)) : resolve(Number(stdout.trim()))))
  })
}

test('the thread pool has cores - 1 threads (at least 1) unless UV_THREADPOOL_SIZE says otherwise', { skip: process.platform !== 'linux' }, async () => {
  assert.equal(await poolThreads({}), Math.max(1, availableParallelism() - 1))
  assert.equal(await poolThreads({ UV_THREADPOOL_SIZE: '3' }), 3)
})
