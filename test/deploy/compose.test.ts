/**
 * compose.yaml, the quickstart (docs/deploy.md), without Docker: its shape (two replicas of
 * the image behind HAProxy, PostgreSQL and Redis on an internal network, Kamailio in the sip
 * profile, no secret in the file), deploy/compose/secrets.sh, and the one HAProxy and Kamailio
 * configuration (deploy/haproxy/haproxy.cfg, deploy/kamailio/kamailio.cfg, which the cluster
 * test runs too) with compose's environment and defines, run for real on loopback in front of
 * one `kns serve`: TLS ends at HAProxy, /metrics stays inside, and an OPTIONS through
 * Kamailio's dispatcher is answered by KNS.
 */
import assert from 'node:assert/strict'
import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { connect } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, test } from 'node:test'
import { parse } from 'yaml'
import { freshDatabaseEnv, type TestEnv } from '../helpers.ts'
import { dockerfileInstructions, dockerignorePatterns, isIgnored } from '../support/docker-context.ts'
import { httpsRequest } from '../support/https-request.ts'
import { sipOptionsOverUdp } from '../support/sip-options.ts'
import { freePort, killAll, ROOT, sleep, startServer } from '../support/process.ts'

interface Service {
  build?: { context: string; dockerfile: string }
  image?: string
  env_file?: string[]
  environment?: Record<string, string>
  profiles?: string[]
  command?: string[]
  volumes?: string[]
  ports?: string[]
  secrets?: string[]
  networks?: string[] | Record<string, { ipv4_address?: string } | null>
  stop_grace_period?: string
  read_only?: boolean
  cap_drop?: string[]
  security_opt?: string[]
}
interface Compose {
  services: Record<string, Service>
  networks: Record<string, { internal?: boolean; ipam?: { config: Array<{ subnet: string }> } }>
  secrets: Record<string, { file: string }>
}

const compose = parse(readFileSync(join(ROOT, 'compose.yaml'), 'utf8'), { merge: true }) as Compose
const HAPROXY_CFG = join(ROOT, 'deploy', 'haproxy', 'haproxy.cfg')
const KAMAILIO_CFG = join(ROOT, 'deploy', 'kamailio', 'kamailio.cfg')
const work = mkdtempSync(join(tmpdir(), `kns-compose-${process.pid}-`))
const daemons: ChildProcess[] = []
let fresh: TestEnv | undefined

after(async () => {
  for (const daemon of daemons) {
    try {
      process.kill(-daemon.pid!, 'SIGKILL')
    } catch {
      // gone already
    }
  }
  await killAll()
  await fresh?.cleanup()
  rmSync(work, { recursive: true, force: true })
})

const seconds = (duration: string) => Number(/^(\d+)s$/.exec(duration)?.[1] ?? NaN)
const address = (service: Service, network: string) => (service.networks as Record<string, { ipv4_address?: string } | null>)[network]?.ipv4_address

