/**
 * The cluster of docs/cluster.md comes up and works as one service: Patroni has a leader and
 * a synchronous standby, HAProxy sends PostgreSQL to the primary and the API over all three KNS
 * nodes, ending TLS, what one node stores every node serves, and Kamailio's dispatcher spreads
 * signing INVITEs over the nodes' SIP interfaces by Call-ID and relays their 302s. Root only
 * (`npm run test:cluster`, run by .ci/run); skipped elsewhere, saying why.
 */
import assert from 'node:assert/strict'
import { randomBytes, randomInt, X509Certificate } from 'node:crypto'
import { after, before, test } from 'node:test'
import { rootCertificates } from 'node:tls'
import { compactVerify } from 'jose'
import pg from 'pg'
import { makeShakenPki, type ShakenPki } from '../support/shaken-pki.ts'
import { httpsRequest } from '../support/https-request.ts'
import { approvalPhoneBody, NODE, postJson, ROOT } from '../support/process.ts'
import { sipOptionsOverUdp } from '../support/sip-options.ts'
import { runSipp } from '../support/sipp.ts'
import { BRIDGE_ADDRESS, startCluster, type Cluster } from './support/cluster.ts'
import { baseEnv } from './support/hosts.ts'
import { SIP_PORT } from './support/kamailio.ts'
import { nodeMetric, waitReady } from './support/kns-nodes.ts'
import { clusterUnavailable } from './support/requirements.ts'
import { addSigningCredential, SIGNING_X5U } from './support/signing.ts'
import { waitFor } from './support/wait.ts'

const skip = clusterUnavailable()
let cluster: Cluster
let pki: ShakenPki
const CALLER = '+12025550142'
const CALLED = '+14155550199'

const randomPhone = () => `+4420${String(randomInt(0, 100_000_000)).padStart(8, '0')}`

before(async () => {
  if (skip !== undefined) return
  pki = makeShakenPki({ crlUrl: 'https://crl.example.com/sti-ca.crl' })
  // The operator's setup before the nodes start: a signing credential and the key SIP signs with.
  cluster = await startCluster({ prepare: (c) => addSigningCredential(c, pki) })
})

after(async () => {
  await cluster?.stop()
  pki?.cleanup()
})

test('the cluster comes up (bring-up times per stage)', { skip }, (t) => {
  t.diagnostic(`seconds since the start: ${Object.entries(cluster.timings).map(([stage, s]) => `${stage} ${s}`).join(', ')}`)
  assert.equal(cluster.nodes.length, 3)
})

test('Patroni: one leader and one synchronous standby, and every member says so', { skip }, async () => {
  for (const member of cluster.patroni.members) {
    const view = (await (await fetch(`${member.apiUrl}/cluster`)).json()) as { members: Array<{ name: string; role: string; state: string }> }
    const roles = view.members.map((m) => `${m.name}:${m.role}:${m.state}`).sort()
    assert.deepEqual(view.members.map((m) => m.role).sort(), ['leader', 'sync_standby'], `GET ${member.apiUrl}/cluster: ${roles}`)
    assert.ok(view.members.every((m) => m.state === 'running' || m.state === 'streaming'), roles.join(', '))
  }
  const view = await cluster.patroni.cluster()
  const leader = cluster.patroni.members.find((m) => m.name === view.members.find((v) => v.role === 'leader')!.name)!
  const standby = cluster.patroni.members.find((m) => m !== leader)!
  // What HAProxy asks: only the leader answers 200 on /primary.
  assert.equal((await fetch(`${leader.apiUrl}/primary`)).status, 200)
  assert.equal((await fetch(`${standby.apiUrl}/primary`)).status, 503)
  assert.equal((await fetch(`${standby.apiUrl}/replica`)).status, 200)
})

test('HAProxy sends PostgreSQL to the primary, which replicates synchronously to the standby', { skip }, async () => {
  const view = await cluster.patroni.cluster()
  const leader = view.members.find((m) => m.role === 'leader')!
  const standby = view.members.find((m) => m.role === 'sync_standby')!
  const client = new pg.Client({ connectionString: cluster.superuserUrl, connectionTimeoutMillis: 5000 })
  await client.connect()
  try {
    const { rows: [server] } = await client.query<{ recovery: boolean; address: string }>(
      'SELECT pg_is_in_recovery() AS recovery, host(inet_server_addr()) AS address')
    assert.deepEqual(server, { recovery: false, address: leader.host })
    const { rows: replicas } = await client.query<{ address: string; sync_state: string }>(
      'SELECT host(client_addr) AS address, sync_state FROM pg_stat_replication')
    assert.deepEqual(replicas, [{ address: standby.host, sync_state: 'sync' }])
  } finally {
    await client.end()
  }
  const servers = (await cluster.haproxy.stats()).filter((s) => s.proxy === 'postgres_primary' && s.server.startsWith('pg'))
  assert.deepEqual(servers.map((s) => `${s.server} ${s.status}`).sort(),
    cluster.patroni.members.map((m) => `${m.name} ${m.name === leader.name ? 'UP' : 'DOWN'}`).sort())
})

