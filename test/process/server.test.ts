/**
 * The real server process (`kns serve`): first-start development key, graceful shutdown on
 * SIGTERM with a request in flight, and revocation through the CLI reaching the running server.
 * The tests share one database and run in order: first start, shutdown, second start, revoke.
 */
import assert from 'node:assert/strict'
import { randomInt } from 'node:crypto'
import http from 'node:http'
import { readFile } from 'node:fs/promises'
import { connect } from 'node:net'
import { after, before, test } from 'node:test'
import { SERVER_NODE_FLAGS } from '../../src/cli/node-flags.ts'
import { openDatabase } from '../../src/db/open.ts'
import { createApiKey } from '../../src/keys/api-keys.ts'
import { ENGINE, freshDatabaseEnv, type TestEnv } from '../helpers.ts'
import { approvalPhoneBody, killAll, measureRevocation, postJson, runKns, sleep, startServer, type RunningServer } from '../support/process.ts'

const BANNER = /First start: created a development API key/
const KEY = /kns_[0-9a-f]{16}_[A-Za-z0-9_-]{43}/g

let fresh: TestEnv
let first: RunningServer | undefined
let second: RunningServer | undefined
const phone = `+4420${String(randomInt(0, 100_000_000)).padStart(8, '0')}`
const email = 'process@example.com'
let registered: Record<string, unknown> | undefined

before(async () => {
  // Each start gets a new port: one public URL keeps them the same service (see PUBLIC_BASE_URL).
  fresh = await freshDatabaseEnv({ PUBLIC_BASE_URL: 'https://kns.example.com' })
})

after(async () => {
  await killAll()
  await fresh?.cleanup()
})

test('first start on an empty database prints a development API key once on SQLite (none on PostgreSQL)', async () => {
  first = await startServer(fresh.env)
  await assertServerFlags(first)
  const out = first.stdout()
  if (ENGINE === 'postgres') {
    assert.doesNotMatch(out, BANNER, 'no development key on PostgreSQL')
    assert.doesNotMatch(out, KEY)
    return
  }
  assert.equal(out.match(new RegExp(BANNER, 'g'))?.length, 1, out)
  const keys = new Set(out.match(KEY))
  assert.equal(keys.size, 1, 'one key, shown in the banner and the curl example')
  const [devKey] = [...keys] as [string]
  assert.match(out, new RegExp(`curl -s https://kns\\.example\\.com/numsys/approval-phone .*x-api-key: ${devKey}`))
  assert.doesNotMatch(first.stderr(), KEY, 'the key is never logged')

  // The printed key works: a number without a token is a 404, not a 401.
  const res = await postJson(`${first.url}/numsys/approval-phone`, approvalPhoneBody('+14155550123'), { 'x-api-key': devKey })
  assert.equal(res.status, 404, JSON.stringify(res.body))
})

/** `kns serve` started without the server's V8 flags re-executed itself with them (same pid). */
async function assertServerFlags(server: RunningServer): Promise<void> {
  if (process.platform !== 'linux') return
  const argv = (await readFile(`/proc/${server.child.pid}/cmdline`, 'utf8')).split('\0')
  for (const flag of SERVER_NODE_FLAGS) assert.ok(argv.includes(flag), `${flag} in ${argv.join(' ')}`)
}

/** A brand-new TCP connection to the port: 'connected' or the error code. */
function connectOutcome(port: number): Promise<string> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1')
    socket.once('connect', () => { socket.destroy(); resolve('connected') })
    socket.once('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? err.message))
  })
}

/**
 * POST with `Expect: 100-continue`: the server answers 100 once it has taken the request (headers
 * parsed, route chosen), which makes "a request in flight" deterministic. The body is finished
 * only after SIGTERM. A keep-alive agent, as real clients use, must not hold the shutdown up.
 */
