/**
 * Faults under a steady production mix (issue 32, item 4): one cluster, the mix running
 * before, during and after each fault, one fault after another: a node killed, a node cut
 * off, Redis down, an etcd member lost, a PostgreSQL switchover, a crash of the primary (with
 * APPROVAL_COMMIT=sync, then again with async after a rolling restart). The fault table
 * (docs/cluster.md) is printed at the end; `UPDATE_DOCS=1` writes it into docs/cluster.md.
 *
 * What is asserted is what the issue states as goals: no acknowledged approval or decision
 * lost (with sync commits and synchronous replication), no webhook event lost and none sent
 * under two ids, every node ready again within READY_BOUND_MS of the repair (a correctness
 * deadline, generous, not a benchmark), failures only on the lost node or inside the fault's
 * window, and the service's own answers to them 503 with Retry-After. Timings are printed,
 * never asserted. Root only (`npm run test:cluster`); skipped elsewhere, saying why.
 */
import assert from 'node:assert/strict'
import { generateKeyPairSync } from 'node:crypto'
import { copyFileSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { after, before, test } from 'node:test'
import { Ed25519Keypair } from '@mysten/sui/keypairs/ed25519'
import { ROOT } from '../support/process.ts'
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.ts'
import { BRIDGE_ADDRESS, startCluster, type Cluster, type PreparedCluster } from './support/cluster.ts'
import { ClusterWatch } from './support/cluster-watch.ts'
import { faultRow, renderTable, writeTableInto, type FaultPhase, type FaultRow } from './support/fault-table.ts'
import { clusterHealthy, crashPrimary, cutNode, etcdMemberLost, killNode, redisDown, switchover } from './support/faults.ts'
import { chownTree } from './support/hosts.ts'
import { lossesByPhase, settle } from './support/losses.ts'
import { attributeNodes, summarizeRequests } from './support/mix-records.ts'
import { ProductionMix, type MixTargets } from './support/production-mix.ts'
import { clusterUnavailable } from './support/requirements.ts'
import { startSmsGateway, type SmsGateway } from './support/sms-gateway.ts'
import { sleep } from './support/wait.ts'

const skip = clusterUnavailable()

/** The mix runs this long before each fault, and after the cluster is healthy again. */
const BEFORE_MS = 4000
const AFTER_MS = 3000
/** Every node ready, Patroni with its synchronous standby, both balancers and Redis and etcd back within this of the repair. */
const READY_BOUND_MS = 60_000
/** A crash of the primary is also tried with this burst of approval creations around it (approvals/s, ms): what async commits risk shows in numbers. */
const BURST = { perSecond: 40, ms: 3000 }

const APPROVAL_PHONE = '+447700900123'
const CALLER = '+12025550142'
const CALLED = '+14155550199'

let cluster: Cluster
let mix: ProductionMix
const watch = new ClusterWatch()
let sms: SmsGateway | undefined
let receiver: WebhookReceiver | undefined
const phases: FaultPhase[] = []
let phaseStart = 0

before(async () => {
  if (skip !== undefined) return
  let targets: Omit<MixTargets, 'apiUrl' | 'sipTarget'> | undefined
  cluster = await startCluster({
    nodeEnv: {
      APPROVAL_COMMIT: 'sync',
      // The receiver and the SMS gateway are on the bridge (a private address, over http).
      WEBHOOK_ALLOW_PRIVATE: 'true',
      // A delivery claimed by a node that dies is taken over when its lease (2 x timeout + 5 s)
      // ends, and retried from 1 s: the run settles in seconds, not minutes.
      WEBHOOK_TIMEOUT_MS: '2000',
      WEBHOOK_RETRY_BASE_MS: '1000',
      LOGIN_RESEND_COOLDOWN_S: '0',
      // Every client of the mix is one address (the bridge's): per-address limits sized for it.
      LOGIN_SENDS_PER_IP: '1000000',
      PUBLIC_RATE_LIMIT: '1000',
    },
    async prepare(c) {
      sms = await startSmsGateway(BRIDGE_ADDRESS)
      receiver = await startWebhookReceiver('/hooks/kns', 0, BRIDGE_ADDRESS)
      targets = await prepareMix(c, receiver)
      // The gateway listens on the bridge, which exists once the cluster's network does.
      return { SMS_DELIVERY: 'http', SMS_HTTP_URL: sms.url }
    },
  })
  watch.start(cluster.nodes, cluster.haproxy)
  mix = new ProductionMix({ ...targets!, apiUrl: cluster.haproxy.httpUrl, sipTarget: cluster.kamailio.sipAddress })
  await mix.start()
  phaseStart = Date.now()
})

after(async () => {
  // The cluster goes whatever else fails: it holds the machine's one cluster subnet.
  try {
    await mix?.stop()
    await watch.stop()
    await receiver?.close()
    await sms?.close()
    if (cluster !== undefined && process.env.CLUSTER_LOGS_DIR !== undefined) keepLogs(cluster, process.env.CLUSTER_LOGS_DIR)
  } finally {
    await cluster?.stop()
  }
})

/** CLUSTER_LOGS_DIR=<dir>: every part's log is copied there (<host>/<part>.log) before the cluster is removed. */
function keepLogs(c: Cluster, dir: string): void {
  for (const host of c.network.hosts.values()) {
    mkdirSync(join(dir, host.name), { recursive: true })
    for (const file of readdirSync(host.dir).filter((f) => f.endsWith('.log'))) copyFileSync(join(host.dir, file), join(dir, host.name, file))
  }
}

/** The mix's keys, tokens and keystore, made with `kns` on a node's host as an operator would, and the webhook subscription. */
async function prepareMix(c: PreparedCluster, hooks: WebhookReceiver): Promise<Omit<MixTargets, 'apiUrl' | 'sipTarget'>> {
  const kns = async (args: string[]) => {
    const result = await c.kns([...args, '--json'])
    assert.equal(result.code, 0, `kns ${args.join(' ')}: ${result.stderr}`)
    return JSON.parse(result.stdout) as Record<string, string>
  }
  const wallet = new Ed25519Keypair()
  const callerKey = generateKeyPairSync('ec', { namedCurve: 'P-256' })
  const dir = join(c.network.runDir, 'mix')
  mkdirSync(dir)
  writeFileSync(join(dir, 'caller.pub.pem'), callerKey.publicKey.export({ type: 'spki', format: 'pem' }))
  if (c.app.user !== undefined) chownTree(dir, c.app.user)
  const [token, , approvals, verifier, keystore] = await Promise.all([
    kns(['token', 'mint', '--phone', APPROVAL_PHONE, '--owner', wallet.toSuiAddress()]),
    kns(['token', 'mint', '--phone', CALLER, '--owner', wallet.toSuiAddress()]),
    kns(['api-key', 'create', '--vendor', 'Mix Bank', '--scopes', 'approvals', '--rate', '100000']),
    kns(['api-key', 'create', '--vendor', 'Mix SBC', '--scopes', 'caller', '--rate', '100000']),
    kns(['keystore', 'create', '--name', 'Mix Carrier', '--creator', wallet.toSuiAddress(), '--public-key', join(dir, 'caller.pub.pem')]),
  ])
  const [subscription] = await Promise.all([
    kns(['webhook', 'add', '--key', approvals.id!, '--url', hooks.url]),
    kns(['registry', 'link', '--phone', CALLER, '--keystore', keystore.objectId!]),
  ])
  hooks.secret = subscription.secret!
  return {
    localAddress: BRIDGE_ADDRESS, approvalsKey: approvals.key!, callerKey: verifier.key!, wallet,
    approvalPhone: APPROVAL_PHONE, tokenObjectId: token.objectId!, sms: sms!,
    caller: { number: CALLER, called: CALLED, privateKey: callerKey.privateKey, keyId: keystore.keyId! },
  }
}

/**
 * One phase: the mix alone for BEFORE_MS, the fault (done and undone by `inject`), the cluster
 * healthy again within READY_BOUND_MS of the repair, the mix alone for AFTER_MS. Phases are
 * back to back: each starts where the last ended.
 */
async function underFault(name: string, inject: (phase: FaultPhase) => Promise<void>): Promise<FaultPhase> {
  await clusterHealthy(cluster, READY_BOUND_MS)
  const phase: FaultPhase = { name, start: phaseStart, faultAt: 0, repairedAt: 0, recoveredAt: 0, end: 0, commit: mix.commit, notes: [] }
  phases.push(phase)
  try {
    await sleep(BEFORE_MS)
    phase.faultAt = Date.now()
    await inject(phase)
    phase.repairedAt ||= Date.now()
    await clusterHealthy(cluster, READY_BOUND_MS)
    phase.recoveredAt = Date.now()
    await sleep(AFTER_MS)
  } finally {
    phase.recoveredAt ||= Date.now()
    phase.end = phaseStart = Date.now()
  }
  return phase
}

/** The node that watches the ledger now: the faults that lose a node lose this one, so the handover shows. */
function watcherNode(): string {
  return watch.currentWatcher() ?? cluster.nodes[0]!.name
}

test('no fault: the mix alone', { skip }, async () => {
  await underFault('no fault', async (phase) => {
    phase.control = true
    await sleep(4000)
  })
})

test('kill -9 of the node that watches the ledger, started again 5 s later', { skip }, async () => {
  await underFault('kill -9 of a KNS node', async (phase) => {
    const name = watcherNode()
    phase.notes.push(`${name}, the ledger watcher, killed; restarted 5 s later`)
    await killNode(cluster, phase, name, 5000)
  })
})

test('the node that watches the ledger cut off the network for 10 s', { skip }, async () => {
  await underFault('a KNS node cut off', async (phase) => {
    const name = watcherNode()
    phase.notes.push(`${name}, the ledger watcher, cut off for 10 s`)
    await cutNode(cluster, phase, name, 10_000)
  })
})

test('Redis killed, started again 8 s later', { skip }, async () => {
  await underFault('Redis down', (phase) => redisDown(cluster, phase, 8000))
})

test('the etcd member leading Raft killed, started again 8 s later', { skip }, async () => {
  await underFault('an etcd member lost', (phase) => etcdMemberLost(cluster, phase, 8000))
})

test('a PostgreSQL switchover (Patroni REST, as patronictl switchover)', { skip }, async () => {
  await underFault('PostgreSQL switchover', (phase) => switchover(cluster, phase))
})

/** The crash with a burst of creations from 1.5 s before it to 1.5 s after. */
async function crashWithBurst(phase: FaultPhase): Promise<void> {
  const burst = mix.burst(BURST.perSecond, BURST.ms)
  await sleep(BURST.ms / 2)
  await crashPrimary(cluster, phase)
  await burst
}

test('a crash of the primary (kill -9 of Patroni and PostgreSQL): the standby promoted, the crashed member rejoins', { skip }, async () => {
  await underFault('crash of the primary', crashWithBurst)
})

test('a rolling restart of the nodes (SIGTERM, one at a time) to APPROVAL_COMMIT=async', { skip }, async () => {
  await underFault('rolling restart', async (phase) => {
    for (const node of cluster.nodes) {
      node.env.APPROVAL_COMMIT = 'async'
      await node.start()
      await cluster.haproxy.waitServers('kns_nodes', (servers) => servers.every((s) => s.status === 'UP'), `${node.name} back in HAProxy`)
    }
    mix.commit = 'async'
    phase.notes.push('SIGTERM, started again, back in HAProxy, then the next')
  })
})

test('a crash of the primary with APPROVAL_COMMIT=async', { skip }, async () => {
  await underFault('crash of the primary', crashWithBurst)
})

test('the fault table: what failed, what was lost, how leadership moved', { skip }, async (t) => {
  await mix.stop()
  await watch.stop()
  const stored = await settle(cluster.databaseUrl, mix.records, receiver!.received, 60_000)
  attributeNodes(mix.records.requests, cluster.nodes.map((n) => ({ node: n.name, log: n.process.log() })), cluster.kamailio.process.log(),
    new Map(cluster.nodes.map((n) => [n.host.address, n.name])))
  const losses = lossesByPhase(phases, mix.records, stored, receiver!.received)
  const rows = phases.filter((p) => p.faultAt > 0).map((p) => faultRow(p, mix.records, watch.readiness, watch.primary, losses.get(p)!))
  const table = renderTable(rows)
  console.log(`\nFaults under the production mix (${mix.records.requests.length} requests, ${mix.skipped} starts skipped at the client's cap):\n\n${table}\n`)
  if (process.env.UPDATE_DOCS === '1') {
    writeTableInto(join(ROOT, 'docs', 'cluster.md'), table, `Measured ${new Date().toISOString().slice(0, 10)} on a 2-core machine (the whole cluster on it), by \`UPDATE_DOCS=1 npm run test:cluster\`:`)
  }

  assert.deepEqual(receiver!.received.filter((d) => d.verified === null).map((d) => d.verifyError), [], 'every delivery verifies (standardwebhooks)')
  for (const row of rows) await t.test(faultGoals(row), () => assertGoals(row))
})

function faultGoals(row: FaultRow): string {
  return `${row.phase.name}${row.phase.commit === 'async' ? ' (async)' : ''}: ${row.failed.length} of ${row.requests} failed`
}

/** The goals for one fault (async commits may lose approvals: measured, not asserted). */
function assertGoals(row: FaultRow): void {
  const { losses, phase } = row
  const show = (requests: typeof row.failed) => summarizeRequests(requests.slice(0, 40))
  if (phase.commit === 'sync') assert.deepEqual(losses.approvals.lost, [], 'acknowledged approvals lost')
  assert.deepEqual(losses.decisions.lost, [], 'acknowledged decisions lost')
  assert.deepEqual(losses.webhooks.lost, [], 'decided approvals whose event never reached the webhook')
  assert.equal(row.watcher.doubleS, 0, 'two nodes watched the ledger at once')
  assert.deepEqual(row.outside.map((r) => `${r.kind} ${r.status} ${r.failure}`), [], `failures outside the fault's window and not on the lost node: ${show(row.outside)}`)
  assert.deepEqual(row.wrongAnswer.map((r) => `${r.kind} ${r.status} ${r.failure}`), [], `the service answered a failure other than 503 with Retry-After: ${show(row.wrongAnswer)}`)
  // HAProxy and Kamailio answer for the service only when no node can (deploy/): 503 with Retry-After too. A request in flight on a killed node may get HAProxy's 502.
  const proxyOther = row.byProxy.filter((r) => !row.onLostNode.includes(r) && !(r.status === 503 && r.retryAfter !== undefined))
  assert.deepEqual(proxyOther.map((r) => `${r.kind} ${r.status} ${r.failure}`), [], `a proxy answered other than 503 with Retry-After: ${show(proxyOther)}`)
  assert.ok(row.readyAgainS === null || row.readyAgainS * 1000 <= phase.repairedAt - phase.faultAt + READY_BOUND_MS,
    `every node ready again within ${READY_BOUND_MS / 1000} s of the repair (${row.readyAgainS} s after the fault)`)
}
