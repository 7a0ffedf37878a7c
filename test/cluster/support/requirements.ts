/**
 * Whether the cluster can run here: root (namespaces, binding as root then dropping to each
 * part's user), `ip netns`, and every program of the parts (Debian's packages). Undefined when
 * it can; otherwise why not, naming what is missing and its package, for the skip message.
 */
import { spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'

/** Each program the cluster runs, and the Debian package that has it. */
const PROGRAMS: Array<[string, string]> = [
  ['ip', 'iproute2'], ['setpriv', 'util-linux'], ['etcd', 'etcd-server'], ['patroni', 'patroni'],
  ['/usr/lib/postgresql/15/bin/postgres', 'postgresql-15'], ['psql', 'postgresql-client-15'], ['haproxy', 'haproxy'],
  ['redis-server', 'redis-server'], ['kamailio', 'kamailio'], ['kamcmd', 'kamailio'], ['sipp', 'sip-tester'], ['openssl', 'openssl'],
]

const PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'

function installed(program: string): boolean {
  if (program.startsWith('/')) return existsSync(program)
  return PATH.split(':').some((dir) => existsSync(`${dir}/${program}`))
}

export function clusterUnavailable(): string | undefined {
  if (process.platform !== 'linux') return 'the cluster test needs Linux (network namespaces)'
  if (process.getuid?.() !== 0) return 'the cluster test needs root (it creates network namespaces); CI runs it as root through .ci/run'
  const missing = PROGRAMS.filter(([program]) => !installed(program))
  if (missing.length > 0) {
    return `missing ${missing.map(([program, pkg]) => `${program} (Debian package ${pkg})`).join(', ')}: .ci/run installs them`
  }
  const netns = spawnSync('ip', ['netns', 'list'], { encoding: 'utf8' })
  if (netns.status !== 0) return `\`ip netns list\` fails here: ${(netns.stderr || netns.error?.message || '').trim()}`
  return undefined
}
