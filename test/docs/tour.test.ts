/**
 * The README's tour (docs/tour.sh) run as a newcomer runs it: a fresh server, then the script
 * in the repository with the server's settings. Every step checks its answer, so a doc that
 * drifts from the service fails here.
 */
import assert from 'node:assert/strict'
import { spawn, spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { after, test } from 'node:test'
import { freshDatabaseEnv, type TestEnv } from '../helpers.ts'
import { childEnv, killAll, startServer } from '../support/process.ts'

const ROOT = fileURLToPath(new URL('../..', import.meta.url))
let fresh: TestEnv | undefined

after(async () => {
  await killAll()
  await fresh?.cleanup()
})

function run(command: string, args: string[], env: Record<string, string>): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] })
    let output = ''
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => { output += chunk })
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => { output += chunk })
    const timer = setTimeout(() => child.kill('SIGKILL'), 120_000)
    child.on('error', reject)
    child.on('exit', (code) => {
      clearTimeout(timer)
      resolve({ code, output })
    })
  })
}

/** The tour runs the CLI in the repository, which reads ./.env: a developer's would point it elsewhere. */
function skipReason(): string | undefined {
  if (existsSync(join(ROOT, '.env'))) return 'the repository has a .env, which the tour\'s CLI would read instead of the test server\'s settings'
  for (const tool of ['bash', 'curl']) {
    if (spawnSync(tool, ['--version'], { stdio: 'ignore' }).status !== 0) return `${tool} is not installed`
  }
  return undefined
}

test('docs/tour.sh runs against a fresh server, every step as it expects', { timeout: 150_000, skip: skipReason() ?? false }, async () => {
  fresh = await freshDatabaseEnv()
  const server = await startServer(fresh.env)
  const result = await run('bash', ['docs/tour.sh'], childEnv({ ...fresh.env, KNS_URL: server.url }))
  assert.equal(result.code, 0, result.output)
  assert.match(result.output, /tour: every step answered as expected/)
  // The CLI says which public URL it signed for: the one the server keeps in the database.
  assert.match(result.output, new RegExp(`kns: signed for the service at http://localhost:${server.port} \\(PUBLIC_BASE_URL\\)`))
  await server.stop()
})
