/**
 * The bulk path of `kns stats import` (raw sessions first, rollups recomputed per week) must
 * leave exactly the statistics of a direct computation, mixed with API ingestion, after an
 * interruption, and whatever the file order.
 */
import assert from 'node:assert/strict'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { after, before, test } from 'node:test'
import { insertRawSessions } from '../../../src/stats/import/store-and-rebuild.ts'
import { createClientHasher } from '../../../src/stats/ingest/client-hash.ts'
import { prng } from '../../../src/stats/demo/demo.ts'
import { importUsage } from '../../../src/stats/import/run-import.ts'
import { globalStats, rangeStats } from '../../../src/stats/public/queries.ts'
import { normalizePeriod } from '../../../src/stats/time.ts'
import { startHarness, type Harness } from '../../helpers.ts'
import { expectedGlobal, expectedRange, observedRange, type RawSession } from '../public/oracle.ts'

const HOUR = 3_600_000
const DAY = 24 * HOUR
const T0 = Date.UTC(2024, 2, 6, 9, 41)

let seed = 99
const random = () => {
  seed = (seed * 1103515245 + 12345) % 2147483648
  return seed / 2147483648
}
const pick = (n: number) => Math.floor(random() * n)

const sessions: RawSession[] = Array.from({ length: 700 }, (_, i) => {
  const start = T0 + (random() < 0.4 ? 30 * DAY + pick(4 * DAY) : pick(300 * DAY))
  return {
    sessionId: `b-${i}`, network: random() < 0.5 ? 'gateway' : 'wifi', nodeUid: 'n', clientId: `dev-${pick(random() < 0.5 ? 6 : 50)}`,
    start, end: start + 1000, bytesUp: pick(1e6), bytesDown: pick(1e7),
  }
})

let h: Harness

before(async () => {
  h = await startHarness()
})

after(async () => {
  await h?.close()
})

test('API batches, an interrupted bulk import, more API batches, then the import run again: exact statistics', async () => {
  const key = await h.key({ scopes: ['stats'] })
  const hash = createClientHasher(h.service.secret)
  const api = (list: RawSession[]) => h.app.inject({ method: 'POST', url: '/api/v1/admin/usage', headers: { 'x-api-key': key }, payload: list })
  // The API has the first 150 days; the file has the rest, so recomputation starts mid-way and
  // needs each client's activity from before it.
  const early = sessions.filter((s) => s.start < T0 + 150 * DAY).sort(() => random() - 0.5)
  const late = sessions.filter((s) => s.start >= T0 + 150 * DAY).sort(() => random() - 0.5)
  const [first, second, third] = [early.slice(0, -60), [...early.slice(-60), ...late.slice(0, 40)], late.slice(40)]
  assert.equal((await api(first)).statusCode, 200)
  // An import interrupted after its raw batches, before any rollup was recomputed.
  assert.equal(await insertRawSessions(h.service.db, hash, third.slice(0, 100)), 100)
  const pending = await h.service.db.get<{ rebuild_from: number | null }>('SELECT rebuild_from FROM stats_meta WHERE id = 1')
  assert.notEqual(pending?.rebuild_from, null)
  assert.equal((await api(second)).statusCode, 200)
  // The whole file again (in another order, with sessions the API already sent).
  const file = join(h.env.DATA_DIR!, 'rest.ndjson')
  writeFileSync(file, [...third, ...first.slice(0, 20)].sort(() => random() - 0.5).map((s) => JSON.stringify(s)).join('\n'))
  const result = await importUsage(h.service.db, h.service.secret, file)
  assert.deepEqual({ read: result.read, inserted: result.inserted }, { read: third.length + 20, inserted: third.length - 100 })
  const done = await h.service.db.get<{ rebuild_from: number | null }>('SELECT rebuild_from FROM stats_meta WHERE id = 1')
  assert.equal(done?.rebuild_from, null)

  const global = await globalStats(h.service.db)
  const expected = expectedGlobal(sessions)
  assert.equal(global.totalSessions, expected.totalSessions)
  assert.equal(global.totalUniqueClients, expected.totalUniqueClients)
  for (const [start, length] of [[T0 + 30 * DAY, 2 * DAY], [T0 + 29 * DAY + 5 * HOUR, 9 * DAY], [T0 - 3 * DAY, 200 * DAY], [T0, 320 * DAY]] as const) {
    for (const network of ['gateway', 'wifi'] as const) {
      const period = normalizePeriod(new Date(start).toISOString(), new Date(start + length).toISOString(), Date.now())
      assert.deepEqual(observedRange(await rangeStats(h.service.db, network, period)), expectedRange(sessions, network, period), `${network} ${start} +${length}`)
    }
  }
})

