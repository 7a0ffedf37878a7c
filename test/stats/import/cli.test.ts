/**
 * `kns stats import` and `kns seed --demo`, run as the real binary: every file format, re-runs
 * after an interruption that count nothing twice, bad lines, and deterministic demo data.
 */
import assert from 'node:assert/strict'
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { after, before, test } from 'node:test'
import { openService, type Service } from '../../../src/service.ts'
import { globalStats, rangeStats, wifiNodes } from '../../../src/stats/public/queries.ts'
import { normalizePeriod } from '../../../src/stats/time.ts'
import { freshDatabaseEnv, type TestEnv } from '../../helpers.ts'
import { killAll, oneJson, runKns, type RunResult } from '../../support/process.ts'

let fresh: TestEnv
let other: TestEnv
const opened: Service[] = []

before(async () => {
  // As an operator runs an import before the server ever started: with the server's KNS_SECRET
  // (client hashes derive from it; a one-off command never generates the secret itself).
  fresh = await freshDatabaseEnv({ KNS_SECRET: 'stats-cli-secret-0123456789abcdef-0123' })
  other = await freshDatabaseEnv({ KNS_SECRET: 'stats-cli-secret-0123456789abcdef-0123' })
  // The CLI works on an existing database only (`kns migrate` creates one).
  for (const env of [fresh, other]) assert.equal((await runKns(['migrate'], env.env)).code, 0)
})

after(async () => {
  await killAll()
  for (const s of opened) await s.close()
  await fresh?.cleanup()
  await other?.cleanup()
})

const kns = (env: TestEnv, ...args: string[]) => runKns(args, env.env, { timeoutMs: 60_000 })

function ok(result: RunResult): Record<string, unknown> {
  assert.equal(result.code, 0, `exit ${result.code}\nstdout: ${result.stdout}\nstderr: ${result.stderr}`)
  return oneJson(result)
}

async function service(env: TestEnv): Promise<Service> {
  const s = await openService(env.config)
  opened.push(s)
  return s
}

const SEED_ARGS = ['--demo', '--sessions', '3000', '--days', '10', '--numbers', '40', '--seed', '5', '--until', '2025-01-10']

test('seed --demo --out is deterministic, and stats import reads what it wrote; a re-run after an interruption counts nothing twice', async () => {
  const dirA = join(fresh.env.DATA_DIR!, 'demo-a')
  const dirB = join(fresh.env.DATA_DIR!, 'demo-b')
  const a = ok(await kns(fresh, 'seed', ...SEED_ARGS, '--out', dirA, '--json'))
  ok(await kns(fresh, 'seed', ...SEED_ARGS, '--out', dirB, '--json'))
  assert.equal(a.sessions, 3000)
  for (const file of ['gateways.csv', 'wifi-nodes.csv', 'usage.csv']) {
    assert.equal(readFileSync(join(dirA, file), 'utf8'), readFileSync(join(dirB, file), 'utf8'), file)
  }
  // An interrupted import: only the first 1200 lines made it.
  const usage = readFileSync(join(dirA, 'usage.csv'), 'utf8').split('\n')
  const partial = join(dirA, 'partial.csv')
  writeFileSync(partial, `${usage.slice(0, 1201).join('\n')}\n`)
  const first = ok(await kns(fresh, 'stats', 'import', '--usage', partial, '--json'))
  assert.deepEqual({ ...(first.usage as object), seconds: 0, perSecond: 0 }, { read: 1200, inserted: 1200, duplicates: 0, seconds: 0, perSecond: 0, weeks: { fromMemory: 1, readBack: 0 } })
  const rerun = ok(await kns(fresh, 'stats', 'import', '--gateways', join(dirA, 'gateways.csv'), '--wifi-nodes', join(dirA, 'wifi-nodes.csv'),
    '--usage', join(dirA, 'usage.csv'), '--json'))
  assert.deepEqual((rerun.gateways as { read: number }).read, 8)
  const u = rerun.usage as { read: number; inserted: number; duplicates: number }
  assert.deepEqual([u.read, u.inserted, u.duplicates], [3000, 1800, 1200])
  // The same files seeded straight into another database give the same statistics.
  const seeded = ok(await kns(other, 'seed', ...SEED_ARGS, '--json'))
  assert.equal(seeded.inserted, 3000)
  assert.equal(seeded.numbersInserted, 40)
  const again = ok(await kns(other, 'seed', ...SEED_ARGS, '--json'))
  assert.equal(again.inserted, 0, 'seeding twice adds nothing')
  const [x, y] = [await service(fresh), await service(other)]
  assert.deepEqual(await globalStats(x.db), await globalStats(y.db))
  assert.equal((await globalStats(x.db)).totalSessions, 3000)
  const period = normalizePeriod('2024-12-30T00:00:00Z', '2025-01-10T00:00:00Z', Date.now())
  for (const network of ['gateway', 'wifi'] as const) assert.deepEqual(await rangeStats(x.db, network, period), await rangeStats(y.db, network, period))
  assert.deepEqual(await wifiNodes(x.db), await wifiNodes(y.db))
  const signups = await y.db.get<{ n: number; countries: number }>('SELECT COUNT(*) AS n, COUNT(DISTINCT country) AS countries FROM numbers')
  assert.equal(Number(signups?.n), 40)
  assert.ok(Number(signups?.countries) > 5)
})

