/**
 * The limits and roles the three nodes hold together (docs/cluster.md, "What holds across
 * nodes"): a key's rate limit is one bucket in Redis wherever its requests land; a key revoked
 * on one node's host is refused by every node within the documented second; the ledger watcher
 * runs on one node at a time and moves when that node dies (kill -9), and expiries are swept
 * once each, also while a node is dead. Root only (`npm run test:cluster`); skipped elsewhere.
 */
import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import { Ed25519Keypair } from '@mysten/sui/keypairs/ed25519'
import { measureRevocation, NODE, sleep } from '../support/process.ts'
import { createApproval, createKey, details, mintToken, randomPhone, readiness, withDatabase } from './support/clients.ts'
import { startCluster, type Cluster } from './support/cluster.ts'
import { baseEnv, type Host } from './support/hosts.ts'
import { nodeMetric, type KnsNode } from './support/kns-nodes.ts'
import { clusterUnavailable } from './support/requirements.ts'
import { waitFor } from './support/wait.ts'

const skip = clusterUnavailable()
let cluster: Cluster
/** PUBLIC_RATE_LIMIT of the nodes: requests a second per client address on the routes without a key. */
const PUBLIC_RATE = 20

before(async () => {
  if (skip !== undefined) return
  // A small public budget, so that one client spends it in seconds.
  cluster = await startCluster({ nodeEnv: { PUBLIC_RATE_LIMIT: String(PUBLIC_RATE) } })
})

after(async () => {
  await cluster?.stop()
})

const nodes = () => cluster.nodes as [KnsNode, KnsNode, KnsNode]
const seconds = (since: number) => (performance.now() - since) / 1000

test('rate limits hold across nodes through Redis: a key of N/s, spread over three nodes, gets N/s (not 3N)', { skip }, async (t) => {
  const RATE = 5
  const BURST = 2 * RATE // docs/api.md: burst 2x rate
  const limited = await createKey(cluster, ['--vendor', 'Rate Ltd', '--scopes', 'approvals', '--rate', String(RATE)])
  const DURATION_MS = 4000
  const started = performance.now()
  const deadline = started + DURATION_MS
  const statuses = await Promise.all(nodes().map(async (node) => {
    const seen: Array<{ status: number; retryAfter: string | null }> = []
    while (performance.now() < deadline) {
      const res = await fetch(`${node.url}/numsys/approval-phone`, {
        method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': limited.key },
        body: JSON.stringify({ phoneNumber: randomPhone() }), signal: AbortSignal.timeout(10_000),
      })
      await res.arrayBuffer()
      seen.push({ status: res.status, retryAfter: res.headers.get('retry-after') })
      await sleep(10)
    }
    return seen
  }))
  const elapsed = seconds(started)
  // Within the limit the body is read and refused (400: no title...); past it, 429 before the body.
  for (const [i, seen] of statuses.entries()) {
    assert.ok(seen.every((s) => s.status === 400 || (s.status === 429 && s.retryAfter !== null)), `kns${i + 1}: ${[...new Set(seen.map((s) => s.status))]}`)
  }
  const accepted = statuses.map((seen) => seen.filter((s) => s.status === 400).length)
  const refused = statuses.map((seen) => seen.filter((s) => s.status === 429).length)
  const total = accepted.reduce((x, y) => x + y, 0)
  // One bucket for the key, wherever it is taken: the burst, and the rate since the first take.
  const bound = Math.floor(BURST + RATE * elapsed) + 1
  t.diagnostic(`accepted ${accepted.join(' + ')} = ${total}, refused ${refused.join(' + ')}, in ${elapsed.toFixed(1)} s; ` +
    `one shared bucket allows at most ${bound}, a bucket per node up to ${3 * bound}`)
  assert.ok(total <= bound, `accepted ${total} > ${bound}: the nodes do not share the key's bucket`)
  assert.ok(total >= BURST, `accepted only ${total}: not even the burst`)
  assert.ok(refused.every((n) => n > 0), `every node refused some once the shared bucket was empty: ${refused}`)
  for (const node of nodes()) assert.equal(await nodeMetric(node, 'kns_rate_limiter_fallback'), 0, `${node.name} decided in process (Redis unreachable)`)
})

