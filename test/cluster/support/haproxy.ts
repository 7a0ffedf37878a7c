/**
 * HAProxy (Debian's haproxy 2.6) with deploy/haproxy/haproxy.cfg as it is, its addresses from
 * the environment, and its admin socket read for the servers' states and counts.
 */
import { createConnection } from 'node:net'
import { join } from 'node:path'
import { ROOT } from '../../support/process.ts'
import { baseEnv, type Host, type HostProcess } from './hosts.ts'
import { waitFor } from './wait.ts'

export const HAPROXY_CONFIG = join(ROOT, 'deploy', 'haproxy', 'haproxy.cfg')
export const HTTP_PORT = 80
export const POSTGRES_PORT = 5432

/** One row of `show stat`: a frontend, a backend or one of its servers. */
export interface StatRow {
  proxy: string
  server: string
  /** UP, DOWN, MAINT, `UP 1/2` (going down), `DOWN 1/2` (coming up), OPEN (frontend)... */
  status: string
  /** Sessions (connections) it has taken in all. */
  sessions: number
  /** Sessions open now. */
  current: number
  /** A backup server (used only while every other server of its backend is down). */
  backup: boolean
}

export interface Haproxy {
  host: Host
  process: HostProcess
  /** The API as clients reach it: http://<address> */
  httpUrl: string
  /** PostgreSQL's primary as the KNS nodes reach it: address:port */
  postgresAddress: string
  stats(): Promise<StatRow[]>
  /** Sends one admin command (`disable server kns_nodes/kns1`, ...) and returns its answer. */
  command(line: string): Promise<string>
  /** Waits until the backend's servers (its checked ones: backups aside) are in the states `want` says (e.g. exactly one UP). */
  waitServers(backend: string, want: (servers: StatRow[]) => boolean, what: string, timeoutMs?: number): Promise<StatRow[]>
}

export function startHaproxy(host: Host, addresses: { knsNodes: string[]; postgres: string[] }): Haproxy {
  const socket = join(host.dir, 'haproxy.sock')
  const env = baseEnv({
    KNS_HTTP_BIND: `${host.address}:${HTTP_PORT}`,
    POSTGRES_BIND: `${host.address}:${POSTGRES_PORT}`,
    HAPROXY_STATS_SOCKET: socket,
    ...Object.fromEntries(addresses.knsNodes.map((address, i) => [`KNS_NODE_${i + 1}`, address])),
    ...Object.fromEntries(addresses.postgres.map((address, i) => [`POSTGRES_${i + 1}`, address])),
  })
  const process = host.spawn('haproxy', 'haproxy', ['-db', '-f', HAPROXY_CONFIG], { env })
  const command = (line: string) => new Promise<string>((resolve, reject) => {
    const connection = createConnection(socket)
    let answer = ''
    connection.setEncoding('utf8')
    connection.setTimeout(2000, () => connection.destroy(new Error('no answer from the admin socket')))
    connection.on('connect', () => connection.write(`${line}\n`))
    connection.on('data', (chunk: string) => { answer += chunk })
    connection.on('end', () => resolve(answer))
    connection.on('error', reject)
  })
  const stats = async (): Promise<StatRow[]> => {
    const [header, ...lines] = (await command('show stat')).split('\n').filter((l) => l !== '')
    const names = (header ?? '').replace(/^# /, '').split(',')
    const at = (name: string) => names.indexOf(name)
    return lines.map((line) => {
      const cells = line.split(',')
      return {
        proxy: cells[at('pxname')]!, server: cells[at('svname')]!, status: cells[at('status')]!,
        sessions: Number(cells[at('stot')]), current: Number(cells[at('scur')]), backup: cells[at('bck')] === '1',
      }
    })
  }
  const haproxy: Haproxy = {
    host, process, stats, command,
    httpUrl: `http://${host.address}`,
    postgresAddress: `${host.address}:${POSTGRES_PORT}`,
    waitServers: (backend, want, what, timeoutMs = 30_000) => waitFor(`HAProxy: ${what}`, async () => {
      const servers = (await stats()).filter((row) => row.proxy === backend && row.server !== 'BACKEND' && row.server !== 'FRONTEND' && !row.backup)
      return want(servers) ? servers : undefined
    }, {
      timeoutMs, processes: [process],
      diagnostics: async () => (await stats()).map((r) => `${r.proxy}/${r.server}: ${r.status}`).join('\n'),
    }),
  }
  return haproxy
}
