/**
 * Random usage, ingested in random order and random batches (late sessions, re-sent
 * batches), must give exactly what a direct computation over the raw sessions gives, for
 * periods of every bucket width at arbitrary offsets.
 */
import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import { prng } from '../../../src/stats/demo/demo.ts'
import { normalizePeriod } from '../../../src/stats/time.ts'
import { startHarness, type Harness } from '../../helpers.ts'
import { expectedGlobal, expectedRange, observedRange, type RawSession } from './oracle.ts'

const HOUR = 3_600_000
const DAY = 24 * HOUR
const T0 = Date.UTC(2024, 0, 3, 7, 13)
const SPAN = 400 * DAY
const SEED = Number(process.env.STATS_ORACLE_SEED ?? 20240601)

const random = prng(SEED)
const pick = (n: number) => Math.floor(random() * n)

function makeSessions(count: number): RawSession[] {
  const out: RawSession[] = []
  for (let i = 0; i < count; i++) {
    // A third of the sessions in one busy week, so that hourly periods see several clients.
    const start = random() < 0.35 ? T0 + 200 * DAY + Math.floor(random() * 7 * DAY) : T0 + Math.floor(random() * SPAN)
    out.push({
      sessionId: `r-${i}`, network: random() < 0.6 ? 'gateway' : 'wifi', nodeUid: `n${pick(5)}`,
      clientId: `client-${pick(random() < 0.5 ? 8 : 40)}`, start, end: start + pick(3 * HOUR),
      bytesUp: pick(5_000_000), bytesDown: pick(50_000_000),
    })
  }
  return out
}

let h: Harness
const sessions = makeSessions(900)

before(async () => {
  h = await startHarness()
  const key = await h.key({ scopes: ['stats'] })
  const shuffled = [...sessions].sort(() => random() - 0.5)
  let offset = 0
  while (offset < shuffled.length) {
    const batch = shuffled.slice(offset, offset + 1 + pick(60))
    offset += batch.length
    // Re-send some earlier sessions with each batch: they must change nothing.
    const resent = shuffled.slice(0, offset - batch.length).filter(() => random() < 0.02)
    const res = await h.app.inject({ method: 'POST', url: '/api/v1/admin/usage', headers: { 'x-api-key': key }, payload: [...batch, ...resent] })
    assert.equal(res.statusCode, 200, res.body)
    assert.deepEqual(res.json(), { received: batch.length + resent.length, inserted: batch.length, duplicates: resent.length })
  }
})

after(async () => {
  await h?.close()
})

test(`global totals equal the raw computation (seed ${SEED})`, async () => {
  const res = await h.app.inject({ method: 'GET', url: '/api/v1/UsageGraph/global-public-stats' })
  const body = res.json()
  const expected = expectedGlobal(sessions)
  assert.equal(body.totalUniqueClients, expected.totalUniqueClients)
  assert.equal(body.totalSessions, expected.totalSessions)
  assert.equal(Math.round(body.totalGB * 1e9), Math.round(expected.totalGB * 1e9))
})

test(`every field of range stats equals the raw computation, for periods of every width (seed ${SEED})`, async () => {
  const lengths = [() => 1 + pick(3 * DAY), () => 3 * DAY + 1 + pick(177 * DAY), () => 180 * DAY + 1 + pick(300 * DAY)]
  let checked = 0
  for (let i = 0; i < 36; i++) {
    const length = lengths[i % 3]!()
    // Mostly around the busy week, sometimes anywhere (including before the first session).
    const start = (random() < 0.5 ? T0 + 198 * DAY : T0 - 10 * DAY) + pick(random() < 0.5 ? 6 * DAY : SPAN)
    const network = i % 2 === 0 ? 'gateway' : 'wifi'
    const startText = new Date(start).toISOString()
    const endText = new Date(start + length).toISOString()
    const res = await h.app.inject({ method: 'POST', url: `/api/v1/UsageGraph/global-public-${network}-stats`, payload: { start: startText, end: endText } })
    assert.equal(res.statusCode, 200, res.body)
    const period = normalizePeriod(startText, endText, Date.now())
    assert.deepEqual(observedRange(res.json()), expectedRange(sessions, network, period), `${network} ${startText} .. ${endText}`)
    checked += expectedRange(sessions, network, period).currentSessions
  }
  assert.ok(checked > 300, `the periods covered sessions (${checked})`)
})

test('series sum to the period totals', async () => {
  const res = await h.app.inject({ method: 'POST', url: '/api/v1/UsageGraph/global-public-gateway-stats', payload: { start: new Date(T0).toISOString(), end: new Date(T0 + SPAN).toISOString() } })
  const p = res.json().periodUsage
  assert.equal(p.sessions.reduce((sum: number, [, v]: number[]) => sum + v!, 0), p.currentSessions)
  assert.equal(p.dataUsageMB.reduce((sum: number, [, v]: number[]) => sum + Math.round(v! * 1e6), 0), Math.round(p.currentUsageMB * 1e6))
  assert.ok(p.currentClients <= p.clients.reduce((sum: number, [, v]: number[]) => sum + v!, 0))
})