test('every node is ready, and HAProxy spreads the API over all three', { skip }, async () => {
  for (const node of cluster.nodes) {
    const res = await fetch(`${node.url}/readyz`)
    assert.equal(res.status, 200, `${node.name}: ${await res.text()}`)
  }
  const route = { route: '/numsys/register-user-login', status: '200' }
  const before = await Promise.all(cluster.nodes.map((node) => nodeMetric(node, 'kns_http_request_duration_seconds_count', route)))
  const REQUESTS = 9
  for (let i = 0; i < REQUESTS; i++) {
    const res = await postJson(`${cluster.haproxy.httpUrl}/numsys/register-user-login`, { email: `spread-${i}@example.com`, phoneNumber: randomPhone() })
    assert.equal(res.status, 200, JSON.stringify(res.body))
  }
  const served = (await Promise.all(cluster.nodes.map((node) => nodeMetric(node, 'kns_http_request_duration_seconds_count', route))))
    .map((count, i) => count - before[i]!)
  assert.equal(served.reduce((a, b) => a + b, 0), REQUESTS, `served per node: ${served}`)
  assert.ok(served.every((n) => n > 0), `every node served some (round robin): ${served}`)
})

test('a registration and an approval through HAProxy, with a key made by `kns api-key create` on a node, are seen by every node', { skip }, async () => {
  const phoneNumber = randomPhone()
  const registered = await postJson(`${cluster.haproxy.httpUrl}/numsys/register-user-login`, { email: 'cluster@example.com', phoneNumber })
  assert.equal(registered.status, 200, JSON.stringify(registered.body))
  assert.equal(registered.body.message, 'user registered')
  const created = await cluster.kns(['api-key', 'create', '--vendor', 'Cluster Bank', '--scopes', 'approvals', '--json'])
  assert.equal(created.code, 0, created.stderr)
  const key = (JSON.parse(created.stdout) as { key: string }).key

  const approval = await postJson(`${cluster.haproxy.httpUrl}/numsys/approval-phone`, approvalPhoneBody(phoneNumber), { 'x-api-key': key })
  assert.equal(approval.status, 200, JSON.stringify(approval.body))
  const ref = approval.body.approvalNumber as string
  for (const node of cluster.nodes) {
    const res = await fetch(`${node.url}/numsys/transaction_details?ref=${ref}`)
    assert.equal(res.status, 200, node.name)
    const details = (await res.json()) as Record<string, unknown>
    assert.deepEqual([details.status, details.phoneNumber, details.wallet, details.vendorBrand],
      ['pending', phoneNumber, registered.body.zkAddress, 'Cluster Bank'], node.name)
    // One public URL for the service, whichever node answers.
    assert.match(String(details.signMessage), new RegExp(`^Service: ${cluster.haproxy.httpUrl.replace(/\./g, '\\.')}$`, 'm'))
  }
})

test('SIP: Kamailio spreads INVITEs over the three nodes and relays their 302, whose Identity verifies', { skip }, async () => {
  const invites = { method: 'INVITE', status: '302' }
  const before = await Promise.all(cluster.nodes.map((node) => nodeMetric(node, 'kns_sip_requests_total', invites)))
  // The node is a hash of the Call-ID (sipp's are <n>-<pid>@<address>), not a turn: with
  // Kamailio's hash, 6 calls miss a node for about 1 sipp pid in 5, 20 or more for none
  // (computed over 10,800 pids).
  const CALLS = 30
  const [kamailioHost] = cluster.kamailio.sipAddress.split(':')
  const result = await runSipp(SIP_PORT, { to: CALLED, uriParams: ';user=phone', from: CALLER, headers: ['Attestation-Info: A'], expect: 302 },
    'u1', { host: kamailioHost, localIp: BRIDGE_ADDRESS, calls: CALLS })
  assert.equal(result.code, 0, result.stderr)
  assert.equal(result.responses.length, CALLS)
  const leaf = new X509Certificate(pki.leaves.spc.cert).publicKey
  for (const response of result.responses) {
    assert.equal(response.status, 302)
    const identity = response.headers.get('identity')?.[0] ?? ''
    assert.match(identity, new RegExp(`;info=<${SIGNING_X5U.replace(/\./g, '\\.')}>;alg=ES256;ppt=shaken$`))
    const { payload } = await compactVerify(identity.split(';')[0]!, leaf)
    const claims = JSON.parse(new TextDecoder().decode(payload)) as Record<string, unknown>
    assert.deepEqual([claims.orig, claims.dest, claims.attest], [{ tn: CALLER.slice(1) }, { tn: [CALLED.slice(1)] }, 'A'])
    // The Contact is the Request-URI the SBC sent to the dispatcher.
    assert.equal(response.headers.get('contact')?.[0], `<sip:${CALLED}@${cluster.kamailio.sipAddress};user=phone>`)
  }
  const answered = (await Promise.all(cluster.nodes.map((node) => nodeMetric(node, 'kns_sip_requests_total', invites))))
    .map((count, i) => count - before[i]!)
  assert.equal(answered.reduce((a, b) => a + b, 0), CALLS, `answered per node: ${answered}`)
  assert.ok(answered.every((n) => n > 0), `every node answered some (a hash of the Call-ID): ${answered}`)
})

