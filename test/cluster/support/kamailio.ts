/**
 * Kamailio (Debian's kamailio 5.6) as the SIP dispatcher, with deploy/kamailio/kamailio.cfg
 * and deploy/kamailio/dispatcher.list (the reference topology's nodes) as they are, this host's
 * address given as a define. It binds as root and runs as the kamailio user (-u/-g); its
 * control socket, read with kamcmd, says which nodes its probes see.
 */
import { readFileSync } from 'node:fs'
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { ROOT } from '../../support/process.ts'
import { baseEnv, chownTree, type Host, type HostProcess } from './hosts.ts'
import { waitFor } from './wait.ts'

export const KAMAILIO_CONFIG = join(ROOT, 'deploy', 'kamailio', 'kamailio.cfg')
export const DISPATCHER_LIST = join(ROOT, 'deploy', 'kamailio', 'dispatcher.list')
export const SIP_PORT = 5060

/** One destination as `kamcmd dispatcher.list` shows it: flags `AP` (active, probing), `IP` (inactive), ... */
export interface Destination {
  uri: string
  flags: string
}

export interface Kamailio {
  host: Host
  process: HostProcess
  /** <address>:5060 (UDP), where SBCs send their INVITEs. */
  sipAddress: string
  destinations(): Promise<Destination[]>
  /** Waits until the probes see exactly these SIP addresses (host:port) active. */
  waitActive(addresses: string[], timeoutMs?: number): Promise<Destination[]>
}

/**
 * The SIP addresses dispatcher.list names. The file is the deployment's (the reference
 * topology): a node the test runs elsewhere would be a drift between the two, so it is refused.
 */
export function dispatcherAddresses(): string[] {
  return readFileSync(DISPATCHER_LIST, 'utf8').split('\n')
    .filter((line) => /^\s*\d/.test(line))
    .map((line) => /sip:([^\s;]+)/.exec(line)?.[1] ?? '')
}

export function startKamailio(host: Host): Kamailio {
  const runtimeDir = join(host.dir, 'kamailio')
  mkdirSync(runtimeDir, { recursive: true })
  chownTree(runtimeDir, 'kamailio')
  const ctl = `unix:${join(runtimeDir, 'kamailio_ctl')}`
  const process = host.spawn('kamailio', 'kamailio', [
    '-f', KAMAILIO_CONFIG, '-DD', '-E', '-u', 'kamailio', '-g', 'kamailio',
    '-A', `SIP_ADDRESS=${host.address}`, '-A', `SIP_PORT=${SIP_PORT}`, '-Y', runtimeDir, '-m', '32', '-M', '4',
    '-A', `DISPATCHER_LIST="${DISPATCHER_LIST}"`, '-A', `CTL_SOCKET="${ctl}"`,
  ], { env: baseEnv() })
  const destinations = async (): Promise<Destination[]> => {
    const result = await host.run('kamcmd', ['-s', ctl, 'dispatcher.list'], { timeoutMs: 5000 })
    if (result.code !== 0) throw new Error(`kamcmd dispatcher.list: ${result.stderr || result.stdout}`)
    return [...result.stdout.matchAll(/URI:\s*(\S+)\s+FLAGS:\s*(\S+)/g)].map((m) => ({ uri: m[1]!, flags: m[2]! }))
  }
  return {
    host, process, destinations,
    sipAddress: `${host.address}:${SIP_PORT}`,
    waitActive: (addresses, timeoutMs = 30_000) => waitFor(`Kamailio: the probes see ${addresses.join(', ')} active`, async () => {
      const list = await destinations()
      const active = list.filter((d) => d.flags.startsWith('A')).map((d) => d.uri.replace(/^sip:/, '')).sort()
      return JSON.stringify(active) === JSON.stringify([...addresses].sort()) ? list : undefined
    }, { timeoutMs, processes: [process], diagnostics: async () => `dispatcher.list: ${JSON.stringify(await destinations())}` }),
  }
}
