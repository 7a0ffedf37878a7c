/**
 * The faults, each done to the running cluster as it would happen to a real one, and undone
 * (a restart, the link back up, the crashed member rejoining). Each takes the phase it runs in
 * and records when the fault was done (`faultAt`) and undone (`repairedAt`), and notes what it
 * chose (which node, which member).
 */
import type { Cluster } from './cluster.ts'
import type { FaultPhase } from './fault-table.ts'
import { httpGet, sleep, waitFor } from './wait.ts'

/** `kill -9` of a node's `kns serve`; started again after `holdMs`. */
export async function killNode(cluster: Cluster, phase: FaultPhase, name: string, holdMs: number): Promise<void> {
  const node = cluster.nodes.find((n) => n.name === name)!
  phase.lostNode = name
  phase.faultAt = Date.now()
  node.process.kill('SIGKILL')
  await node.process.exited
  await sleep(holdMs)
  phase.repairedAt = Date.now()
  await node.start()
}

/** The node's host cut off the network (its switch port down) for `holdMs`: its processes keep running. */
export async function cutNode(cluster: Cluster, phase: FaultPhase, name: string, holdMs: number): Promise<void> {
  const host = cluster.network.host(name)
  phase.lostNode = name
  phase.faultAt = Date.now()
  host.cutLink()
  try {
    await sleep(holdMs)
  } finally {
    host.restoreLink()
    phase.repairedAt = Date.now()
  }
}

/** A planned switchover (Patroni's REST API, as `patronictl switchover` calls it): the synchronous standby becomes the primary. */
export async function switchover(cluster: Cluster, phase: FaultPhase): Promise<void> {
  const leader = await cluster.patroni.leader()
  const candidate = cluster.patroni.members.find((m) => m !== leader)!
  phase.notes.push(`${leader.name} → ${candidate.name}`)
  phase.faultAt = Date.now()
  const res = await fetch(`${leader.apiUrl}/switchover`, {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ leader: leader.name, candidate: candidate.name }),
    signal: AbortSignal.timeout(60_000),
  })
  const answer = await res.text()
  if (res.status !== 200) throw new Error(`POST ${leader.apiUrl}/switchover: ${res.status} ${answer}`)
  phase.repairedAt = Date.now()
}

/**
 * The primary's host loses its database at once: `kill -9` of Patroni and of the postmaster
 * (Patroni starts PostgreSQL in a session of its own, so both). The standby is promoted when
 * the leader key expires (ttl); then the crashed member's Patroni is started again on its
 * data directory and rejoins as the standby (pg_rewind if it must).
 */
export async function crashPrimary(cluster: Cluster, phase: FaultPhase): Promise<void> {
  const { patroni } = cluster
  const leader = await patroni.leader()
  const postmaster = patroni.postmasterPid(leader)
  phase.faultAt = Date.now()
  leader.process.kill('SIGKILL')
  try { process.kill(postmaster, 'SIGKILL') } catch { /* gone with the group */ }
  await leader.process.exited
  const promoted = await waitFor('a new primary', async () => {
    const view = await patroni.cluster()
    const next = view.members.find((m) => m.role === 'leader' && m.state === 'running' && m.name !== leader.name)
    return next?.name
  }, { timeoutMs: 60_000, intervalMs: 250, processes: patroni.members.filter((m) => m !== leader).map((m) => m.process) })
  phase.repairedAt = Date.now()
  phase.notes.push(`${leader.name} crashed, ${promoted} promoted after ${((phase.repairedAt - phase.faultAt) / 1000).toFixed(1)} s, ${leader.name} rejoined`)
  await patroni.restart(leader)
}

/** Redis killed (`kill -9`) and started again after `holdMs`: it keeps nothing. */
export async function redisDown(cluster: Cluster, phase: FaultPhase, holdMs: number): Promise<void> {
  phase.faultAt = Date.now()
  cluster.redis.process.kill('SIGKILL')
  await cluster.redis.process.exited
  await sleep(holdMs)
  phase.repairedAt = Date.now()
  await cluster.redis.restart()
}

/** The etcd member that leads Raft killed (`kill -9`), started again on its data after `holdMs`: two of three keep the quorum. */
export async function etcdMemberLost(cluster: Cluster, phase: FaultPhase, holdMs: number): Promise<void> {
  const member = await etcdLeader(cluster)
  phase.notes.push(`${member.name} (the Raft leader) lost`)
  phase.faultAt = Date.now()
  member.process.kill('SIGKILL')
  await member.process.exited
  await sleep(holdMs)
  phase.repairedAt = Date.now()
  await cluster.etcd.restart(member)
}

async function etcdLeader(cluster: Cluster): Promise<Cluster['etcd']['members'][number]> {
  for (const member of cluster.etcd.members) {
    const res = await fetch(`${member.clientUrl}/v3/maintenance/status`, { method: 'POST', body: '{}', signal: AbortSignal.timeout(2000) })
    const status = (await res.json()) as { header?: { member_id?: string }; leader?: string }
    if (status.leader !== undefined && status.header?.member_id === status.leader) return member
  }
  throw new Error('no etcd member says it leads')
}

/** Every part healthy: each node ready (asked directly), Patroni with a synchronous standby, both balancers seeing every node, Redis and etcd answering. */
export async function clusterHealthy(cluster: Cluster, timeoutMs: number): Promise<void> {
  const problems = async (): Promise<string[]> => {
    const found: string[] = []
    for (const node of cluster.nodes) {
      const ready = await httpGet(`${node.url}/readyz`, 1000).catch(() => ({ status: 0, text: '' }))
      if (ready.status !== 200) found.push(`${node.name} /readyz ${ready.status} ${ready.text}`)
    }
    const view = await cluster.patroni.cluster().catch(() => ({ members: [] }))
    if (!view.members.some((m) => m.role === 'leader' && m.state === 'running')) found.push('no running Patroni leader')
    if (!view.members.some((m) => m.role === 'sync_standby' && (m.state === 'streaming' || m.state === 'running'))) found.push(`no streaming sync standby: ${JSON.stringify(view.members)}`)
    const stats = await cluster.haproxy.stats().catch(() => [])
    const servers = (proxy: string) => stats.filter((s) => s.proxy === proxy && s.server !== 'BACKEND' && s.server !== 'FRONTEND' && !s.backup)
    if (!servers('kns_nodes').every((s) => s.status === 'UP') || servers('kns_nodes').length !== cluster.nodes.length) found.push('HAProxy does not see every node UP')
    if (servers('postgres_primary').filter((s) => s.status === 'UP').length !== 1) found.push('HAProxy does not see one PostgreSQL primary UP')
    const active = (await cluster.kamailio.destinations().catch(() => [])).filter((d) => d.flags.startsWith('A'))
    if (active.length !== cluster.nodes.length) found.push(`Kamailio sees ${active.length} nodes active`)
    if (!(await cluster.redis.ping())) found.push('Redis does not answer')
    for (const member of cluster.etcd.members) {
      const health = await httpGet(`${member.clientUrl}/health`, 1000).catch(() => ({ status: 0, text: '' }))
      if (health.status !== 200) found.push(`etcd ${member.name} /health ${health.status}`)
    }
    return found
  }
  let last: string[] = []
  await waitFor('the cluster healthy again', async () => {
    last = await problems()
    return last.length === 0 ? true : undefined
  }, { timeoutMs, intervalMs: 250, diagnostics: () => last.join('\n') })
}
