/**
 * The cluster's database as operators run it beyond one host (docs/cluster.md, "PgBouncer and
 * backups on the cluster"): PgBouncer in transaction mode on the load balancer's host, in front
 * of HAProxy's PostgreSQL primary, serving a fourth `kns serve` whose LISTEN and leader locks go
 * directly through HAProxy (DATABASE_DIRECT_URL), and refused without it; and a pg_dump of the
 * running cluster, taken through HAProxy while approvals are created, restored on a fresh
 * PostgreSQL and served by KNS with the cluster's KNS_SECRET, answering as the cluster did.
 * Root only (`npm run test:cluster`); skipped elsewhere, saying why.
 */
import assert from 'node:assert/strict'
import { existsSync, mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { after, before, test } from 'node:test'
import { Ed25519Keypair } from '@mysten/sui/keypairs/ed25519'
import pg from 'pg'
import { pgbouncerClients } from '../faults/throwaway-pgbouncer.ts'
import { createThrowawayCluster, unavailableReason as throwawayUnavailable, type ThrowawayCluster } from '../faults/throwaway-postgres.ts'
import { createEmptyDatabase, postgresToolsUnavailable, restoreBackup, takeBackup } from '../support/backup.ts'
import { postJson, sleep, startServer, type RunningServer } from '../support/process.ts'
import { approveAt, cancelAt, createApproval, createKey, details, mintToken, randomPhone } from './support/clients.ts'
import { startCluster, type Cluster } from './support/cluster.ts'
import { chownTree, type Host, type HostProcess } from './support/hosts.ts'
import { runKnsOn, startKnsNode, type KnsNode } from './support/kns-nodes.ts'
import { clusterUnavailable } from './support/requirements.ts'
import { waitFor } from './support/wait.ts'

const PGBOUNCER = '/usr/sbin/pgbouncer'
const PGBOUNCER_PORT = 6432
const skip = clusterUnavailable() ?? (existsSync(PGBOUNCER) ? undefined : `${PGBOUNCER} not installed (Debian's pgbouncer)`) ??
  postgresToolsUnavailable() ?? throwawayUnavailable()
let cluster: Cluster

before(async () => {
  if (skip !== undefined) return
  cluster = await startCluster()
})

after(async () => {
  await cluster?.stop()
})

/**
 * PgBouncer 1.18 on `host`, as the postgres user (it refuses root), pooling transactions of the
 * kns role to HAProxy's PostgreSQL primary. It keeps the kns password in its auth file (it logs
 * in to PostgreSQL with it) and drops the async pool's `options`, which it cannot pass on.
 * Started through the host, it is stopped with the cluster.
 */
async function startPgbouncer(host: Host): Promise<{ process: HostProcess; url: string; adminUrl: string }> {
  const dir = join(host.dir, 'pgbouncer')
  mkdirSync(dir, { recursive: true })
  const password = cluster.secrets.knsDatabasePassword
  const primary = new URL(cluster.databaseUrl)
  writeFileSync(join(dir, 'userlist.txt'), `"kns" "${password}"\n`, { mode: 0o600 })
  writeFileSync(join(dir, 'pgbouncer.ini'), [
    '[databases]',
    `kns = host=${primary.hostname} port=${primary.port} dbname=kns`,
    '[pgbouncer]',
    `listen_addr = ${host.address}`,
    `listen_port = ${PGBOUNCER_PORT}`,
    'unix_socket_dir =',
    'auth_type = md5',
    `auth_file = ${join(dir, 'userlist.txt')}`,
    'pool_mode = transaction',
    'default_pool_size = 10',
    'max_client_conn = 200',
    'admin_users = kns',
    'ignore_startup_parameters = extra_float_digits, options',
    '',
  ].join('\n'))
  chownTree(dir, 'postgres')
  const bouncer = host.spawn('pgbouncer', PGBOUNCER, [join(dir, 'pgbouncer.ini')], { user: 'postgres' })
  const url = `postgres://kns:${password}@${host.address}:${PGBOUNCER_PORT}/kns`
  const adminUrl = `postgres://kns:${password}@${host.address}:${PGBOUNCER_PORT}/pgbouncer`
  await waitFor('PgBouncer', async () => {
    const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2000 })
    await client.connect()
    try {
      await client.query('SELECT 1')
      return true
    } finally {
      await client.end()
    }
  }, { timeoutMs: 20_000, processes: [bouncer] })
  return { process: bouncer, url, adminUrl }
}

