/**
 * deploy/systemd/kns.service: systemd's own verifier finds nothing to say about it (where
 * systemd-analyze exists), and it runs what install.sh lays out, as the user install.sh makes,
 * hardened, stopping within more than the server's drain.
 */
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { test } from 'node:test'
import { ROOT } from '../support/process.ts'

const UNIT = join(ROOT, 'deploy', 'systemd', 'kns.service')

/** The unit's [Service] settings: name -> every value given (a setting may repeat). */
function serviceSettings(): Map<string, string[]> {
  const settings = new Map<string, string[]>()
  let section = ''
  for (const line of readFileSync(UNIT, 'utf8').split('\n')) {
    const header = /^\[(\w+)\]$/.exec(line)
    if (header !== null) section = header[1]!
    const setting = /^(\w+)=(.*)$/.exec(line)
    if (section === 'Service' && setting !== null) settings.set(setting[1]!, [...(settings.get(setting[1]!) ?? []), setting[2]!])
  }
  return settings
}

const verifier = spawnSync('systemd-analyze', ['--version'], { stdio: 'ignore' }).status === 0

test('systemd-analyze verify: no error and no warning', {
  skip: !verifier ? 'systemd-analyze is not installed (the static checks below still run)' : !existsSync('/usr/bin/node') ? 'no /usr/bin/node, which ExecStart names: the verifier would only say that' : false,
}, () => {
  // A copy, named as installed: the verifier reads the unit's name from the file's.
  const dir = mkdtempSync(join(tmpdir(), `kns-systemd-${process.pid}-`))
  try {
    copyFileSync(UNIT, join(dir, 'kns.service'))
    const result = spawnSync('systemd-analyze', ['verify', join(dir, 'kns.service')], { encoding: 'utf8' })
    assert.equal(result.status, 0, result.stderr)
    assert.equal(result.stdout + result.stderr, '', 'systemd-analyze has something to say')
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})

test('the unit runs install.sh\'s layout as kns with its env file, restarts on failure, and stops after more than the drain', () => {
  const settings = serviceSettings()
  const one = (name: string) => {
    const values = settings.get(name)
    assert.equal(values?.length, 1, `${name} once`)
    return values[0]!
  }
  assert.equal(one('User'), 'kns')
  assert.equal(one('Group'), 'kns')
  assert.equal(one('EnvironmentFile'), '/etc/kns/kns.env')
  assert.equal(one('ExecStart'), '/usr/bin/node /opt/kns/bin/kns.js serve')
  assert.ok(existsSync(join(ROOT, 'bin', 'kns.js')), 'bin/kns.js, which install.sh copies to /opt/kns/bin/')
  assert.equal(one('Restart'), 'on-failure')
  assert.equal(one('KillSignal'), 'SIGTERM')
  const stop = /^(\d+)s$/.exec(one('TimeoutStopSec'))
  assert.ok(stop !== null && Number(stop[1]) > 15, 'longer than the server\'s 10 s drain and the workers\' 15 s')
  const dataDir = /\bDATA_DIR=(\S+)/.exec(one('Environment'))?.[1]
  assert.equal(dataDir, '/var/lib/kns', 'the home install.sh user makes')
  assert.equal(one('WorkingDirectory'), dataDir)
  assert.equal(one('ReadWritePaths'), dataDir, 'the one place it writes')
})

test('the unit is hardened: no new privileges, a read-only system, private /tmp and devices, no capability', () => {
  const settings = serviceSettings()
  const expected: Record<string, string> = {
    NoNewPrivileges: 'yes', ProtectSystem: 'strict', ProtectHome: 'yes', PrivateTmp: 'yes', PrivateDevices: 'yes',
    ProtectKernelTunables: 'yes', ProtectKernelModules: 'yes', ProtectControlGroups: 'yes', RestrictSUIDSGID: 'yes',
    CapabilityBoundingSet: '', AmbientCapabilities: '', SystemCallFilter: '@system-service', UMask: '0077',
  }
  for (const [name, value] of Object.entries(expected)) assert.deepEqual(settings.get(name), [value], name)
  assert.equal(settings.get('MemoryDenyWriteExecute'), undefined, 'V8\'s JIT needs writable code pages')
})
