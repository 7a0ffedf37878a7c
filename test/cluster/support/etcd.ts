/**
 * etcd (Debian's etcd-server), the distributed configuration store Patroni keeps its leader
 * lock in: one member per given host, a cluster of three so that losing one member keeps a
 * quorum. Configured by etcd's own ETCD_* environment variables (docs/cluster.md lists them),
 * run as the etcd user.
 */
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { baseEnv, chownTree, type Host, type HostProcess } from './hosts.ts'
import { httpGet, waitFor } from './wait.ts'

export const ETCD_CLIENT_PORT = 2379
export const ETCD_PEER_PORT = 2380

export interface EtcdMember {
  name: string
  host: Host
  process: HostProcess
  clientUrl: string
}

export interface Etcd {
  members: EtcdMember[]
  /** `host:port,host:port,...`, as PATRONI_ETCD3_HOSTS takes them. */
  hosts: string
  /** Restarts a member that was stopped or killed, on its existing data. */
  restart(member: EtcdMember): Promise<void>
}

export async function startEtcd(hosts: Host[], clusterToken: string): Promise<Etcd> {
  const named = hosts.map((host, i) => ({ name: `etcd${i + 1}`, host }))
  const initialCluster = named.map(({ name, host }) => `${name}=http://${host.address}:${ETCD_PEER_PORT}`).join(',')
  const launch = (name: string, host: Host) => {
    const dataDir = join(host.dir, 'etcd')
    mkdirSync(dataDir, { recursive: true, mode: 0o700 })
    const env = baseEnv({
      ETCD_NAME: name,
      ETCD_DATA_DIR: dataDir,
      ETCD_LISTEN_CLIENT_URLS: `http://${host.address}:${ETCD_CLIENT_PORT},http://127.0.0.1:${ETCD_CLIENT_PORT}`,
      ETCD_ADVERTISE_CLIENT_URLS: `http://${host.address}:${ETCD_CLIENT_PORT}`,
      ETCD_LISTEN_PEER_URLS: `http://${host.address}:${ETCD_PEER_PORT}`,
      ETCD_INITIAL_ADVERTISE_PEER_URLS: `http://${host.address}:${ETCD_PEER_PORT}`,
      ETCD_INITIAL_CLUSTER: initialCluster,
      ETCD_INITIAL_CLUSTER_STATE: 'new',
      ETCD_INITIAL_CLUSTER_TOKEN: clusterToken,
      // A LAN: heartbeats every 100 ms, a new etcd leader within a second of losing one.
      ETCD_HEARTBEAT_INTERVAL: '100',
      ETCD_ELECTION_TIMEOUT: '1000',
      ETCD_LOGGER: 'zap',
    })
    chownTree(dataDir, 'etcd')
    return host.spawn('etcd', 'etcd', [], { user: 'etcd', env })
  }
  const members: EtcdMember[] = named.map(({ name, host }) => ({
    name, host, process: launch(name, host), clientUrl: `http://${host.address}:${ETCD_CLIENT_PORT}`,
  }))
  await Promise.all(members.map((member) => waitHealthy(member, members)))
  return {
    members,
    hosts: members.map((m) => `${m.host.address}:${ETCD_CLIENT_PORT}`).join(','),
    async restart(member) {
      if (member.process.running()) await member.process.stop()
      member.process = launch(member.name, member.host)
      await waitHealthy(member, members)
    },
  }
}

/** /health answers {"health":"true"} once the member has a leader (a quorum formed). */
function waitHealthy(member: EtcdMember, all: EtcdMember[]): Promise<true> {
  return waitFor(`etcd member ${member.name}`, async () => {
    const { status, text } = await httpGet(`${member.clientUrl}/health`)
    return status === 200 && (JSON.parse(text) as { health?: string }).health === 'true' ? true : undefined
  }, { timeoutMs: 30_000, processes: all.map((m) => m.process) })
}