/** A node's environment for another host: its own DATA_DIR there, the rest as the cluster's nodes have it. */
function envOn(host: Host, changes: Record<string, string>): Record<string, string> {
  const dataDir = join(host.dir, 'kns')
  mkdirSync(dataDir, { recursive: true })
  chownTree(dataDir, cluster.app.user)
  return { ...cluster.nodes[0]!.env, DATA_DIR: dataDir, ...changes }
}

async function register(url: string, phoneNumber: string, email: string): Promise<{ userId: string; zkAddress: string }> {
  const registered = await postJson(`${url}/numsys/register-user-login`, { email, phoneNumber })
  assert.equal(registered.status, 200, JSON.stringify(registered.body))
  return { userId: String(registered.body.userId), zkAddress: String(registered.body.zkAddress) }
}

test('PgBouncer in transaction mode in front of the cluster\'s primary: refused without DATABASE_DIRECT_URL; with it, a node registers, approves, and a wait on it is released by a decision on another node', { skip }, async (t) => {
  const bouncer = await startPgbouncer(cluster.network.host('lb'))
  // A fourth node, on a host of its own (the Redis host: no node runs there).
  const host = cluster.network.host('redis')

  const refused = await runKnsOn(cluster.app, host, envOn(host, { DATABASE_URL: bouncer.url }), ['serve'], 60_000)
  assert.notEqual(refused.code, 0, `kns serve through PgBouncer without DATABASE_DIRECT_URL started:\n${refused.stdout}${refused.stderr}`)
  assert.match(refused.stderr, /DATABASE_DIRECT_URL/)
  t.diagnostic(`without DATABASE_DIRECT_URL: exit ${refused.code}, ${refused.stderr.trim().split('\n')[0]}`)

  const pooled: KnsNode = await startKnsNode(cluster.app, 'kns-pooled', host,
    envOn(host, { DATABASE_URL: bouncer.url, DATABASE_DIRECT_URL: cluster.databaseUrl }))
  const [kns1, kns2] = cluster.nodes as [KnsNode, KnsNode, KnsNode]

  // A registration on the pooled node is the cluster's: the same user on another node.
  const phoneNumber = randomPhone()
  const registered = await register(pooled.url, phoneNumber, 'pooled@example.com')
  assert.deepEqual(await register(kns2.url, phoneNumber, 'again@example.com'), registered)

  // An approval created and approved on the pooled node, seen approved on another.
  const key = await createKey(cluster, ['--vendor', 'Pooled Ltd', '--scopes', 'approvals', '--rate', '1000'])
  const owner = new Ed25519Keypair()
  const { objectId } = await mintToken(cluster, owner)
  const approved = await createApproval(pooled.url, key.key, objectId)
  await approveAt(pooled.url, approved, owner)
  assert.equal((await details(kns2.url, approved)).status, 'approved')

  // A wait held on the pooled node, released by a decision on kns1: heard through LISTEN on the direct connection.
  const ref = await createApproval(pooled.url, key.key, objectId)
  const waiting = fetch(`${pooled.url}/numsys/transaction_details?ref=${ref}&wait=20`, { signal: AbortSignal.timeout(30_000) })
  const early = await Promise.race([waiting.then(() => 'answered'), sleep(500).then(() => 'held')])
  assert.equal(early, 'held', 'the wait on a pending approval answered before any decision')
  const decided = performance.now()
  await cancelAt(kns1.url, ref)
  const answer = (await (await waiting).json()) as Record<string, unknown>
  const releasedMs = performance.now() - decided
  // Unheard, the wait would end at 20 s with the approval still pending.
  assert.equal(answer.status, 'cancelled')
  t.diagnostic(`a wait held 500 ms on the pooled node answered ${Math.round(releasedMs)} ms after the decision on kns1 was sent`)

  // Pooled through PgBouncer: the service's pool; never the LISTEN or a leader lock.
  const clients = await pgbouncerClients(bouncer.adminUrl)
  assert.ok(clients.includes('kns'), `PgBouncer's clients: ${clients.join(', ')}`)
  assert.ok(!clients.some((name) => name === 'kns-listen' || name.startsWith('kns-ledger')), `sessions through PgBouncer: ${clients.join(', ')}`)
  t.diagnostic(`PgBouncer's clients of kns: ${clients.join(', ')}`)
  await pooled.process.stop()
  await bouncer.process.stop()
})

