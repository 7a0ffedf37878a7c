/**
 * `kns serve --workers N` (issue "Production under pressure", all cores): N processes on one
 * port, on PostgreSQL; one that dies is replaced while the others serve; SIGTERM stops them
 * all. On SQLite it is refused with what to do instead.
 */
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { after, test } from 'node:test'
import { freshDatabaseEnv, type TestEnv } from '../helpers.ts'
import { killAll, runKns, sleep, startServer } from '../support/process.ts'

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

  process.kill(workers[0]!, 'SIGKILL')
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

test('--workers 2 on the embedded SQLite database: refused, saying why and what to do', { skip: process.env.DATABASE_URL ? 'the SQLite case' : false }, async () => {
  const fresh = await freshDatabaseEnv()
  envs.push(fresh)
  const result = await runKns(['serve', '--workers', '2'], fresh.env)
  assert.notEqual(result.code, 0)
  assert.match(result.stderr, /--workers 2 needs PostgreSQL \(DATABASE_URL\): the embedded SQLite database has one writer/)
  const bad = await runKns(['serve', '--workers', 'many'], fresh.env)
  assert.match(bad.stderr, /--workers \/ WORKERS must be a whole number from 1 to 256, or auto/)
})