test('compose.yaml: two replicas of the image behind the proxy, secrets from secrets/ only, the data stores on an internal network', () => {
  const { services } = compose
  assert.deepEqual(Object.keys(services).sort(), ['kns-1', 'kns-2', 'postgres', 'proxy', 'redis', 'sip'])
  for (const name of ['kns-1', 'kns-2']) {
    const kns = services[name]!
    assert.equal(kns.build?.dockerfile, 'deploy/docker/Dockerfile')
    assert.ok(existsSync(join(ROOT, kns.build.context, kns.build.dockerfile)))
    assert.deepEqual(kns.env_file, ['secrets/kns.env'], 'KNS_SECRET and DATABASE_URL come from the env file secrets.sh writes')
    const env = kns.environment!
    for (const key of Object.keys(env)) assert.doesNotMatch(key, /SECRET|PASSWORD|DATABASE_URL/, `${name} sets ${key} in the file`)
    assert.match(env.PUBLIC_BASE_URL!, /^https:\/\//, 'the public origin is the proxy\'s TLS one')
    assert.equal(env.TRUST_PROXY, '1', 'one proxy hop')
    assert.equal(env.REDIS_URL, 'redis://redis:6379')
    assert.ok(seconds(kns.stop_grace_period!) > 10, 'longer than the server\'s 10 s drain')
    assert.equal(kns.read_only, true)
    assert.deepEqual(kns.cap_drop, ['ALL'])
    assert.ok(kns.security_opt?.includes('no-new-privileges:true'))
    assert.equal(kns.ports, undefined, 'replicas are reached through the proxy only')
  }
  assert.equal(compose.networks.backend!.internal, true)
  for (const name of ['postgres', 'redis']) {
    assert.deepEqual(services[name]!.networks, ['backend'], `${name} only on the internal network`)
    assert.equal(services[name]!.ports, undefined, `${name} publishes nothing`)
  }
  assert.equal(services.postgres!.environment!.POSTGRES_PASSWORD_FILE, '/run/secrets/db_password')
  assert.deepEqual(compose.secrets, { db_password: { file: 'secrets/db_password' } })
  assert.match(readFileSync(join(ROOT, '.gitignore'), 'utf8'), /^secrets\/$/m, 'secrets/ is never committed')

  // The cluster's HAProxy configuration, compose's part of it chosen by the environment: TLS on
  // the published port with secrets.sh's certificate, the two replicas, Docker's DNS, no
  // PostgreSQL frontend (no Patroni here) and no plain HTTP.
  const proxy = services.proxy!
  assert.deepEqual(proxy.ports, ['8443:8443'])
  assert.ok(proxy.volumes!.includes('./deploy/haproxy/haproxy.cfg:/usr/local/etc/haproxy/haproxy.cfg:ro'))
  assert.ok(proxy.volumes!.includes('./secrets/tls.pem:/usr/local/etc/haproxy/tls.pem:ro'))
  assert.deepEqual(proxy.environment, {
    KNS_HTTPS_BIND: ':8443', TLS_CERT: '/usr/local/etc/haproxy/tls.pem', KNS_NODE_1: 'kns-1:8080', KNS_NODE_2: 'kns-2:8080', DNS_RESOLVER: '127.0.0.11:53',
  })

  // SIP: the replicas answer Kamailio alone; its dispatcher names the replicas' fixed addresses.
  const sip = services.sip!
  assert.deepEqual(sip.profiles, ['sip'])
  assert.deepEqual(sip.command, ['-A', 'WITH_TCP'], 'the one configuration, with SIP over TCP too')
  assert.deepEqual(sip.volumes, ['./deploy/compose/dispatcher.list:/etc/kamailio/dispatcher.list:ro'])
  const dockerfile = join(ROOT, sip.build!.context, sip.build!.dockerfile)
  const copies = dockerfileInstructions(dockerfile).filter((i) => i.keyword === 'COPY').map((i) => i.args)
  assert.deepEqual(copies, ['deploy/kamailio/kamailio.cfg /etc/kamailio/kamailio.cfg'], 'the image has the cluster\'s configuration, not a copy')
  assert.equal(isIgnored('deploy/kamailio/kamailio.cfg', dockerignorePatterns()), false, 'it is in the build context')
  assert.equal(existsSync(join(ROOT, 'deploy', 'compose', 'haproxy.cfg')) || existsSync(join(ROOT, 'deploy', 'compose', 'kamailio.cfg')), false,
    'one HAProxy and one Kamailio configuration in deploy/')
  assert.equal(services['kns-1']!.environment!.SIP_TRUSTED_SOURCES, address(sip, 'backend'))
  const listed = [...readFileSync(join(ROOT, 'deploy', 'compose', 'dispatcher.list'), 'utf8').matchAll(/^1 sip:([\d.]+):5060$/gm)].map((m) => m[1])
  assert.deepEqual(listed, [address(services['kns-1']!, 'backend'), address(services['kns-2']!, 'backend')])
  const subnet = compose.networks.backend!.ipam!.config[0]!.subnet.replace(/\.0\/24$/, '.')
  for (const ip of [...listed, address(sip, 'backend')]) assert.ok(ip?.startsWith(subnet), `${ip} is on the backend network`)
})

test('secrets.sh writes the replicas\' env file, the database password and a certificate once, readable by their owner only', () => {
  const dir = join(work, 'secrets')
  const first = spawnSync('bash', [join(ROOT, 'deploy', 'compose', 'secrets.sh'), dir], { encoding: 'utf8' })
  assert.equal(first.status, 0, first.stderr)
  const env = readFileSync(join(dir, 'kns.env'), 'utf8')
  const password = readFileSync(join(dir, 'db_password'), 'utf8')
  assert.match(password, /^[0-9a-f]{48}$/)
  assert.match(env, new RegExp(`^KNS_SECRET=[0-9a-f]{64}\nDATABASE_URL=postgres://kns:${password}@postgres:5432/kns\n$`))
  assert.match(readFileSync(join(dir, 'tls.pem'), 'utf8'), /-----BEGIN CERTIFICATE-----[\s\S]+-----BEGIN PRIVATE KEY-----/)
  assert.equal(statSync(dir).mode & 0o777, 0o700)
  for (const file of ['kns.env', 'db_password']) assert.equal(statSync(join(dir, file)).mode & 0o777, 0o600, file)

  const again = spawnSync('bash', [join(ROOT, 'deploy', 'compose', 'secrets.sh'), dir], { encoding: 'utf8' })
  assert.equal(again.status, 0, again.stderr)
  assert.equal(again.stdout, '', 'nothing is written again')
  assert.equal(readFileSync(join(dir, 'kns.env'), 'utf8'), env, 'KNS_SECRET is kept: it is pinned in the database')

  rmSync(join(dir, 'db_password'))
  const half = spawnSync('bash', [join(ROOT, 'deploy', 'compose', 'secrets.sh'), dir], { encoding: 'utf8' })
  assert.notEqual(half.status, 0)
  assert.match(half.stderr, /one of kns\.env and db_password without the other/)
  assert.equal(readFileSync(join(dir, 'kns.env'), 'utf8'), env)
})

const has = (command: string, args: string[]) => spawnSync(command, args, { stdio: 'ignore' }).status === 0

/** Starts a daemon in a process group of its own (Kamailio forks its workers), stopped in `after`. */
function daemon(command: string, args: string[], env?: Record<string, string>): { output: () => string } {
  const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'], detached: true, env: env === undefined ? process.env : { PATH: process.env.PATH!, ...env } })
  daemons.push(child)
  let output = ''
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => { output += chunk })
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => { output += chunk })
  return { output: () => output }
}

