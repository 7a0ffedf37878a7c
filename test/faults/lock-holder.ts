/**
 * A process that takes a LeaderLock and reports, one JSON line each, when it holds it and when
 * it stops holding it (`held` polled every 50 ms), with the time: run by the fault tests
 * inside a network namespace, to be cut off. Arguments: the database URL and the lock's name.
 */
import { LeaderLock } from '../../src/db/leader-lock.ts'
import { PostgresDatabase } from '../../src/db/postgres.ts'

const [url, name] = process.argv.slice(2) as [string, string]
// The test holds our stdin: when it goes (even killed), so do we.
process.stdin.on('end', () => process.exit(0)).resume()
const db = new PostgresDatabase(url)
const lock = new LeaderLock(db, name)
const say = (event: string) => process.stdout.write(`${JSON.stringify({ event, at: Date.now() })}\n`)
let held = false
for (;;) {
  // As the ledger watcher does: ask now and then; a failure is a moment without the lock.
  const now = await lock.acquire().catch(() => false) && lock.held
  if (now !== held) say(now ? 'held' : 'lost')
  held = now
  await new Promise((resolve) => setTimeout(resolve, 50))
}
