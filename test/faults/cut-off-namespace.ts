/**
 * A host that can be cut off from the test's PostgreSQL without a word: a network namespace of
 * the test's own joined to the machine by a veth pair (a /30 of 10.213.0.0/16 picked from the
 * pid), so that taking its end of the link down leaves every TCP connection through it open on
 * both sides while nothing crosses: no FIN, no RST, as when a node's link or switch port dies.
 * Removed by `remove()`; a namespace left by a test process that was killed is removed by the
 * next one (its name carries its creator's pid).
 */
import { execFile } from 'node:child_process'
import { existsSync } from 'node:fs'
import { promisify } from 'node:util'
import { processAlive } from '../support/process.ts'

const run = promisify(execFile)
const NAME = /^kfo(\d+)$/

export interface CutOffNamespace {
  /** `ip netns exec <name>` runs a command inside. */
  name: string
  /** The machine's address on the link (PostgreSQL listens there) and the namespace's. */
  hostAddress: string
  address: string
  /** The /30 of the link, for pg_hba.conf. */
  cidr: string
  /** The namespace's end of the link goes down: connections through it hang, silently. */
  cut(): Promise<void>
  remove(): Promise<void>
}

export function namespaceUnavailableReason(): string | undefined {
  if (process.platform !== 'linux') return 'needs Linux network namespaces'
  if (!existsSync('/usr/sbin/ip') && !existsSync('/sbin/ip') && !existsSync('/usr/bin/ip')) return '`ip` (iproute2) not installed'
  if (process.getuid?.() !== 0) return 'creating a network namespace needs root'
  return undefined
}

export async function createCutOffNamespace(): Promise<CutOffNamespace> {
  await removeOrphans()
  const name = `kfo${process.pid}`
  // One /30 per pid: 16 384 of them in 10.213.0.0/16.
  const slot = process.pid % 16384
  const base = `10.213.${Math.floor(slot / 64)}.${(slot % 64) * 4}`
  const prefix = base.slice(0, base.lastIndexOf('.') + 1)
  const first = (slot % 64) * 4
  const hostAddress = `${prefix}${first + 1}`
  const address = `${prefix}${first + 2}`
  const ip = (...args: string[]) => run('ip', args, { timeout: 10_000 })
  const inside = `${name}n`
  const outside = `${name}h`
  let removed = false
  const namespace: CutOffNamespace = {
    name, hostAddress, address, cidr: `${base}/30`,
    async cut() { await ip('netns', 'exec', name, 'ip', 'link', 'set', inside, 'down') },
    async remove() {
      if (removed) return
      removed = true
      await removeNamespace(name)
    },
  }
  try {
    await ip('netns', 'add', name)
    await ip('link', 'add', outside, 'type', 'veth', 'peer', 'name', inside)
    await ip('link', 'set', inside, 'netns', name)
    await ip('addr', 'add', `${hostAddress}/30`, 'dev', outside)
    await ip('link', 'set', outside, 'up')
    await ip('netns', 'exec', name, 'ip', 'addr', 'add', `${address}/30`, 'dev', inside)
    await ip('netns', 'exec', name, 'ip', 'link', 'set', inside, 'up')
    await ip('netns', 'exec', name, 'ip', 'link', 'set', 'lo', 'up')
    return namespace
  } catch (err) {
    await namespace.remove()
    throw err
  }
}

/** The namespace goes, and its end of the veth pair with it, which takes the machine's end too. */
async function removeNamespace(name: string): Promise<void> {
  await run('ip', ['netns', 'del', name]).catch(() => {})
  await run('ip', ['link', 'del', `${name}h`]).catch(() => {})
}

async function removeOrphans(): Promise<void> {
  const { stdout } = await run('ip', ['netns', 'list'])
  for (const line of stdout.split('\n')) {
    const name = line.trim().split(/\s+/)[0] ?? ''
    const creator = NAME.exec(name)?.[1]
    if (creator === undefined || processAlive(Number(creator))) continue
    await removeNamespace(name)
  }
}
