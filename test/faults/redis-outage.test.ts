/**
 * The shared rate limiter's Redis unreachable at start, coming up, killed mid-run, and frozen
 * (SIGSTOP: connected, answering nothing), against a real server process and a redis-server
 * of the test's own (the shared one on 6379 serves other tests). Throughout: no 5xx, no
 * request waiting for Redis, limits enforced in process while Redis is away (never fail-open),
 * shared again once it is back; one warning per switch; /metrics tells which mode is on.
 * Engine-independent: runs in the SQLite pass.
 */
import assert from 'node:assert/strict'
import { spawn, type ChildProcess } from 'node:child_process'
import { existsSync } from 'node:fs'
import { connect } from 'node:net'
import { after, before, test } from 'node:test'
import { Redis } from 'ioredis'
import { openDatabase } from '../../src/db/open.ts'
import { createApiKey } from '../../src/keys/api-keys.ts'
import { ENGINE, freshDatabaseEnv, type TestEnv } from '../helpers.ts'
import { approvalPhoneBody, freePort, killAll, sleep, startServer, type RunningServer } from '../support/process.ts'

const REDIS_SERVER = ['/usr/bin/redis-server', '/usr/local/bin/redis-server'].find((path) => existsSync(path))
const skip = ENGINE !== 'sqlite' ? 'engine-independent: runs in the SQLite pass' : REDIS_SERVER === undefined ? 'redis-server is not installed' : false

/** The key's budget: 5 requests/s, bursts of 10 (BURST_FACTOR 2). */
const RATE = 5
const BURST = 10
const DOWN = 'rate limiter: Redis unreachable; limits are enforced per process until it is back'
const UP = 'rate limiter: Redis reachable again; limits are shared again'

let fresh: TestEnv | undefined
let server: RunningServer
let redisPort: number
let redis: ChildProcess | undefined
/** A key per burst: each starts with a full bucket, in Redis and in process, without waiting for a refill. */
const keys: { id: string; key: string }[] = []
const nextKey = () => keys.shift()!

async function startRedis(): Promise<void> {
  redis = spawn(REDIS_SERVER!, ['--port', String(redisPort), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' })
  const deadline = performance.now() + 5000
  while (!(await accepts(redisPort))) {
    if (performance.now() > deadline) throw new Error(`redis-server did not listen on ${redisPort}`)
    await sleep(20)
  }
}

async function killRedis(): Promise<void> {
  const child = redis
  if (child === undefined || child.exitCode !== null || child.signalCode !== null) return
  const exited = new Promise((resolve) => child.once('exit', resolve))
  child.kill('SIGKILL')
  await exited
}

function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1')
    socket.once('connect', () => { socket.destroy(); resolve(true) })
    socket.once('error', () => resolve(false))
  })
}

before(async () => {
  if (skip) return
  redisPort = await freePort()
  // Redis is not running yet: the server must start all the same.
  fresh = await freshDatabaseEnv({ REDIS_URL: `redis://127.0.0.1:${redisPort}`, LOG_LEVEL: 'warn' })
  server = await startServer(fresh.env) // migrates the new database
  const db = openDatabase(fresh.config)
  try {
    for (let i = 0; i < 8; i++) keys.push(await createApiKey(db, { vendor: 'Redis Test', scopes: ['approvals'], rate: RATE }))
  } finally {
    await db.close()
  }
})

after(async () => {
  redis?.kill('SIGCONT')
  await killRedis()
  await killAll()
  await fresh?.cleanup()
})

interface Burst { statuses: number[]; slowestMs: number }

/** `n` requests at once with `key` (a number without a token: 404 when allowed, 429 when limited). */
async function burst(n: number, key: string): Promise<Burst> {
  const results = await Promise.all(Array.from({ length: n }, async () => {
    const at = performance.now()
    const res = await fetch(`${server.url}/numsys/approval-phone`, {
      method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': key },
      body: JSON.stringify(approvalPhoneBody('+14155550199')), signal: AbortSignal.timeout(10_000),
    })
    await res.arrayBuffer()
    return { status: res.status, ms: performance.now() - at }
  }))
  return { statuses: results.map((r) => r.status), slowestMs: Math.max(...results.map((r) => r.ms)) }
}

const count = (statuses: number[], status: number) => statuses.filter((s) => s === status).length

async function metrics(): Promise<{ fallback: number; allowed: number; limited: number }> {
  const text = await (await fetch(`${server.url}/metrics`)).text()
  const value = (pattern: RegExp) => Number(pattern.exec(text)?.[1] ?? NaN)
  return {
    fallback: value(/^kns_rate_limiter_fallback (\d+)$/m),
    allowed: value(/^kns_rate_limiter_fallback_decisions_total\{result="allowed"\} (\d+)$/m),
    limited: value(/^kns_rate_limiter_fallback_decisions_total\{result="limited"\} (\d+)$/m),
  }
}

async function untilFallback(expected: 0 | 1): Promise<void> {
  const deadline = performance.now() + 5000
  while ((await metrics()).fallback !== expected) {
    if (performance.now() > deadline) throw new Error(`kns_rate_limiter_fallback did not become ${expected}`)
    await sleep(50)
  }
}

