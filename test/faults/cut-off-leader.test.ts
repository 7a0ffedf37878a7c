/**
 * The holder of a leader lock cut off without a word (its host's link down: no FIN, no RST),
 * on a direct connection to PostgreSQL. Before, the server kept the dead session, and the lock
 * with it, until TCP's keepalive with the kernel's defaults gave up: two hours in which no
 * other process could lead. The lock's session now asks the server to probe it (postgres-session
 * .ts); the holder stops believing it leads before the server lets go of the lock (its lease),
 * and another process takes over within seconds. The holder runs in a network namespace of the
 * test's own (cut-off-namespace.ts). Runs in the suite's PostgreSQL pass, as root.
 */
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { join } from 'node:path'
import { after, before, test } from 'node:test'
import { LEASE_MS, LeaderLock } from '../../src/db/leader-lock.ts'
import { PostgresDatabase } from '../../src/db/postgres.ts'
import { ENGINE } from '../helpers.ts'
import { NODE, ROOT, sleep } from '../support/process.ts'
import { createCutOffNamespace, namespaceUnavailableReason, type CutOffNamespace } from './cut-off-namespace.ts'
import { createThrowawayCluster, unavailableReason, type ThrowawayCluster } from './throwaway-postgres.ts'

const skip = ENGINE !== 'postgres' ? 'runs in the PostgreSQL pass (DATABASE_URL set); it makes a cluster of its own'
  : unavailableReason() ?? namespaceUnavailableReason() ?? false

let cluster: ThrowawayCluster | undefined
let namespace: CutOffNamespace | undefined

before(async () => {
  if (skip) return
  namespace = await createCutOffNamespace()
  cluster = await createThrowawayCluster()
  await cluster.listenOn(namespace.hostAddress, namespace.cidr)
})

after(async () => {
  await cluster?.drop()
  await namespace?.remove()
})

/** What the holder reported: JSON lines `{ event: 'held' | 'lost', at }`. */
function events(text: string): Array<{ event: string; at: number }> {
  return text.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as { event: string; at: number })
}

test('a holder cut off without a word: it stops leading within its lease, the server lets the lock go after, another takes over within seconds', { skip }, async (t) => {
  const name = 'cut-off-job'
  const url = `postgres://postgres@${namespace!.hostAddress}:${cluster!.port}/postgres`
  const holder = spawn('ip', ['netns', 'exec', namespace!.name, NODE, join(ROOT, 'test/faults/lock-holder.ts'), url, name],
    { stdio: ['pipe', 'pipe', 'pipe'] })
  let out = ''
  let err = ''
  holder.stdout.setEncoding('utf8').on('data', (chunk: string) => { out += chunk })
  holder.stderr.setEncoding('utf8').on('data', (chunk: string) => { err += chunk })
  const db = new PostgresDatabase(cluster!.url)
  const other = new LeaderLock(db, name)
  try {
    for (let i = 0; !events(out).some((e) => e.event === 'held'); i++) {
      assert.ok(i < 300 && holder.exitCode === null, `the holder never held the lock: ${out} ${err}`)
      await sleep(50)
    }
    assert.equal(await other.acquire(), false, 'one holder at a time')

    await namespace!.cut()
    const cutAt = Date.now()
    let tookOverAt: number | undefined
    while (Date.now() - cutAt < 30_000) {
      if (await other.acquire()) {
        tookOverAt = Date.now()
        break
      }
      await sleep(250)
    }
    const lostAt = events(out).find((e) => e.event === 'lost')?.at
    t.diagnostic(`after the cut: the holder stopped leading at ${lostAt === undefined ? 'never' : `${lostAt - cutAt} ms`}, ` +
      `another process took the lock at ${tookOverAt === undefined ? 'never (30 s)' : `${tookOverAt - cutAt} ms`}`)
    assert.ok(tookOverAt !== undefined, 'the lock stayed with the cut-off holder')
    assert.ok(lostAt !== undefined && lostAt - cutAt <= LEASE_MS + 1000, `the holder kept leading: ${out}`)
    assert.ok(lostAt <= tookOverAt, 'two processes led at once')
  } finally {
    holder.kill('SIGKILL')
    await other.close()
    await db.close()
  }
})