test('a file in time order: weeks recomputed from memory as the import goes; a re-run and a late row fall back to reading back; exact', async () => {
  const fresh = await startHarness()
  try {
    const rnd = prng(5150)
    const W0 = Date.UTC(2024, 8, 2) // a Monday
    const ordered: RawSession[] = Array.from({ length: 600 }, (_, i) => {
      const start = W0 + Math.floor((i + rnd()) * (20 * 7 * DAY) / 600)
      return {
        sessionId: `o-${i}`, network: rnd() < 0.6 ? 'gateway' : 'wifi', nodeUid: 'n', clientId: `od-${Math.floor(30 * rnd() ** 2)}`,
        start, end: start + 1000, bytesUp: Math.floor(rnd() * 1e6), bytesDown: Math.floor(rnd() * 1e7),
      }
    })
    const csv = (list: RawSession[]) => ['sessionId,network,nodeUid,clientId,start,end,bytesUp,bytesDown',
      ...list.map((s) => [s.sessionId, s.network, s.nodeUid, s.clientId, s.start, s.end, s.bytesUp, s.bytesDown].join(','))].join('\n')
    const file = join(fresh.env.DATA_DIR!, 'ordered.csv')
    writeFileSync(file, csv(ordered))
    const check = async (stored: RawSession[], label: string) => {
      const global = await globalStats(fresh.service.db)
      assert.equal(global.totalUniqueClients, expectedGlobal(stored).totalUniqueClients, label)
      for (const [start, length] of [[W0, 20 * 7 * DAY], [W0 + 30 * DAY, 3 * DAY], [W0 + 11 * DAY, 60 * DAY]] as const) {
        for (const network of ['gateway', 'wifi'] as const) {
          const period = normalizePeriod(new Date(start).toISOString(), new Date(start + length).toISOString(), Date.now())
          assert.deepEqual(observedRange(await rangeStats(fresh.service.db, network, period)), expectedRange(stored, network, period), `${label}: ${network} ${start} +${length}`)
        }
      }
    }

    const first = await importUsage(fresh.service.db, fresh.service.secret, file, { batchSize: 40 })
    assert.equal(first.inserted, 600)
    assert.ok(first.weeks.fromMemory >= 20, `weeks from memory: ${JSON.stringify(first.weeks)}`)
    assert.equal(first.weeks.readBack, 0)
    await check(ordered, 'in order')

    const again = await importUsage(fresh.service.db, fresh.service.secret, file, { batchSize: 40 })
    assert.deepEqual([again.inserted, again.weeks.fromMemory], [0, 0])
    await check(ordered, 're-run')

    // More weeks in order, with one session of an early week in the middle of the file.
    const more: RawSession[] = ordered.slice(0, 200).map((s, i) => ({ ...s, sessionId: `m-${i}`, start: s.start + 20 * 7 * DAY, end: s.end + 20 * 7 * DAY }))
    more.splice(120, 0, { ...ordered[5]!, sessionId: 'late-one', clientId: 'od-late' })
    const file2 = join(fresh.env.DATA_DIR!, 'more.csv')
    writeFileSync(file2, csv(more))
    const third = await importUsage(fresh.service.db, fresh.service.secret, file2, { batchSize: 40 })
    assert.equal(third.inserted, 201)
    assert.ok(third.weeks.readBack > 0, `weeks read back: ${JSON.stringify(third.weeks)}`)
    await check([...ordered, ...more], 'with a late session')

    // More clients than the reader may number: from there on, weeks are read back.
    const many: RawSession[] = ordered.slice(0, 150).map((s, i) => ({ ...s, sessionId: `n-${i}`, start: s.start + 40 * 7 * DAY, end: s.end + 40 * 7 * DAY }))
    const file3 = join(fresh.env.DATA_DIR!, 'many.csv')
    writeFileSync(file3, csv(many))
    const fourth = await importUsage(fresh.service.db, fresh.service.secret, file3, { batchSize: 40, clientLimit: 8 })
    assert.equal(fourth.inserted, 150)
    assert.ok(fourth.weeks.readBack > 0, `weeks read back: ${JSON.stringify(fourth.weeks)}`)
    await check([...ordered, ...more, ...many], 'past the client limit')
  } finally {
    await fresh.close()
  }
})