/** The limiter's switches as logged by the server (pino JSON lines on stdout), in order. */
function switches(): string[] {
  return server.stdout().split('\n').filter((line) => line.startsWith('{')).map((line) => JSON.parse(line) as { msg: string; level: number })
    .filter((entry) => entry.msg === DOWN || entry.msg === UP).map((entry) => (entry.msg === DOWN ? 'down' : 'up'))
}

/**
 * A burst on a full bucket is answered quickly, without 5xx, and the limit holds: the bucket's
 * worth is allowed, plus what refills while the burst lasts (`extra`).
 */
function assertLimited(result: Burst, label: string, extra = 0): void {
  assert.deepEqual(result.statuses.filter((s) => s !== 404 && s !== 429), [], `${label}: ${result.statuses}`)
  const allowed = count(result.statuses, 404)
  assert.ok(allowed >= BURST && allowed <= BURST + extra, `${label}: allowed ${allowed} of ${result.statuses.length}`)
  assert.ok(result.slowestMs < 1000, `${label}: a request took ${Math.round(result.slowestMs)} ms`)
}

test('Redis unreachable at start: limits enforced per process (not fail-open), one warning, the fallback in /metrics', { skip }, async (t) => {
  const result = await burst(30, nextKey().key)
  t.diagnostic(`Redis never up: ${count(result.statuses, 404)} allowed, ${count(result.statuses, 429)} limited, slowest ${Math.round(result.slowestMs)} ms`)
  assertLimited(result, 'Redis never up')
  const m = await metrics()
  assert.equal(m.fallback, 1)
  assert.ok(m.allowed >= BURST && m.limited >= 30 - BURST, JSON.stringify(m))
  assert.deepEqual(switches(), ['down'])
})

test('Redis comes up: the shared limiter is used again (its bucket is in Redis), one warning', { skip }, async () => {
  await startRedis()
  await untilFallback(0)
  const before = await metrics()
  const { id, key } = nextKey()
  assertLimited(await burst(30, key), 'Redis up')
  const client = new Redis(`redis://127.0.0.1:${redisPort}`)
  try {
    assert.ok(await client.exists(`kns:rl:key:${id}`), 'the bucket is not in Redis')
  } finally {
    client.disconnect()
  }
  const after = await metrics()
  assert.equal(after.allowed + after.limited, before.allowed + before.limited, 'decided in process although Redis was up')
  assert.deepEqual(switches(), ['down', 'up'])
})

test('Redis killed mid-run: no 5xx, nothing waits, in-process limits at once, then shared again when it is back', { skip }, async (t) => {
  // A steady trickle across the kill: every answer must come quickly, none may be a 5xx.
  const trickle: Burst[] = []
  let running = true
  const trickleKey = nextKey().key
  const trickling = (async () => { while (running) { trickle.push(await burst(2, trickleKey)); await sleep(10) } })()
  await sleep(300)
  await killRedis()
  await untilFallback(1)
  await sleep(300)
  running = false
  await trickling
  const all = trickle.flatMap((b) => b.statuses)
  const slowest = Math.max(...trickle.map((b) => b.slowestMs))
  t.diagnostic(`across the kill: ${all.length} requests, ${count(all, 404)} allowed, ${count(all, 429)} limited, slowest ${Math.round(slowest)} ms`)
  assert.deepEqual(all.filter((s) => s !== 404 && s !== 429), [])
  assert.ok(slowest < 1000, `a request took ${Math.round(slowest)} ms`)

  assertLimited(await burst(30, nextKey().key), 'Redis killed')
  assert.deepEqual(switches(), ['down', 'up', 'down'])

  await startRedis()
  await untilFallback(0)
  assert.deepEqual(switches(), ['down', 'up', 'down', 'up'])
})

test('Redis frozen (SIGSTOP): a request waits at most the command timeout, then limits are enforced per process', { skip }, async (t) => {
  redis!.kill('SIGSTOP')
  try {
    const first = await burst(30, nextKey().key)
    await untilFallback(1)
    const second = await burst(30, nextKey().key)
    t.diagnostic(`frozen: first burst slowest ${Math.round(first.slowestMs)} ms (command timeout 250 ms), then ${Math.round(second.slowestMs)} ms`)
    assert.deepEqual(first.statuses.filter((s) => s !== 404 && s !== 429), [], `first burst: ${first.statuses}`)
    assert.ok(first.slowestMs < 1000, `a request took ${Math.round(first.slowestMs)} ms`)
    // Once a second, one request tries Redis again and waits the command timeout, while
    // the bucket refills (RATE/s): a token or two more.
    assertLimited(second, 'Redis frozen', 2)
  } finally {
    redis!.kill('SIGCONT')
  }
  // One request a second tries Redis again; once it answers, the limits are shared again.
  const deadline = performance.now() + 5000
  const probeKey = nextKey().key
  while ((await metrics()).fallback !== 0 && performance.now() < deadline) {
    await burst(1, probeKey)
    await sleep(200)
  }
  assert.equal((await metrics()).fallback, 0)
  assert.deepEqual(switches(), ['down', 'up', 'down', 'up', 'down', 'up'])
})