test('NDJSON and JSON array files; a bad line fails the import with its line number', async () => {
  const dir = fresh.env.DATA_DIR!
  const start = Date.UTC(2024, 5, 1)
  const row = (i: number) => ({ sessionId: `f-${i}`, network: 'wifi', nodeUid: 'w9', clientId: `x${i % 2}`, start: new Date(start + i * 1000).toISOString(), end: start + i * 1000 + 1, bytesUp: 10, bytesDown: 20 })
  writeFileSync(join(dir, 'u.ndjson'), `${[0, 1, 2].map((i) => JSON.stringify(row(i))).join('\n')}\n\n`)
  writeFileSync(join(dir, 'u.json'), JSON.stringify([row(3), row(4), row(0)], null, 2))
  writeFileSync(join(dir, 'nodes.json'), JSON.stringify([{ name: 'Pier "7", north', uid: 'w9', status: 'Online', model: 'm', wifi_level: 'WiFi 6', lat: 1.5, lon: 2.5 }]))
  const nd = ok(await kns(fresh, 'stats', 'import', '--usage', join(dir, 'u.ndjson'), '--wifi-nodes', join(dir, 'nodes.json'), '--json'))
  assert.deepEqual([(nd.usage as { inserted: number }).inserted, (nd.wifiNodes as { upserted: number }).upserted], [3, 1])
  const js = ok(await kns(fresh, 'stats', 'import', '--usage', join(dir, 'u.json'), '--json'))
  assert.deepEqual([(js.usage as { inserted: number }).inserted, (js.usage as { duplicates: number }).duplicates], [2, 1])
  const s = await service(fresh)
  assert.deepEqual((await wifiNodes(s.db)).find((n) => n.uid === 'w9')?.name, 'Pier "7", north')

  writeFileSync(join(dir, 'bad.ndjson'), `${JSON.stringify(row(7))}\n{"oops"\n${JSON.stringify({ ...row(8), bytesUp: -1 })}\n`)
  const bad = await kns(fresh, 'stats', 'import', '--usage', join(dir, 'bad.ndjson'), '--json')
  assert.equal(bad.code, 2, 'invalid input: exit 2')
  assert.equal(bad.stdout, '')
  const error = JSON.parse(bad.stderr.trim().split('\n').pop()!).error
  assert.equal(error.code, 'INVALID_REQUEST')
  assert.match(error.message, /line 2: not valid JSON/)
  assert.match(error.message, /line 3: bytesUp must be >= 0/)
  const stored = await s.db.get<{ n: number }>("SELECT COUNT(*) AS n FROM stats_sessions WHERE session_id = 'f-7'")
  assert.equal(Number(stored?.n), 0, 'nothing of the bad batch was stored')

  const usage = await kns(fresh, 'stats', 'import', '--json')
  assert.equal(usage.code, 2)
  const unknown = await kns(fresh, 'stats', 'import', '--usage', join(dir, 'u.txt'), '--json')
  assert.equal(unknown.code, 2)
  assert.match(unknown.stderr, /unknown file type/)
})

test('an import before the first start, without KNS_SECRET: the import makes and pins the secret, and the server then starts with it', async () => {
  const bare = await freshDatabaseEnv()
  try {
    const env = { ...bare.env }
    delete env.KNS_SECRET
    assert.equal((await runKns(['migrate'], env)).code, 0)
    const dir = join(bare.env.DATA_DIR!, 'demo')
    assert.equal((await runKns(['seed', ...SEED_ARGS, '--out', dir, '--json'], env)).code, 0)
    const imported = await runKns(['stats', 'import', '--gateways', join(dir, 'gateways.csv'), '--usage', join(dir, 'usage.csv'), '--json'], env, { timeoutMs: 60_000 })
    assert.equal(imported.code, 0, imported.stderr)
    // The server finds the secret the import made, and keeps it.
    const server = await service({ ...bare, env, config: { ...bare.config, knsSecret: undefined } })
    assert.ok(await server.db.get(`SELECT value FROM settings WHERE name = 'server_secret'`), 'the import pinned a secret')
    assert.ok(await server.db.get(`SELECT value FROM settings WHERE name = 'server_secret_fingerprint'`))
  } finally {
    await bare.cleanup()
  }
})