test('the public limit follows the client\'s address through HAProxy, over the nodes: a forged X-Forwarded-For changes nothing, another client keeps its own budget', { skip }, async (t) => {
  const BURST = 2 * PUBLIC_RATE
  const register = `${cluster.haproxy.httpUrl}/numsys/register-user-login`
  const DURATION_MS = 4000
  const started = performance.now()
  const deadline = started + DURATION_MS
  const otherClient = sleep(1000).then(() => requestsFrom(cluster.network.host('redis'), register, 5))
  // The test process (10.77.0.1), four requests at a time (about 100 a second), each claiming another address.
  const statuses = (await Promise.all([1, 2, 3, 4].map(async () => {
    const seen: number[] = []
    while (performance.now() < deadline) {
      const forged = `198.51.100.${Math.floor(Math.random() * 250) + 1}`
      const res = await fetch(register, {
        method: 'POST', headers: { 'content-type': 'application/json', 'x-forwarded-for': forged }, body: '{}', signal: AbortSignal.timeout(10_000),
      })
      await res.arrayBuffer()
      seen.push(res.status)
      await sleep(40)
    }
    return seen
  }))).flat()
  // Meanwhile, another client (on the Redis host, 10.77.0.14) through HAProxy too: its own budget.
  const other = await otherClient
  const elapsed = seconds(started)
  assert.ok(statuses.every((status) => status === 400 || status === 429), `${[...new Set(statuses)]}`)
  const accepted = statuses.filter((status) => status === 400).length
  const bound = Math.floor(BURST + PUBLIC_RATE * elapsed) + 1
  t.diagnostic(`the busy client: ${accepted} of ${statuses.length} accepted in ${elapsed.toFixed(1)} s (its budget: at most ${bound}); ` +
    `the other client meanwhile: ${other.join(', ')}`)
  assert.ok(accepted <= bound, `accepted ${accepted} > ${bound}: the forged X-Forwarded-For (or a bucket per node) gave the client more`)
  assert.ok(accepted >= BURST, `accepted only ${accepted}: not even the burst`)
  assert.deepEqual(other, [400, 400, 400, 400, 400], 'the other client is not refused for the busy one\'s requests (HAProxy\'s address is not the key)')
})

test('a key revoked with the CLI on one node\'s host is refused by every node within the documented second', { skip }, async (t) => {
  const key = await createKey(cluster, ['--vendor', 'Revoked Ltd', '--scopes', 'approvals', '--rate', '1000'])
  const timing = await measureRevocation(nodes().map((node) => node.url), key.key,
    () => cluster.kns(['api-key', 'revoke', key.id, '--json'], 'kns2'), randomPhone())
  assert.equal(timing.revoke.code, 0, timing.revoke.stderr)
  t.diagnostic(`401 on kns1 / kns2 / kns3 ${timing.lag.map((ms) => Math.round(ms)).join(' / ')} ms after the CLI returned`)
  for (const [i, node] of nodes().entries()) {
    assert.ok(timing.before[i]!.every((status) => status === 404), `${node.name} accepted the key before: ${timing.before[i]}`)
    assert.ok(timing.lag[i]! <= 1000, `${node.name} refused it ${timing.lag[i]} ms after the CLI returned (docs/api.md: within 1 s)`)
  }
})

