/**
 * docs/shaken-tour.sh (the README's SHAKEN walkthrough) run against a fresh server started as
 * its header says (X5U_ALLOW_HTTP, X5U_ALLOW_PRIVATE: the x5u is the server's own local URL).
 */
import assert from 'node:assert/strict'
import { spawn, spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { after, test } from 'node:test'
import { freshDatabaseEnv, type TestEnv } from '../helpers.ts'
import { childEnv, killAll, ROOT, startServer } from '../support/process.ts'

let fresh: TestEnv | undefined

after(async () => {
  await killAll()
  await fresh?.cleanup()
})

function skipReason(): string | undefined {
  if (existsSync(join(ROOT, '.env'))) return 'the repository has a .env, which the tour\'s CLI would read instead of the test server\'s settings'
  for (const [tool, flag] of [['bash', '--version'], ['curl', '--version'], ['openssl', 'version']] as const) {
    if (spawnSync(tool, [flag], { stdio: 'ignore' }).status !== 0) return `${tool} is not installed`
  }
  return undefined
}

test('docs/shaken-tour.sh: trust, credential, sign, verify, every step as it expects', { timeout: 150_000, skip: skipReason() ?? false }, async () => {
  fresh = await freshDatabaseEnv({ X5U_ALLOW_HTTP: 'true', X5U_ALLOW_PRIVATE: 'true' })
  const server = await startServer(fresh.env)
  const result = await new Promise<{ code: number | null; output: string }>((resolve, reject) => {
    const child = spawn('bash', ['docs/shaken-tour.sh'], { cwd: ROOT, env: childEnv({ ...fresh!.env, KNS_URL: server.url }), stdio: ['ignore', 'pipe', 'pipe'] })
    let output = ''
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => { output += chunk })
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => { output += chunk })
    const timer = setTimeout(() => child.kill('SIGKILL'), 120_000)
    child.on('error', reject)
    child.on('exit', (code) => { clearTimeout(timer); resolve({ code, output }) })
  })
  assert.equal(result.code, 0, result.output)
  assert.match(result.output, /shaken tour: every step answered as expected/)
  await server.stop()
})