/** `haproxy -c` on the one configuration with this environment only. */
function haproxyCheck(env: Record<string, string>) {
  return spawnSync('haproxy', ['-c', '-f', HAPROXY_CFG], { encoding: 'utf8', env: { PATH: process.env.PATH!, ...env } })
}

async function waitForPort(port: number, what: () => string): Promise<void> {
  const deadline = Date.now() + 10_000
  while (Date.now() < deadline) {
    const open = await new Promise<boolean>((resolve) => {
      const socket = connect(port, '127.0.0.1', () => { socket.destroy(); resolve(true) })
      socket.on('error', () => resolve(false))
    })
    if (open) return
    await sleep(50)
  }
  throw new Error(`nothing listens on ${port}:\n${what()}`)
}

test('the HAProxy and Kamailio configurations with compose\'s environment in front of kns serve: TLS at the proxy, /readyz checked, /metrics kept inside, SIP dispatched', {
  timeout: 60_000,
  skip: !has('haproxy', ['-v']) ? 'haproxy is not installed (apt-get install haproxy)' : !has('openssl', ['version']) ? 'openssl is not installed' : false,
}, async (t) => {
  const secrets = join(work, 'live-secrets')
  assert.equal(spawnSync('bash', [join(ROOT, 'deploy', 'compose', 'secrets.sh'), secrets]).status, 0)
  const sipPort = await freePort()
  fresh = await freshDatabaseEnv({ SIP_LISTEN: `127.0.0.1:${sipPort}`, SIP_TRUSTED_SOURCES: '127.0.0.1', TRUST_PROXY: '1' })
  const kns = await startServer(fresh.env)

  const proxyEnv = compose.services.proxy!.environment!
  // compose.yaml's environment as it is (the certificate at its path on this machine): valid,
  // the replicas' names left to Docker's DNS; without what it needs, refused saying what.
  const check = haproxyCheck({ ...proxyEnv, TLS_CERT: join(secrets, 'tls.pem') })
  assert.equal(check.status, 0, check.stdout + check.stderr)
  const { KNS_HTTPS_BIND: _bind, ...unbound } = proxyEnv
  const refused = haproxyCheck({ ...unbound, TLS_CERT: join(secrets, 'tls.pem') })
  assert.notEqual(refused.status, 0)
  assert.match(refused.stderr, /haproxy\.cfg needs KNS_HTTPS_BIND, TLS_CERT and KNS_NODE_1 in the environment/)

  // The same environment with this machine's addresses: both replicas are the one kns serve.
  const httpsPort = await freePort()
  const env = { ...proxyEnv, KNS_HTTPS_BIND: `127.0.0.1:${httpsPort}`, TLS_CERT: join(secrets, 'tls.pem'), KNS_NODE_1: `127.0.0.1:${kns.port}`, KNS_NODE_2: `127.0.0.1:${kns.port}` }
  assert.equal(haproxyCheck(env).status, 0)
  const haproxy = daemon('haproxy', ['-db', '-f', HAPROXY_CFG], env)
  await waitForPort(httpsPort, haproxy.output)

  const ca = readFileSync(join(secrets, 'tls.pem'), 'utf8')
  const url = `https://127.0.0.1:${httpsPort}`
  const ready = await httpsRequest(`${url}/readyz`, { ca, servername: 'localhost' })
  assert.equal(ready.status, 200, ready.body)
  assert.match(ready.tlsVersion ?? '', /^TLSv1\.[23]$/)
  assert.equal((await fetch(`${kns.url}/metrics`)).status, 200, 'the replica serves /metrics to its own network')
  const metrics = await httpsRequest(`${url}/metrics`, { ca, servername: 'localhost' })
  assert.equal(metrics.status, 404, 'not through the proxy')
  assert.equal((await httpsRequest(`${url}/metrics/`, { ca, servername: 'localhost' })).status, 404)

  if (!has('kamailio', ['-v'])) return t.skip('kamailio is not installed (apt-get install kamailio): the SIP part is not run')
  // compose's defines (its `command`), then this machine's address, port, list and sockets.
  const sipFront = await freePort()
  writeFileSync(join(work, 'dispatcher.list'), `1 sip:127.0.0.1:${sipPort}\n`)
  const kamailio = daemon('kamailio', ['-DD', '-E', '-f', KAMAILIO_CFG, ...compose.services.sip!.command!,
    '-A', 'SIP_ADDRESS=127.0.0.1', '-A', `SIP_PORT=${sipFront}`, '-A', `DISPATCHER_LIST="${join(work, 'dispatcher.list')}"`,
    '-A', `CTL_SOCKET="unix:${join(work, 'kamailio_ctl')}"`, '-Y', work])
  // TCP (WITH_TCP) is the port that can be polled; UDP is answered by the same process.
  await waitForPort(sipFront, kamailio.output)
  // KNS's own answer (its Allow header), through the dispatcher, our Via on top again.
  let answer: string | undefined
  for (let attempt = 0; attempt < 20 && answer === undefined; attempt++) answer = await sipOptionsOverUdp(sipFront, { timeoutMs: 500 })
  assert.ok(answer !== undefined, `no answer through Kamailio:\n${kamailio.output()}`)
  assert.match(answer, /^SIP\/2\.0 200 OK\r\n/)
  assert.match(answer, /\r\nAllow: INVITE, ACK, CANCEL, OPTIONS\r\n/, 'answered by KNS, not by Kamailio')
  assert.match(answer, /\r\nVia: SIP\/2\.0\/UDP 127\.0\.0\.1:\d+;branch=z9hG4bK-options-/)
  assert.doesNotMatch(answer, /\r\nVia: [^\r]*\r\nVia: /, 'Kamailio\'s own Via is taken off')
  await kns.stop()
})
