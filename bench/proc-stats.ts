/**
 * Readings from /proc for the soak benchmark (bench/soak.bench.ts): a process's resident
 * memory, the machine's CPU time and CPU pressure, and PostgreSQL's CPU time, so each minute
 * can tell the server's own cost from other work competing for the same two cores.
 */
import { readdirSync, readFileSync } from 'node:fs'

/** CPU time the whole machine has been busy, all cores, µs (from /proc/stat, in USER_HZ = 100 ticks). */
export function machineBusyUs(): number {
  const [user, nice, system, , , irq, softirq, steal] = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0]!.trim().split(/\s+/).slice(1).map(Number)
  return (user! + nice! + system! + irq! + softirq! + steal!) * 10_000
}

/** CPU time of each PostgreSQL process alive now, µs by pid (a backend's time is lost when it exits). */
export function postgresCpuUs(): Map<string, number> {
  const byPid = new Map<string, number>()
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    let stat: string
    try { stat = readFileSync(`/proc/${entry}/stat`, 'utf8') } catch { continue }
    // comm is in parentheses and may hold spaces; utime and stime are fields 14 and 15.
    const close = stat.lastIndexOf(')')
    if (stat.slice(stat.indexOf('(') + 1, close) !== 'postgres') continue
    const fields = stat.slice(close + 2).split(' ')
    byPid.set(entry, (Number(fields[11]) + Number(fields[12])) * 10_000)
  }
  return byPid
}

/** Time some task was waiting for a CPU, µs (pressure stall information); null without PSI. */
export function cpuPressureUs(): number | null {
  try {
    return Number(/^some .*total=(\d+)/m.exec(readFileSync('/proc/pressure/cpu', 'utf8'))![1])
  } catch {
    return null
  }
}

export function rssBytes(pid: number): number {
  const match = /^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))
  if (match === null) throw new Error(`no VmRSS in /proc/${pid}/status`)
  return Number(match[1]) * 1024
}

export interface CpuSample { serverUs: number; machineUs: number; postgres: Map<string, number>; pressureUs: number | null }

/** What each figure grew by between two samples, µs (PostgreSQL: over the processes alive at both, and new ones). */
export function cpuDelta(before: CpuSample, after: CpuSample) {
  let postgresUs = 0
  for (const [pid, us] of after.postgres) postgresUs += us - (before.postgres.get(pid) ?? 0)
  const pressureUs = before.pressureUs === null || after.pressureUs === null ? null : after.pressureUs - before.pressureUs
  return { serverUs: after.serverUs - before.serverUs, machineUs: after.machineUs - before.machineUs, postgresUs, pressureUs }
}
