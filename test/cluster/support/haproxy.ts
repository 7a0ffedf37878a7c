/**
 * HAProxy (Debian's haproxy 2.6) with deploy/haproxy/haproxy.cfg as it is, its addresses from
 * the environment, and its admin socket read for the servers' states and counts. It ends TLS
 * on :443 with a certificate for its address made here (openssl, self-signed: the test's CA),
 * and serves plain HTTP on :80 too, inside the test's network.
 */
import { execFileSync } from 'node:child_process'
import { readFileSync, writeFileSync } from 'node:fs'
import { createConnection } from 'node:net'
import { join } from 'node:path'
import { ROOT } from '../../support/process.ts'
import { baseEnv, type Host, type HostProcess } from './hosts.ts'
import { waitFor } from './wait.ts'

export const HAPROXY_CONFIG = join(ROOT, 'deploy', 'haproxy', 'haproxy.cfg')
export const HTTP_PORT = 80
export const HTTPS_PORT = 443
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
}

export interface Haproxy {
  host: Host
  process: HostProcess
  /** The API as clients reach it over plain HTTP, inside the test's network: http://<address> */
  httpUrl: string
  /** The API over TLS, ended by HAProxy: https://<address> (verify with `tlsCa`). */
  httpsUrl: string
  /** The PEM certificate to trust for `httpsUrl` (self-signed, for HAProxy's address only). */
  tlsCa: string
  /** PostgreSQL's primary as the KNS nodes reach it: address:port */
  postgresAddress: string
  stats(): Promise<StatRow[]>
  /** Sends one admin command (`disable server kns_nodes/kns1`, ...) and returns its answer. */
  command(line: string): Promise<string>
  /** Waits until the backend's servers are in the states `want` says (e.g. exactly one UP). */
  waitServers(backend: string, want: (servers: StatRow[]) => boolean, what: string, timeoutMs?: number): Promise<StatRow[]>
}

export function startHaproxy(host: Host, addresses: { knsNodes: string[]; postgres: string[] }): Haproxy {
  const socket = join(host.dir, 'haproxy.sock')
  const tls = makeCertificate(host.dir, host.address)
  const env = baseEnv({
    KNS_HTTPS_BIND: `${host.address}:${HTTPS_PORT}`,
    TLS_CERT: tls.pem,
    KNS_HTTP_BIND: `${host.address}:${HTTP_PORT}`,
    HAPROXY_RUN_AS: 'haproxy',
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
        sessions: Number(cells[at('stot')]), current: Number(cells[at('scur')]),
      }
    })
  }
  const haproxy: Haproxy = {
    host, process, stats, command,
    httpUrl: `http://${host.address}`,
    httpsUrl: `https://${host.address}`,
    tlsCa: tls.certificate,
    postgresAddress: `${host.address}:${POSTGRES_PORT}`,
    waitServers: (backend, want, what, timeoutMs = 30_000) => waitFor(`HAProxy: ${what}`, async () => {
      const servers = (await stats()).filter((row) => row.proxy === backend && row.server !== 'BACKEND' && row.server !== 'FRONTEND')
      return want(servers) ? servers : undefined
    }, {
      timeoutMs, processes: [process],
      diagnostics: async () => (await stats()).map((r) => `${r.proxy}/${r.server}: ${r.status}`).join('\n'),
    }),
  }
  return haproxy
}

/**
 * A self-signed certificate for `address` (an IP SAN: clients verify it by the address they
 * dial) and its key, in one PEM file as HAProxy's `crt` wants; HAProxy reads it as root,
 * before it drops to the haproxy user.
 */
function makeCertificate(dir: string, address: string): { pem: string; certificate: string } {
  const key = join(dir, 'tls.key')
  const cert = join(dir, 'tls.crt')
  execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '2',
    '-subj', '/CN=KNS cluster test', '-addext', `subjectAltName=IP:${address}`, '-keyout', key, '-out', cert], { stdio: ['ignore', 'ignore', 'pipe'] })
  const certificate = readFileSync(cert, 'utf8')
  const pem = join(dir, 'tls.pem')
  writeFileSync(pem, certificate + readFileSync(key, 'utf8'), { mode: 0o600 })
  return { pem, certificate }
}
