/**
 * The cluster's Redis (Debian's redis-server), on a host of its own with a password: the
 * shared rate limits of every KNS node. Never the machine's own 127.0.0.1:6379.
 */
import { mkdirSync } from 'node:fs'
import { createConnection } from 'node:net'
import { join } from 'node:path'
import { baseEnv, chownTree, type Host, type HostProcess } from './hosts.ts'
import { waitFor } from './wait.ts'

export const REDIS_PORT = 6379

export interface Redis {
  host: Host
  process: HostProcess
  /** redis://:<password>@<address>:6379 */
  url: string
  /** AUTH and PING: true when it answers PONG. */
  ping(): Promise<boolean>
  /** Starts it again (after a stop or a kill): it keeps nothing (rate limits are short-lived). */
  restart(): Promise<void>
}

export async function startRedis(host: Host, password: string): Promise<Redis> {
  const dir = join(host.dir, 'redis')
  mkdirSync(dir, { recursive: true })
  chownTree(dir, 'redis')
  const launch = () => host.spawn('redis', 'redis-server', [
    '--bind', host.address, '--port', String(REDIS_PORT), '--requirepass', password, '--dir', dir,
    // Rate-limit buckets only: nothing worth a disk write.
    '--save', '', '--appendonly', 'no', '--daemonize', 'no', '--logfile', '',
  ], { user: 'redis', env: baseEnv() })
  const ping = () => new Promise<boolean>((resolve) => {
    const connection = createConnection({ host: host.address, port: REDIS_PORT })
    let answer = ''
    connection.setTimeout(1000, () => { connection.destroy(); resolve(false) })
    connection.on('connect', () => connection.write(`AUTH ${password}\r\nPING\r\n`))
    connection.on('data', (chunk) => {
      answer += chunk.toString()
      if (answer.includes('+PONG') || answer.includes('-')) {
        connection.destroy()
        resolve(answer.includes('+OK\r\n+PONG'))
      }
    })
    connection.on('error', () => resolve(false))
  })
  const redis: Redis = {
    host, ping,
    process: launch(),
    url: `redis://:${password}@${host.address}:${REDIS_PORT}`,
    async restart() {
      if (redis.process.running()) await redis.process.stop()
      redis.process = launch()
      await waitReady(redis)
    },
  }
  await waitReady(redis)
  return redis
}

function waitReady(redis: Redis): Promise<true> {
  return waitFor('Redis', async () => ((await redis.ping()) ? true : undefined), { timeoutMs: 15_000, processes: [redis.process] })
}