test('a file out of order into an empty database: every week from memory, sorted there; exact', async () => {
  const fresh = await startHarness()
  try {
    const file = join(fresh.env.DATA_DIR!, 'shuffled.ndjson')
    // Many sessions per client and hour, so that hours repeat and arrive out of order.
    const busy: RawSession[] = sessions.map((s, i) => ({ ...s, sessionId: `busy-${i}`, start: T0 + (s.start - T0) % (9 * DAY), end: T0 + (s.start - T0) % (9 * DAY) + 1000 }))
    const shuffled = [...busy].sort(() => random() - 0.5)
    writeFileSync(file, shuffled.map((s) => JSON.stringify(s)).join('\n'))
    const result = await importUsage(fresh.service.db, fresh.service.secret, file)
    assert.equal(result.inserted, busy.length)
    assert.deepEqual([result.weeks.readBack, result.weeks.fromMemory > 0], [0, true])
    for (const [start, length] of [[T0, 9 * DAY], [T0 + 2 * DAY + 7 * HOUR, 2 * DAY]] as const) {
      for (const network of ['gateway', 'wifi'] as const) {
        const period = normalizePeriod(new Date(start).toISOString(), new Date(start + length).toISOString(), Date.now())
        assert.deepEqual(observedRange(await rangeStats(fresh.service.db, network, period)), expectedRange(busy, network, period), `${network} ${start} +${length}`)
      }
    }
  } finally {
    await fresh.close()
  }
})

test('a file starting in a week the database already held: that week read back, the later ones from memory; exact', async () => {
  const fresh = await startHarness()
  try {
    const key = await fresh.key({ scopes: ['stats'] })
    const W0 = Date.UTC(2024, 8, 2) // a Monday
    const at = (week: number, hour: number) => W0 + week * 7 * DAY + hour * HOUR
    const session = (id: string, clientId: string, start: number, network: 'gateway' | 'wifi' = 'gateway'): RawSession =>
      ({ sessionId: id, network, nodeUid: 'n', clientId, start, end: start + 1000, bytesUp: 5, bytesDown: 7 })
    // Stored through the API: clients only the database knows, met when the import reads week 0 back.
    const stored = ['old-a', 'old-b', 'old-c'].map((c, i) => session(`api-${i}`, c, at(0, 1 + i)))
    assert.equal((await fresh.app.inject({ method: 'POST', url: '/api/v1/admin/usage', headers: { 'x-api-key': key }, payload: stored })).statusCode, 200)
    // The file: week 0, then new clients week after week (so the reader's numbers and the import's differ).
    const file: RawSession[] = [session('f-0', 'new-0', at(0, 30))]
    for (let week = 1; week <= 5; week++) {
      for (let k = 0; k < 3; k++) file.push(session(`f-${week}-${k}`, k === 0 ? 'old-b' : `new-${week}-${k}`, at(week, 10 + k), k === 2 ? 'wifi' : 'gateway'))
    }
    const path = join(fresh.env.DATA_DIR!, 'after-api.csv')
    writeFileSync(path, ['sessionId,network,nodeUid,clientId,start,end,bytesUp,bytesDown',
      ...file.map((s) => [s.sessionId, s.network, s.nodeUid, s.clientId, s.start, s.end, s.bytesUp, s.bytesDown].join(','))].join('\n'))
    const result = await importUsage(fresh.service.db, fresh.service.secret, path, { batchSize: 2 })
    assert.equal(result.inserted, file.length)
    assert.ok(result.weeks.readBack >= 1 && result.weeks.fromMemory >= 4, JSON.stringify(result.weeks))
    const all = [...stored, ...file]
    assert.equal((await globalStats(fresh.service.db)).totalUniqueClients, expectedGlobal(all).totalUniqueClients)
    for (const network of ['gateway', 'wifi'] as const) {
      for (const [start, length] of [[W0, 6 * 7 * DAY], [at(2, 0), 7 * DAY]] as const) {
        const period = normalizePeriod(new Date(start).toISOString(), new Date(start + length).toISOString(), Date.now())
        assert.deepEqual(observedRange(await rangeStats(fresh.service.db, network, period)), expectedRange(all, network, period), `${network} ${start}`)
      }
    }
  } finally {
    await fresh.close()
  }
})