test('a pg_dump of the running cluster, taken through HAProxy while approvals are made, restored on a fresh PostgreSQL, answers as the cluster did', { skip }, async (t) => {
  const lb = cluster.haproxy.httpUrl
  const key = await createKey(cluster, ['--vendor', 'Backup Ltd', '--scopes', 'approvals', '--rate', '1000'])
  const owner = new Ed25519Keypair()
  const { objectId } = await mintToken(cluster, owner)
  const phoneNumber = randomPhone()
  const registered = await register(lb, phoneNumber, 'backup@example.com')
  const approved = await createApproval(lb, key.key, objectId)
  await approveAt(lb, approved, owner)
  const pending = await createApproval(lb, key.key, objectId)
  const before = { approved: await details(lb, approved), pending: await details(lb, pending) }
  assert.deepEqual([before.approved.status, before.pending.status], ['approved', 'pending'])

  // Approvals go on through HAProxy, two at a time, from before the backup starts until after it ends.
  let writing = true
  const made: Array<{ sent: number; answered: number; ref?: string; error?: string }> = []
  const writer = async () => {
    while (writing) {
      const sent = performance.now()
      try {
        const ref = await createApproval(lb, key.key, objectId)
        made.push({ sent, answered: performance.now(), ref })
      } catch (err) {
        made.push({ sent, answered: performance.now(), error: (err as Error).message })
      }
    }
  }
  const writers = [writer(), writer()]
  let backup: Awaited<ReturnType<typeof takeBackup>>
  try {
    while (made.length < 4) await sleep(20)
    backup = await takeBackup(cluster.databaseUrl, cluster.network.runDir)
  } finally {
    writing = false
    await Promise.all(writers)
  }
  const overlapping = made.filter((m) => m.sent < backup.finishedAt && m.answered > backup.startedAt)
  t.diagnostic(`pg_dump through HAProxy: ${backup.bytes} bytes, ${Math.round(backup.ms)} ms; ${made.length} approvals made meanwhile, ${overlapping.length} in flight during the dump`)
  assert.deepEqual(made.filter((m) => m.error !== undefined).map((m) => m.error).slice(0, 3), [])
  assert.ok(overlapping.length > 0, 'no approval was in flight while the dump ran')

  let postgres: ThrowawayCluster | undefined
  let restored: RunningServer | undefined
  try {
    postgres = await createThrowawayCluster()
    const databaseUrl = await createEmptyDatabase(postgres.url, { role: 'kns', database: 'kns' })
    const { ms } = await restoreBackup(backup.file, databaseUrl)
    const dataDir = join(cluster.network.runDir, 'restored')
    mkdirSync(dataDir, { recursive: true })
    // The cluster nodes' settings (KNS_SECRET, PUBLIC_BASE_URL, and the login provider's, derived from it), on another database, without Redis.
    const { KNS_SECRET, PUBLIC_BASE_URL } = cluster.nodes[0]!.env
    restored = await startServer({ DATABASE_URL: databaseUrl, KNS_SECRET: KNS_SECRET!, PUBLIC_BASE_URL: PUBLIC_BASE_URL!, DATA_DIR: dataDir, LOG_LEVEL: 'warn' })
    t.diagnostic(`pg_restore on a fresh PostgreSQL ${Math.round(ms)} ms; KNS started on it`)

    assert.deepEqual(await details(restored.url, approved), before.approved)
    assert.deepEqual(await details(restored.url, pending), before.pending)
    assert.deepEqual(await register(restored.url, phoneNumber, 'restored@example.com'), registered)
    // Every approval acknowledged before the dump started is there.
    for (const m of made.filter((m) => m.answered < backup.startedAt)) assert.equal((await details(restored.url, m.ref!)).status, 'pending')
  } finally {
    await restored?.stop()
    await postgres?.drop()
  }
})
