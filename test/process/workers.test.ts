/**
 * `kns serve --workers N` (issue "Production under pressure", all cores): N processes on one
 * port, on PostgreSQL; one that dies is replaced while the others serve; SIGTERM stops them
 * all. On SQLite it is refused with what to do instead.
 */
import assert from 'node:assert/strict'
import { readdirSync, readFileSync, readlinkSync } from 'node:fs'
import { Agent, request } from 'node:http'
import { after, test } from 'node:test'
import { freshDatabaseEnv, type TestEnv } from '../helpers.ts'
import { freePort, killAll, runKns, sleep, startServer } from '../support/process.ts'
import { sipOptionsOverUdp } from '../support/sip-options.ts'

const envs: TestEnv[] = []
after(async () => {
  await killAll()
  for (const e of envs) await e.cleanup()
})

/** The pids of a process's children (Linux). */
function childrenOf(pid: number): number[] {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number)
  } catch {
    return []
  }
}

/** How many established TCP connections to local `port` each of `pids` holds (Linux /proc). */
function connectionsPerProcess(port: number, pids: number[]): number[] {
  const established = new Set<string>()
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    for (const line of readFileSync(table, 'utf8').split('\n').slice(1)) {
      const fields = line.trim().split(/\s+/)
      if (fields.length > 9 && parseInt(fields[1]!.split(':')[1]!, 16) === port && fields[3] === '01') established.add(fields[9]!)
    }
  }
  return pids.map((pid) => readdirSync(`/proc/${pid}/fd`).filter((fd) => {
    try {
      return established.has(/^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`))?.[1] ?? '')
    } catch {
      return false
    }
  }).length)
}

/**
 * One request on a connection of its own: its status, the socket error's code, or `unanswered`
 * when nothing came back within 15 s (a connection that nobody serves nor closes).
 */
function onFreshConnection(url: string): Promise<string> {
  return new Promise((resolve) => {
    const req = request(url, { headers: { connection: 'close' }, timeout: 15_000 }, (res) => {
      res.resume()
      res.on('end', () => resolve(String(res.statusCode)))
    })
    req.on('timeout', () => { req.destroy(); resolve('unanswered') })
    req.on('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? 'error'))
    req.end()
  })
}

test('--workers 2 on PostgreSQL: two processes serve one port; a killed one is replaced; SIGTERM stops all', { skip: process.env.DATABASE_URL ? false : 'PostgreSQL only (the SQLite pass checks the refusal)' }, async () => {
  const fresh = await freshDatabaseEnv()
  envs.push(fresh)
  const server = await startServer(fresh.env, { args: ['--workers', '2'], timeoutMs: 60_000 })
  // Both workers listening (the primary says so for each).
  const listening = () => (server.stdout().match(/"msg":"worker listening"/g) ?? []).length
  const deadline = Date.now() + 30_000
  while (listening() < 2 && Date.now() < deadline) await sleep(100)
  assert.equal(listening(), 2, server.stdout())
  const workers = childrenOf(server.child.pid!)
  assert.equal(workers.length, 2, 'two workers')
  for (let i = 0; i < 20; i++) assert.equal((await fetch(`${server.url}/readyz`)).status, 200)

  // Connections opened while the worker dies (40 clients, each a new connection per request,
  // from before the kill to a second after it): every one is answered by the other worker, or
  // at worst reset; none is left open with no one to serve it (node:cluster's round-robin
  // hand-off to a worker that had just died did that to a few in a thousand).
  const outcomes: string[] = []
  let killedAt = 0
  const client = async () => {
    while (killedAt === 0 || Date.now() - killedAt < 1000) outcomes.push(await onFreshConnection(`${server.url}/healthz`))
  }
  const clients = Array.from({ length: 40 }, client)
  await sleep(300)
  process.kill(workers[0]!, 'SIGKILL')
  killedAt = Date.now()
  await Promise.all(clients)
  const unanswered = outcomes.filter((outcome) => outcome === 'unanswered').length
  assert.equal(unanswered, 0, `${unanswered} of ${outcomes.length} connections unanswered`)
  assert.ok(outcomes.filter((outcome) => outcome === '200').length > outcomes.length / 2, outcomes.join(' '))

  // The other keeps serving while the primary starts a replacement (a kept-alive connection to
  // the killed one is reset: a client tries again on a new one, as any client of a server that died).
  const again = async (url: string) => {
    try { return await fetch(url) } catch { return fetch(url, { headers: { connection: 'close' } }) }
  }
  assert.equal((await again(`${server.url}/healthz`)).status, 200)
  const back = Date.now() + 20_000
  let now: number[] = []
  while (Date.now() < back) {
    now = childrenOf(server.child.pid!)
    if (now.length === 2 && !now.includes(workers[0]!) && listening() >= 3) break
    await sleep(100)
  }
  assert.equal(now.length, 2, 'a replacement was started')
  assert.ok(!now.includes(workers[0]!))

  const exit = await server.stop(20_000)
  assert.equal(exit.code, 0, `exit ${JSON.stringify(exit)}`)
  for (const pid of now) assert.throws(() => process.kill(pid, 0), 'the workers are gone too')
})

test('--workers 2: each worker listens on its own socket (HTTP and SIP), so kept-alive connections are spread over both; /metrics adds up both', { skip: process.env.DATABASE_URL ? false : 'PostgreSQL only' }, async () => {
  const fresh = await freshDatabaseEnv()
  envs.push(fresh)
  const sipPort = await freePort()
  const server = await startServer({ ...fresh.env, LOG_LEVEL: 'info', SIP_LISTEN: `127.0.0.1:${sipPort}`, SIP_TRUSTED_SOURCES: '127.0.0.1' }, { args: ['--workers', '2'], timeoutMs: 60_000 })
  const deadline = Date.now() + 30_000
  while ((server.stdout().match(/"msg":"worker listening"/g) ?? []).length < 2 && Date.now() < deadline) await sleep(100)
  const workers = childrenOf(server.child.pid!)
  assert.equal(workers.length, 2)
  // 32 connections opened at once, as a proxy's pool: on one shared socket the first worker to
  // wake took 31 of them; hashed over two sockets, each gets 16 give or take (fewer than 4 on
  // either: about 1 run in 200 000).
  const agent = new Agent({ keepAlive: true, maxSockets: 32 })
  const get = () => new Promise<number>((resolve, reject) => {
    request(`${server.url}/healthz`, { agent }, (res) => { res.resume(); res.on('end', () => resolve(res.statusCode!)) }).on('error', reject).end()
  })
  assert.deepEqual(new Set(await Promise.all(Array.from({ length: 32 }, get))), new Set([200]))
  const spread = connectionsPerProcess(server.port, workers)
  agent.destroy()
  assert.ok(spread[0]! + spread[1]! >= 32, `per worker: ${spread}`) // and startServer's own, kept alive
  assert.ok(Math.min(...spread) >= 4, `per worker: ${spread}`)
  // /metrics, whichever worker is scraped (a new connection each time): both workers' series
  // added up, so the 32 requests above count whole and a counter never goes back.
  let before = 0
  for (let scrape = 0; scrape < 6; scrape++) {
    const text = await (await fetch(`${server.url}/metrics`, { headers: { connection: 'close' } })).text()
    assert.match(text, /^kns_workers 2$/m)
    assert.match(text, /^kns_workers_reporting 2$/m)
    const served = Number(/^kns_http_request_duration_seconds_count\{method="GET",route="\/healthz",status="200"\} (\d+)$/m.exec(text)?.[1])
    assert.ok(served >= 32 && served >= before, `healthz count ${served} after ${before}`)
    before = served
    // A figure every worker reads alike is not added up: the watcher's lag is its own (a second
    // or less here), not that minus the other's -1.
    const lag = Number(/^kns_ledger_watch_lag_seconds (\S+)$/m.exec(text)?.[1])
    assert.ok(lag === -1 || lag >= 0, `lag ${lag}: summed?`)
  }
  // SIP on the same port in both workers: every SBC address is answered.
  const answers = await Promise.all(Array.from({ length: 20 }, async (_, n) =>
    (await sipOptionsOverUdp(sipPort, { callId: `workers-${n}`, timeoutMs: 2000 }))?.split('\r\n')[0]))
  assert.deepEqual(answers, Array(20).fill('SIP/2.0 200 OK'))
  assert.equal((server.stdout().match(/SIP redirect interface listening/g) ?? []).length, 2)
  // A second pool on the same port would share it by SO_REUSEPORT and take half the traffic:
  // refused at its start, naming the port. (Its SIP port too, with the HTTP one free.)
  const second = await runKns(['serve', '--workers', '2'], { ...fresh.env, HOST: '127.0.0.1', PORT: String(server.port) })
  assert.equal(second.code, 1, second.stderr)
  assert.match(second.stderr, new RegExp(`PORT: 127\\.0\\.0\\.1:${server.port} is in use \\(another kns serve\\?\\)`))
  const secondSip = await runKns(['serve', '--workers', '2'], { ...fresh.env, HOST: '127.0.0.1', PORT: String(await freePort()), SIP_LISTEN: `127.0.0.1:${sipPort}`, SIP_TRUSTED_SOURCES: '127.0.0.1' })
  assert.match(secondSip.stderr, new RegExp(`SIP_LISTEN \\(TCP\\): 127\\.0\\.0\\.1:${sipPort} is in use`))
  // A worker that does not answer (stopped) is left out of the sum after 2 s, and said to be:
  // the scrape is not held hostage by it. (A connection hashed to the stopped one waits: tried again.)
  process.kill(workers[1]!, 'SIGSTOP')
  try {
    let text = ''
    for (let attempt = 0; attempt < 20 && text === ''; attempt++) {
      text = await fetch(`${server.url}/metrics`, { headers: { connection: 'close' }, signal: AbortSignal.timeout(3500) }).then((r) => r.text(), () => '')
    }
    assert.match(text, /^kns_workers 2$/m)
    assert.match(text, /^kns_workers_reporting 1$/m)
  } finally {
    process.kill(workers[1]!, 'SIGCONT')
  }
  assert.equal((await server.stop(20_000)).code, 0)
})

test('--workers 2 on the embedded SQLite database: refused, saying why and what to do', { skip: process.env.DATABASE_URL ? 'the SQLite case' : false }, async () => {
  const fresh = await freshDatabaseEnv()
  envs.push(fresh)
  const result = await runKns(['serve', '--workers', '2'], fresh.env)
  assert.notEqual(result.code, 0)
  assert.match(result.stderr, /--workers 2 needs PostgreSQL \(DATABASE_URL\): the embedded SQLite database has one writer/)
  const bad = await runKns(['serve', '--workers', 'many'], fresh.env)
  assert.match(bad.stderr, /--workers \/ WORKERS must be a whole number from 1 to 256, or auto/)
})
