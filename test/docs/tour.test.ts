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

/**
 * Runs the tour; `answer` is asked for a line to type whenever the tour's output so far ends
 * with a question (a prompt ending in ": "), as a person at the keyboard would.
 */
function run(command: string, args: string[], env: Record<string, string>, answer: (output: string) => Promise<string>): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: ROOT, env, stdio: ['pipe', 'pipe', 'pipe'] })
    let output = ''
    let asked = 0
    const onOutput = (chunk: string) => {
      output += chunk
      const prompts = output.match(/in the server's log \(terminal 1\): $/gm)?.length ?? 0
      if (prompts > asked) {
        asked = prompts
        answer(output).then((line) => child.stdin.write(`${line}\n`), (err: unknown) => { output += `\n(test: ${String(err)})\n`; child.kill() })
      }
    }
    child.stdout.setEncoding('utf8').on('data', onOutput)
    child.stderr.setEncoding('utf8').on('data', onOutput)
    const timer = setTimeout(() => child.kill('SIGKILL'), 480_000)
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

test('docs/tour.sh runs against a fresh server, every step as it expects', { timeout: 600_000, skip: skipReason() ?? false }, async () => {
  fresh = await freshDatabaseEnv()
  // The server logs as it does for a newcomer (warnings and up): the login code is one.
  const server = await startServer({ ...fresh.env, LOG_LEVEL: 'info' }, { timeoutMs: 120_000 })
  // The person at the keyboard reads the code in the server's log (SMS_DELIVERY=log, the default).
  const codeFromLog = async (output: string): Promise<string> => {
    const phone = /The 6-digit code for (\+\d+) in the server's log/.exec(output.slice(output.lastIndexOf('The 6-digit code')))![1]!
    const line = new RegExp(`to \\${phone}: (\\d{6}) is your KNS login code`)
    const deadline = Date.now() + 10_000
    while (Date.now() < deadline) {
      const found = [...server.stdout().matchAll(new RegExp(line, 'g'))].at(-1)
      if (found) return found[1]!
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
    throw new Error(`no login code for ${phone} in the server's log: ${server.stdout().slice(-3000)} ${server.stderr().slice(-2000)}`)
  }
  const result = await run('bash', ['docs/tour.sh'], childEnv({ ...fresh.env, KNS_URL: server.url }), codeFromLog)
  assert.equal(result.code, 0, result.output)
  assert.match(result.output, /tour: every step answered as expected/)
  assert.match(result.output, /the code was accepted: logged in as \+1415555\d{4}, with the zkLogin address its registration gave \(0x[0-9a-f]{64}\)/)
  // Signatures and PASSporTs printed shortened (the zkLogin signature alone is over 1000 characters).
  assert.doesNotMatch(result.output, /[A-Za-z0-9_+/=-]{100}/)
  // The owner approved as the registered number's own zkAddress, with no wallet.
  const zkAddress = /"zkAddress":"(0x[0-9a-f]{64})"/.exec(result.output)![1]!
  assert.match(result.output, new RegExp(`"approved":true,"method":"sign".*"phoneLogin":true.*"wallet":"${zkAddress}"`))
  await server.stop()
})

test('without a server: the tour says how to point it at one, in one message, without a stack trace', { skip: skipReason() ?? false }, async () => {
  const env = await freshDatabaseEnv()
  try {
    const result = await run('bash', ['docs/tour.sh'], childEnv({ ...env.env, KNS_URL: 'http://127.0.0.1:9' }), async () => '')
    assert.equal(result.code, 1)
    assert.match(result.output, /no KNS server answers at http:\/\/127\.0\.0\.1:9\. Start one in another terminal \(npm start\), or point the tour at yours:\n  KNS_URL=/)
    assert.doesNotMatch(result.output, /^\s+at /m, 'no stack trace')
  } finally {
    await env.cleanup()
  }
})
