/**
 * The first start's banner, followed as a newcomer would: every command it prints, pasted into
 * a shell in the repository with its placeholders filled in, works, down to the vendor's
 * verify_signature. The same server logs readably (LOG_FORMAT=pretty); by default, with
 * stdout not a terminal, in JSON lines. SQLite only: there is no banner on PostgreSQL.
 */
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { after, test } from 'node:test'
import { logOutput } from '../../src/cli/log-output.ts'
import { ENGINE, freshDatabaseEnv, type TestEnv } from '../helpers.ts'
import { childEnv, collectOutput, killAll, ROOT, startServer } from '../support/process.ts'

let fresh: TestEnv | undefined

after(async () => {
  await killAll()
  await fresh?.cleanup()
})

/** The banner's commands, each one line (continuations joined), in order. */
function bannerCommands(stdout: string): string[] {
  const banner = stdout.slice(stdout.indexOf('First start:'), stdout.indexOf('API reference:'))
  const commands: string[] = []
  let pending = ''
  for (const line of banner.split('\n')) {
    const text = line.trim()
    if (pending === '' && !/^(curl|npx) /.test(text)) continue
    pending += (pending === '' ? '' : '\n') + text
    if (!text.endsWith('\\') && !/[,{]$/.test(text)) {
      commands.push(pending)
      pending = ''
    }
  }
  return commands
}

async function shell(command: string, env: Record<string, string>): Promise<string> {
  const child = spawn('bash', ['-c', command], { cwd: ROOT, env: childEnv(env), stdio: ['ignore', 'pipe', 'pipe'] })
  const result = await collectOutput(child, command.slice(0, 60), 180_000)
  assert.equal(result.code, 0, `${command}\n${result.stdout}\n${result.stderr}`)
  return result.stdout.trim()
}

test('the first start\'s banner: its curl and npx commands, run as printed, approve a request and the vendor verifies it', { skip: ENGINE === 'postgres' ? 'no banner on PostgreSQL' : false, timeout: 900_000 }, async () => {
  fresh = await freshDatabaseEnv({ LOG_LEVEL: 'info', LOG_FORMAT: 'pretty' })
  const server = await startServer(fresh.env, { timeoutMs: 120_000 })
  const commands = bannerCommands(server.stdout())
  assert.deepEqual(commands.map((c) => c.split(' ').slice(0, 4).join(' ').replace(/https?:\/\/\S+/, 'URL')), [
    'curl -s URL -H', 'curl -s URL -H', 'npx kns phone-login send-code', 'npx kns phone-login finish', 'npx kns phone-login sign-approval', 'curl -s URL -H',
  ])
  const [register, approvalPhone, sendCode, finish, signApproval, verify] = commands as [string, string, string, string, string, string]
  // The CLI in the repository with the server's database, as in a second terminal.
  const env = { ...fresh.env, PATH: `${ROOT}/node_modules/.bin:${process.env.PATH ?? ''}` }
  assert.match(await shell(register, env), /"zkAddress":"0x[0-9a-f]{64}"/)
  const approvalNumber = (JSON.parse(await shell(approvalPhone, env)) as { approvalNumber: string }).approvalNumber
  await shell(sendCode, env)
  const code = /to \+14155550100: (\d{6}) is your KNS login code/.exec(server.stdout())?.[1]
  assert.ok(code, `the login code in the server's log:\n${server.stdout().slice(-2000)}`)
  await shell(finish.replace('<the code from this log>', code), env)
  const signature = await shell(signApproval.replace('<approvalNumber>', approvalNumber), env)
  const verdict = JSON.parse(await shell(verify.replaceAll('<approvalNumber>', approvalNumber).replace('<the signature sign-approval printed>', signature), env)) as { success: boolean }
  assert.equal(verdict.success, true)

  // LOG_FORMAT=pretty: readable lines (pino-pretty), no JSON.
  assert.match(server.stdout(), /INFO.*kns ready/)
  assert.doesNotMatch(server.stdout(), /^\{"level":/m)
  await server.stop()
})

test('LOG_FORMAT: auto is pretty on a terminal and JSON elsewhere; json and pretty force it', async () => {
  assert.equal(await logOutput('auto', false), undefined, 'JSON lines: pino\'s own output')
  assert.ok((await logOutput('auto', true))?.stream)
  assert.equal(await logOutput('json', true), undefined)
  assert.ok((await logOutput('pretty', false))?.stream)
})
