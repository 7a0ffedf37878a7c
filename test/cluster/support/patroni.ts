/**
 * PostgreSQL 15 under Patroni (Debian's patroni), one member per given host, with
 * deploy/patroni/patroni.yml as it is: per-host values and passwords through Patroni's
 * environment variables. Patroni runs as postgres; each host gets its own /run/postgresql (a
 * bind mount private to the process), as a real host has, so no socket meets the machine's
 * own PostgreSQL.
 */
import { mkdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { ROOT } from '../../support/process.ts'
import { baseEnv, chownTree, type Host, type HostProcess } from './hosts.ts'
import { httpGet, waitFor } from './wait.ts'

export const PATRONI_CONFIG = join(ROOT, 'deploy', 'patroni', 'patroni.yml')
export const PATRONI_API_PORT = 8008
export const POSTGRES_PORT = 5432

export interface PatroniMember {
  name: string
  host: Host
  process: HostProcess
  /** Patroni's REST API: /primary, /replica, /cluster, /patroni. */
  apiUrl: string
}

/** One member as `GET /cluster` lists it. */
export interface ClusterMember {
  name: string
  role: 'leader' | 'replica' | 'sync_standby' | 'standby_leader' | string
  state: string
  host: string
  lag?: number | string
}

export interface Patroni {
  members: PatroniMember[]
  /** GET /cluster from the first member that answers. */
  cluster(): Promise<{ members: ClusterMember[] }>
  /** The member GET /cluster names leader (throws when there is none). */
  leader(): Promise<PatroniMember>
  /** The pid of a member's postmaster (its postmaster.pid): kill it to crash PostgreSQL under Patroni. */
  postmasterPid(member: PatroniMember): number
  /** Waits until there is a running leader and a streaming synchronous standby. */
  waitHealthy(timeoutMs?: number): Promise<{ leader: string; syncStandby: string }>
  /** Starts a member's Patroni again (after a stop or kill), on its data directory. */
  restart(member: PatroniMember): Promise<void>
}

const dataDirOf = (host: Host) => join(host.dir, 'pgdata')

export interface PatroniSecrets {
  superuserPassword: string
  replicationPassword: string
}

export async function startPatroni(hosts: Host[], etcdHosts: string, secrets: PatroniSecrets): Promise<Patroni> {
  const launch = (name: string, host: Host) => {
    const runDir = join(host.dir, 'run-postgresql')
    const dataDir = dataDirOf(host)
    mkdirSync(runDir, { recursive: true })
    mkdirSync(dataDir, { recursive: true, mode: 0o700 })
    chownTree(runDir, 'postgres')
    chownTree(dataDir, 'postgres')
    const env = baseEnv({
      HOME: host.dir,
      PATRONI_NAME: name,
      PATRONI_RESTAPI_LISTEN: `${host.address}:${PATRONI_API_PORT}`,
      PATRONI_RESTAPI_CONNECT_ADDRESS: `${host.address}:${PATRONI_API_PORT}`,
      PATRONI_POSTGRESQL_LISTEN: `${host.address}:${POSTGRES_PORT}`,
      PATRONI_POSTGRESQL_CONNECT_ADDRESS: `${host.address}:${POSTGRES_PORT}`,
      PATRONI_POSTGRESQL_DATA_DIR: dataDir,
      PATRONI_POSTGRESQL_PGPASS: join(runDir, 'pgpass'),
      PATRONI_ETCD3_HOSTS: etcdHosts,
      PATRONI_SUPERUSER_PASSWORD: secrets.superuserPassword,
      PATRONI_REPLICATION_PASSWORD: secrets.replicationPassword,
    })
    return host.spawn('patroni', 'patroni', [PATRONI_CONFIG], { user: 'postgres', env, binds: [[runDir, '/run/postgresql']] })
  }
  const members: PatroniMember[] = hosts.map((host, i) => {
    const name = `pg${i + 1}`
    return { name, host, process: launch(name, host), apiUrl: `http://${host.address}:${PATRONI_API_PORT}` }
  })
  const cluster = async () => {
    let last: unknown
    for (const member of members) {
      try {
        const { status, text } = await httpGet(`${member.apiUrl}/cluster`)
        if (status === 200) return JSON.parse(text) as { members: ClusterMember[] }
        last = new Error(`GET ${member.apiUrl}/cluster: ${status}`)
      } catch (err) {
        last = err
      }
    }
    throw last
  }
  const patroni: Patroni = {
    members,
    cluster,
    async leader() {
      const name = (await cluster()).members.find((m) => m.role === 'leader')?.name
      const member = members.find((m) => m.name === name)
      if (member === undefined) throw new Error('Patroni has no leader')
      return member
    },
    postmasterPid: (member) => Number(readFileSync(join(dataDirOf(member.host), 'postmaster.pid'), 'utf8').split('\n')[0]),
    waitHealthy: (timeoutMs = 60_000) => waitFor('Patroni: a leader and a synchronous standby', async () => {
      const view = await cluster()
      const leader = view.members.find((m) => m.role === 'leader' && m.state === 'running')
      const standby = view.members.find((m) => m.role === 'sync_standby' && (m.state === 'streaming' || m.state === 'running'))
      return leader !== undefined && standby !== undefined ? { leader: leader.name, syncStandby: standby.name } : undefined
    }, {
      timeoutMs, intervalMs: 250, processes: members.map((m) => m.process),
      diagnostics: async () => `GET /cluster: ${JSON.stringify(await cluster())}`,
    }),
    async restart(member) {
      if (member.process.running()) await member.process.stop(30_000)
      member.process = launch(member.name, member.host)
    },
  }
  return patroni
}