test('the ledger watcher runs on one node; killed (kill -9), another takes over within seconds; expiries are swept once, also meanwhile', { skip }, async (t) => {
  const vendor = await createKey(cluster, ['--vendor', 'Watch Ltd', '--scopes', 'approvals', '--rate', '1000'])
  const owner = new Ed25519Keypair()
  const { objectId } = await mintToken(cluster, owner)
  const watcherStates = () => Promise.all(nodes().map(async (node) => (node.process.running() ? (await readiness(node.url)).watcher ?? '' : 'dead')))
  const watchingNode = async (among: KnsNode[]) => {
    const states = await watcherStates()
    const watching = nodes().filter((node, i) => among.includes(node) && states[i]!.startsWith('watching'))
    return watching.length === 1 ? watching[0] : undefined
  }
  const leader = await waitFor('one node watching the ledger', () => watchingNode(nodes()), { timeoutMs: 15_000, diagnostics: async () => (await watcherStates()).join(' | ') })
  const states = await watcherStates()
  for (const [i, node] of nodes().entries()) {
    if (node === leader) continue
    assert.match(states[i]!, /^standby/, `${node.name}: ${states[i]}`)
    assert.equal(await nodeMetric(node, 'kns_ledger_watch_lag_seconds'), -1, `${node.name} does not watch`)
  }
  assert.ok(await nodeMetric(leader, 'kns_ledger_watch_lag_seconds') >= 0)

  // The owner's kns::approve on the embedded ledger (`kns ledger approve`, on a host that is not the
  // watcher's): the watcher alone turns it into the approval, wherever it runs.
  const approvedByWatcher = async (watcher: KnsNode, via: KnsNode) => {
    const ref = await createApproval(via.url, vendor.key, objectId, 'event')
    const counted = await nodeMetric(watcher, 'kns_ledger_watch_events_total', { outcome: 'approved' })
    const approve = await cluster.kns(['ledger', 'approve', '--object-id', objectId, '--ref', ref, '--secret-key', owner.getSecretKey(), '--json'],
      via.name as 'kns1' | 'kns2' | 'kns3')
    assert.equal(approve.code, 0, approve.stderr)
    await waitFor(`${ref} approved by the watcher on ${watcher.name}`, async () => ((await details(via.url, ref)).status === 'approved' ? true : undefined), { timeoutMs: 15_000 })
    assert.equal(await nodeMetric(watcher, 'kns_ledger_watch_events_total', { outcome: 'approved' }), counted + 1, `${watcher.name} applied the event`)
  }
  const other = (...not: KnsNode[]) => nodes().find((node) => !not.includes(node))!
  await approvedByWatcher(leader, other(leader))

  // Approvals that fall due while the watcher's node is dead: the survivors' sweepers expire them.
  // (Made before the kill: what HAProxy sends to a node in the instant it dies is the fault tests' subject.)
  const survivors = nodes().filter((node) => node !== leader)
  const expiring = await Promise.all([1, 2, 3].map(() => createApproval(cluster.haproxy.httpUrl, vendor.key, objectId)))
  const expiredBefore = await Promise.all(survivors.map((node) => nodeMetric(node, 'kns_approvals_expired_total')))
  const killedAt = performance.now()
  leader.process.kill('SIGKILL')
  await withDatabase(cluster, (db) => db.query('UPDATE approvals SET expires_at = $1 WHERE approval_number = ANY($2)', [Date.now() - 1000, expiring]))
  const successor = await waitFor('another node watching the ledger', () => watchingNode(survivors), { timeoutMs: 30_000, diagnostics: async () => (await watcherStates()).join(' | ') })
  const handover = seconds(killedAt)
  await approvedByWatcher(successor, other(leader, successor))
  await waitFor('the due approvals expired', async () => (await withDatabase(cluster, async (db) => (await db.query(
    'SELECT count(*)::int AS n FROM approval_events WHERE type = $1 AND approval_number = ANY($2)', ['approval.expired', expiring])).rows[0].n as number)) === expiring.length ? true : undefined,
  { timeoutMs: 15_000 })
  const expired = (await Promise.all(survivors.map((node) => nodeMetric(node, 'kns_approvals_expired_total')))).map((n, i) => n - expiredBefore[i]!)
  assert.equal(expired.reduce((x, y) => x + y, 0), expiring.length, `each expired once by the survivors: ${expired}`)

  // Back, the killed node stands by: the role stays where it went.
  await leader.start()
  await waitFor(`${leader.name} standing by`, async () => ((await readiness(leader.url)).watcher?.startsWith('standby') === true ? true : undefined), { timeoutMs: 15_000 })
  assert.equal(await watchingNode(nodes()), successor)
  t.diagnostic(`${leader.name} watched; killed, ${successor.name} watched ${handover.toFixed(1)} s later; ` +
    `the approvals that fell due meanwhile were expired by ${survivors.map((n, i) => `${n.name} ${expired[i]}`).join(', ')}`)
})

/** `count` POSTs of `{}` to `url`, one after the other, from `host` (its own address): their statuses. */
async function requestsFrom(host: Host, url: string, count: number): Promise<number[]> {
  const script = `(async () => {
    const statuses = []
    for (let i = 0; i < ${count}; i++) {
      const res = await fetch(process.argv[1], { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' })
      await res.arrayBuffer()
      statuses.push(res.status)
    }
    process.stdout.write(JSON.stringify(statuses))
  })()`
  const result = await host.run(NODE, ['-e', script, url], { env: baseEnv(), timeoutMs: 30_000 })
  assert.equal(result.code, 0, result.stderr)
  return JSON.parse(result.stdout) as number[]
}