test('SIGTERM with a request in flight: the request completes, the port closes, the process exits 0', async () => {
  assert.ok(first, 'needs the first server')
  const server = first
  const body = JSON.stringify({ email, phoneNumber: phone })
  const agent = new http.Agent({ keepAlive: true })
  let refusedDuringShutdown: string | undefined
  const t0 = performance.now()
  const response = await new Promise<{ status: number; body: string }>((resolve, reject) => {
    const req = http.request(`${server.url}/numsys/register-user-login`, {
      method: 'POST', agent,
      headers: { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)), expect: '100-continue' },
    })
    req.on('continue', () => {
      req.write(body.slice(0, 10))
      server.child.kill('SIGTERM')
      void (async () => {
        // Stop accepting: a new connection is refused while the old request is still open.
        const until = performance.now() + 3000
        while (performance.now() < until && refusedDuringShutdown === undefined) {
          const outcome = await connectOutcome(server.port)
          // ECONNRESET: this probe was queued on the listener at the moment it closed; the next one tells.
          if (outcome === 'connected' || outcome === 'ECONNRESET') await sleep(25)
          else refusedDuringShutdown = outcome
        }
        req.end(body.slice(10))
      })().catch(reject)
    })
    req.on('response', (res) => {
      let text = ''
      res.setEncoding('utf8').on('data', (chunk: string) => { text += chunk }).on('end', () => resolve({ status: res.statusCode!, body: text }))
    })
    req.setTimeout(10_000, () => req.destroy(new Error('the in-flight request got no response')))
    req.on('error', reject)
  })
  assert.equal(refusedDuringShutdown, 'ECONNREFUSED', 'the listening socket is closed once SIGTERM arrives')
  assert.equal(response.status, 200, response.body)
  registered = JSON.parse(response.body) as Record<string, unknown>
  assert.equal(registered.success, true)

  const exit = await Promise.race([server.exited, sleep(8000).then(() => 'timeout' as const)])
  agent.destroy()
  assert.deepEqual(exit, { code: 0, signal: null }, `stderr: ${server.stderr()}`)
  assert.ok(performance.now() - t0 < 8000, 'well within the 10 s grace period')
  assert.equal(await connectOutcome(server.port), 'ECONNREFUSED', 'the port is closed')
})

test('second start prints no key, and the request finished during shutdown was kept', async () => {
  second = await startServer(fresh.env)
  assert.doesNotMatch(second.stdout(), BANNER)
  assert.doesNotMatch(second.stdout(), KEY)
  assert.ok(registered, 'needs the registration made during shutdown')
  const again = await postJson(`${second.url}/numsys/register-user-login`, { email, phoneNumber: phone })
  assert.equal(again.status, 200)
  assert.equal(again.body.userId, registered.userId)
  assert.equal(again.body.zkAddress, registered.zkAddress)
})

test('an API key revoked with `kns api-key revoke` stops working in the running server within 1 s', async (t) => {
  assert.ok(second, 'needs the second server')
  const db = openDatabase(fresh.config)
  let key
  try {
    key = await createApiKey(db, { vendor: 'Revocation Test', scopes: ['approvals'], rate: 100_000 })
  } finally {
    await db.close()
  }
  const timing = await measureRevocation([second.url], key.key,
    () => runKns(['api-key', 'revoke', key.id, '--json'], fresh.env), '+14155550124')
  assert.equal(timing.revoke.code, 0, timing.revoke.stderr)
  t.diagnostic(`401 ${Math.round(timing.lag[0]!)} ms after the CLI returned`)
  assert.ok(timing.before[0]!.every((status) => status === 404), `the key worked before: ${timing.before[0]}`)
  assert.ok(timing.lag[0]! <= 1000, `refused ${timing.lag[0]} ms after the CLI returned`)

  const res = await postJson(`${second.url}/numsys/approval-phone`, approvalPhoneBody('+14155550124'), { 'x-api-key': key.key })
  assert.equal(res.status, 401)
  assert.equal(res.body.code, 'UNAUTHORIZED')
  const exit = await second.stop()
  assert.equal(exit.code, 0, second.stderr())
})
