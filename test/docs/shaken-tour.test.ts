/**
 * docs/shaken-tour.sh (the README's SHAKEN walkthrough) run as its header says: a fresh server
 * started with X5U_ALLOW_HTTP and X5U_ALLOW_PRIVATE (the x5u is the server's own local URL), the
 * tour in another environment without them and with only the server's PORT. It passes, and
 * leaves nothing behind: the trust anchors, API keys (with their signing bindings) and
 * credentials are as before, after a run that passes and after one that stops at a step.
 */
import assert from 'node:assert/strict'
import { spawn, spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { after, test } from 'node:test'
import { freshDatabaseEnv, type TestEnv } from '../helpers.ts'
import { childEnv, killAll, oneJson, ROOT, runKns, startServer } from '../support/process.ts'

const envs: TestEnv[] = []

after(async () => {
  await killAll()
  for (const env of envs) await env.cleanup()
})

function skipReason(): string | undefined {
  if (existsSync(join(ROOT, '.env'))) return 'the repository has a .env, which the tour\'s CLI would read instead of the test server\'s settings'
  for (const [tool, flag] of [['bash', '--version'], ['curl', '--version'], ['openssl', 'version']] as const) {
    if (spawnSync(tool, [flag], { stdio: 'ignore' }).status !== 0) return `${tool} is not installed`
  }
  return undefined
}

function runTour(env: Record<string, string>): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn('bash', ['docs/shaken-tour.sh'], { cwd: ROOT, env: childEnv(env), stdio: ['ignore', 'pipe', 'pipe'] })
    let output = ''
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => { output += chunk })
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => { output += chunk })
    const timer = setTimeout(() => child.kill('SIGKILL'), 480_000)
    child.on('error', reject)
    child.on('exit', (code) => { clearTimeout(timer); resolve({ code, output }) })
  })
}

/** What a tour could leave behind, as the CLI lists it: trust anchors, API keys with their bindings, signing credentials. */
async function leftovers(env: Record<string, string>): Promise<unknown> {
  const list = async (args: string[]) => oneJson(await runKns([...args, '--json'], env, { timeoutMs: 120_000 }))
  return { anchors: (await list(['shaken', 'trust', 'list'])).anchors, keys: (await list(['api-key', 'list'])).keys, credentials: (await list(['shaken', 'credential', 'list'])).credentials }
}

/** The tour's environment: the server's database, not its X5U_ variables, its PORT and not KNS_URL. */
function tourEnv(serverEnv: Record<string, string>, port: number): Record<string, string> {
  const { X5U_ALLOW_HTTP: _http, X5U_ALLOW_PRIVATE: _private, ...rest } = serverEnv
  return { ...rest, PORT: String(port) }
}

test('docs/shaken-tour.sh as its header says: every step as it expects, and nothing left behind', { timeout: 600_000, skip: skipReason() ?? false }, async () => {
  const fresh = await freshDatabaseEnv({ X5U_ALLOW_HTTP: 'true', X5U_ALLOW_PRIVATE: 'true' })
  envs.push(fresh)
  const server = await startServer(fresh.env, { timeoutMs: 120_000 })
  const env = tourEnv(fresh.env, server.port)
  const before = await leftovers(env)
  const result = await runTour(env)
  assert.equal(result.code, 0, result.output)
  assert.match(result.output, /shaken tour: every step answered as expected/)
  assert.match(result.output, /trusted the Tour STI Root: [0-9a-f]{64}/)
  // Signatures shortened in what the tour prints: no Identity header in full.
  assert.doesNotMatch(result.output, /[A-Za-z0-9_-]{200}/)
  assert.deepEqual(await leftovers(env), before)
  await server.stop()
})

test('a tour that stops at a step (a server without X5U_ALLOW_*: the x5u refused) removes what it had added', { timeout: 600_000, skip: skipReason() ?? false }, async () => {
  const fresh = await freshDatabaseEnv()
  envs.push(fresh)
  const server = await startServer(fresh.env, { timeoutMs: 120_000 })
  // The CLI has the variables the server lacks: it judges by the server's.
  const env = { ...tourEnv(fresh.env, server.port), X5U_ALLOW_HTTP: 'true', X5U_ALLOW_PRIVATE: 'true' }
  const before = await leftovers(env)
  const result = await runTour(env)
  assert.equal(result.code, 2, result.output) // the CLI's exit code for refused input
  assert.match(result.output, /trusted the Tour STI Root/)
  assert.match(result.output, /x5u: only https URLs are allowed \(a server started with X5U_ALLOW_HTTP=true allows it, for development\)/)
  assert.match(result.output, /shaken tour: stopped \(exit 2\); what it had added is removed/)
  assert.doesNotMatch(result.output, /could not undo/)
  assert.deepEqual(await leftovers(env), before)
  await server.stop()
})

test('without a server: says how to start one for this tour, exits 1, adds nothing', { skip: skipReason() ?? false }, async () => {
  const fresh = await freshDatabaseEnv()
  envs.push(fresh)
  const result = await runTour({ ...fresh.env, PORT: '9' })
  assert.equal(result.code, 1, result.output)
  assert.match(result.output, /no KNS server answers at http:\/\/localhost:9\. Start one in another terminal \(X5U_ALLOW_HTTP=true X5U_ALLOW_PRIVATE=true npm start\)/)
  assert.doesNotMatch(result.output, /^== /m, 'no step ran')
})