test('SIP: a request sent again with the same Call-ID (a new transaction: Kamailio keeps none of it) reaches the same node', { skip }, async () => {
  // An OPTIONS to a user goes on to a node like an INVITE; Kamailio logs which one.
  const [host, port] = cluster.kamailio.sipAddress.split(':')
  const callIds = Array.from({ length: 6 }, () => `same-node-${randomBytes(6).toString('hex')}`)
  for (const callId of callIds) {
    for (let attempt = 0; attempt < 2; attempt++) {
      const answer = await sipOptionsOverUdp(Number(port), { callId, host, localAddress: BRIDGE_ADDRESS, timeoutMs: 5000 })
      assert.match(answer ?? '', /^SIP\/2\.0 200 OK\r\n[\s\S]*\r\nAllow: INVITE, ACK, CANCEL, OPTIONS\r\n/, `${callId}: answered by a node`)
    }
  }
  const log = cluster.kamailio.process.log()
  const nodesOf = callIds.map((callId) => [...log.matchAll(new RegExp(`OPTIONS ${callId} from \\S+ -> sip:([\\d.]+):`, 'g'))].map((m) => m[1]))
  for (const [i, nodes] of nodesOf.entries()) {
    assert.equal(nodes.length, 2, `${callIds[i]}: ${nodes.join(', ')}`)
    assert.equal(nodes[0], nodes[1], `${callIds[i]} went to ${nodes.join(' then ')}`)
  }
})

test('HAProxy ends TLS: the API over https with a certificate for its address that the test CA verifies; /metrics stays inside', { skip }, async () => {
  const { httpsUrl, httpUrl, tlsCa: ca } = cluster.haproxy
  const ready = await httpsRequest(`${httpsUrl}/readyz`, { ca })
  assert.equal(ready.status, 200, ready.body)
  assert.match(ready.tlsVersion ?? '', /^TLSv1\.[23]$/)
  const registered = await httpsRequest(`${httpsUrl}/numsys/register-user-login`, { ca, json: { email: 'tls@example.com', phoneNumber: randomPhone() } })
  assert.equal(registered.status, 200, registered.body)
  assert.equal((JSON.parse(registered.body) as { message: string }).message, 'user registered')
  // Only the certificate the test made is trusted: the system's authorities do not vouch for it.
  await assert.rejects(httpsRequest(`${httpsUrl}/readyz`, { ca: rootCertificates.join('\n') }), /self[- ]signed certificate/)
  // The nodes' metrics are for their own network: not through either of HAProxy's binds.
  assert.equal((await fetch(`${cluster.nodes[0]!.url}/metrics`)).status, 200)
  assert.equal((await httpsRequest(`${httpsUrl}/metrics`, { ca })).status, 404)
  assert.equal((await fetch(`${httpUrl}/metrics`)).status, 404)
})

test('a host cut off loses its PostgreSQL session, and the advisory lock it held, within seconds (TCP keepalives); back, its node is ready again', { skip }, async (t) => {
  // A session holding a lock and idle, as KNS's leader locks are, from kns1's host through HAProxy.
  const host = cluster.network.host('kns1')
  const holder = host.spawn('lock-holder', NODE, ['-e', `
    const pg = require('pg')
    const client = new pg.Client({ connectionString: process.env.DATABASE_URL })
    client.connect().then(() => client.query('SELECT pg_try_advisory_lock(4242) AS held')).then((r) => console.log('held:', r.rows[0].held))`],
  { env: baseEnv({ DATABASE_URL: cluster.superuserUrl }), cwd: ROOT })
  await waitFor('the lock holder', async () => (holder.log().includes('held: true') ? true : undefined), { timeoutMs: 15_000, processes: [holder] })
  const probe = new pg.Client({ connectionString: cluster.superuserUrl, connectionTimeoutMillis: 5000 })
  await probe.connect()
  try {
    const tryLock = async () => (await probe.query<{ locked: boolean }>('SELECT pg_try_advisory_lock(4242) AS locked')).rows[0]!.locked
    assert.equal(await tryLock(), false, 'held by the session on kns1\'s host')
    const cut = performance.now()
    host.cutLink()
    try {
      // HAProxy's client keepalives (2 s idle, 3 probes 1 s apart) find the peer gone and close
      // both sides; without them the session would live for HAProxy's 30 min client timeout.
      await waitFor('the lock released', async () => ((await tryLock()) ? true : undefined), { timeoutMs: 30_000, intervalMs: 250 })
      t.diagnostic(`the lock was released ${((performance.now() - cut) / 1000).toFixed(1)} s after the cut`)
    } finally {
      host.restoreLink()
    }
  } finally {
    await probe.end()
    holder.kill('SIGKILL')
  }
  await waitReady(cluster.nodes[0]!)
})
