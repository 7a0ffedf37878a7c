/**
 * The INVITE server transactions' clock (RFC 3261 17.2.1) on a mocked clock: 100 Trying after
 * 200 ms (only to a confirmed source), the final response again at T1, 2T1, ... at most T2 apart
 * until the ACK or Timer H over UDP once a 100 Trying went out (else sent once: the client's
 * own retransmissions get it again), transactions forgotten at Timer H; checked against a model of those rules for random
 * schedules of many transactions at once (each tick visits only what is due, so one
 * transaction's timers must not depend on the others').
 */
import assert from 'node:assert/strict'
import { afterEach, beforeEach, mock, test } from 'node:test'
import fc from 'fast-check'
import { InviteTransactions } from '../../src/sip/transactions.ts'
import type { SipRequest } from '../../src/sip/message.ts'
import { replayParameters } from '../support/fuzz-seed.ts'

const TICK = 50
const STEP = 10
const request: SipRequest = { method: 'INVITE', uri: 'sip:+12025550100@kns', headers: new Map(), body: Buffer.alloc(0) }
const source = { address: '192.0.2.1', port: 5060 }

beforeEach(() => mock.timers.enable({ apis: ['setInterval', 'Date'], now: 0 }))
afterEach(() => mock.timers.reset())

interface Plan {
  beginAt: number
  /** When the final response is ready, after the INVITE (none: never). */
  finalAfter: number | null
  /** When the ACK comes, after the final response (none: never). */
  ackAfter: number | null
  udp: boolean
  /** The source proved it receives our answers: it may be sent a 100 Trying (and then retransmissions). */
  confirmed: boolean
}

interface Seen { trying: number[]; finals: number[]; forgottenBy: number | null }

/** Runs the plans on the mocked clock in STEP ms steps; what each transaction sent, and when. */
function run(plans: Plan[], until: number): Seen[] {
  const transactions = new InviteTransactions(() => Date.now()) // the mocked clock
  const seen: Seen[] = plans.map(() => ({ trying: [], finals: [], forgottenBy: null }))
  const tracked = new Map<number, ReturnType<InviteTransactions['begin']>>()
  for (let now = 0; now <= until; now += STEP) {
    plans.forEach((plan, i) => {
      const key = `t${i}`
      if (now === plan.beginAt) {
        const trying = plan.confirmed ? () => seen[i]!.trying.push(Date.now()) : undefined
        tracked.set(i, transactions.begin(key, request, source, 100, () => seen[i]!.finals.push(Date.now()), plan.udp, trying, 'tag'))
      }
      if (plan.finalAfter !== null && now === plan.beginAt + plan.finalAfter) tracked.get(i)!.finish(Buffer.from('SIP/2.0 302'))
      if (plan.finalAfter !== null && plan.ackAfter !== null && now === plan.beginAt + plan.finalAfter + plan.ackAfter) transactions.acknowledged(key, 'tag')
      if (now > plan.beginAt && seen[i]!.forgottenBy === null && !transactions.has(key)) seen[i]!.forgottenBy = now
    })
    mock.timers.tick(STEP)
  }
  transactions.clear()
  return seen
}

const T1 = 500
const T2 = 4000
const H = 64 * T1
/** How late a duty may be: within the tick after its time, and the step the test moves by. */
const LATE = TICK + STEP

function check(plan: Plan, seen: Seen): void {
  const at = (offset: number) => plan.beginAt + offset
  // 100 Trying: once, 200 ms after the INVITE, unless the final response was ready by then.
  // (An answer at the 200th ms itself may come after the tick that sent the 100 Trying.)
  if (!plan.confirmed) assert.deepEqual(seen.trying, [], 'no 100 Trying to an unconfirmed source')
  else if (plan.finalAfter !== null && plan.finalAfter < 200) assert.deepEqual(seen.trying, [], 'no 100 Trying when answered in time')
  else if (plan.finalAfter === null || plan.finalAfter > 200 + LATE) {
    assert.equal(seen.trying.length, 1, `one 100 Trying: ${seen.trying}`)
    assert.ok(seen.trying[0]! >= at(200) && seen.trying[0]! <= at(200 + LATE), `100 Trying at ${seen.trying[0]! - plan.beginAt}`)
  } else assert.ok(seen.trying.length <= 1)

  if (plan.finalAfter === null) {
    assert.deepEqual(seen.finals, [])
    // Forgotten at Timer H after the INVITE.
    assert.ok(seen.forgottenBy !== null && seen.forgottenBy >= at(H) && seen.forgottenBy <= at(H + LATE), `forgotten at ${seen.forgottenBy}`)
    return
  }
  const final = at(plan.finalAfter)
  assert.equal(seen.finals[0], final, 'the final response goes out when ready')
  const ack = plan.ackAfter === null ? Infinity : final + plan.ackAfter
  const end = Math.min(ack, final + H)
  if (!plan.udp) assert.deepEqual(seen.finals, [final], 'over TCP it is sent once')
  else if (seen.trying.length === 0) assert.deepEqual(seen.finals, [final], 'without a 100 Trying it is sent once (the client retransmits its INVITE)')
  else {
    // Again at T1, 2T1, 4T1, then every T2, until the ACK or Timer H.
    let interval = T1
    for (let k = 1; k < seen.finals.length; k++) {
      const gap = seen.finals[k]! - seen.finals[k - 1]!
      assert.ok(gap >= interval && gap <= interval + LATE, `retransmission ${k} after ${gap} ms (expected ${interval})`)
      interval = Math.min(interval * 2, T2)
    }
    const last = seen.finals.at(-1)!
    // A send at the very millisecond of the ACK went out before it arrived (the clock's tick
    // runs before the plan's events of that instant), which a real network allows too.
    assert.ok(last <= end, `nothing sent after the ACK or Timer H (last ${last - final} ms after the final, end ${end - final})`)
    // ...and nothing missing before the end: the next would have been due after it.
    assert.ok(last + interval + LATE >= end, `a retransmission is missing: last ${last - final}, next due ${last + interval - final}, end ${end - final}`)
  }
  // Forgotten at the ACK, or Timer H after the final response.
  const forgetAt = Math.min(ack, final + H)
  assert.ok(seen.forgottenBy !== null && seen.forgottenBy >= forgetAt && seen.forgottenBy <= forgetAt + LATE + STEP, `forgotten ${seen.forgottenBy} (due ${forgetAt})`)
}

test('UDP after a 100 Trying: the final response again at T1, 2T1, 4T1, T2, T2, ... until the ACK; TCP: once; both forgotten at the ACK', () => {
  const plans: Plan[] = [
    { beginAt: 0, finalAfter: 300, ackAfter: 9000, udp: true, confirmed: true },
    { beginAt: 0, finalAfter: 300, ackAfter: 9000, udp: false, confirmed: true },
  ]
  const [udp, tcp] = run(plans, 12_000)
  assert.equal(udp!.trying.length, 1)
  assert.deepEqual(udp!.finals.map((t, k, all) => (k === 0 ? t : t - all[k - 1]!)).map((gap) => Math.round(gap / 100) * 100), [300, 500, 1000, 2000, 4000])
  plans.forEach((plan, i) => check(plan, [udp!, tcp!][i]!))
})

test('UDP: answered before any 100 Trying, or to an unconfirmed source (no 100 Trying at all): the final response once, not again until Timer H (issue 31)', () => {
  const plans: Plan[] = [
    { beginAt: 0, finalAfter: 0, ackAfter: null, udp: true, confirmed: true },
    { beginAt: 0, finalAfter: 3000, ackAfter: null, udp: true, confirmed: false },
  ]
  const seen = run(plans, 40_000)
  assert.deepEqual(seen.map((s) => s.finals.length), [1, 1])
  assert.deepEqual(seen[1]!.trying, [])
  plans.forEach((plan, i) => check(plan, seen[i]!))
})

test('an ACK confirms its sender only with the To tag of the final response, and only after one', () => {
  const transactions = new InviteTransactions(() => Date.now())
  const begin = (key: string) => transactions.begin(key, request, source, 100, () => {}, true, undefined, 'a1b2c3d4e5f6')
  begin('k1').finish(Buffer.from('SIP/2.0 302'))
  assert.equal(transactions.acknowledged('k1', 'a1b2c3d4e5f7'), false, 'another tag')
  begin('k2').finish(Buffer.from('SIP/2.0 302'))
  assert.equal(transactions.acknowledged('k2', undefined), false, 'no tag')
  begin('k3')
  assert.equal(transactions.acknowledged('k3', 'a1b2c3d4e5f6'), false, 'no final response yet')
  begin('k4').finish(Buffer.from('SIP/2.0 302'))
  assert.equal(transactions.acknowledged('k4', 'a1b2c3d4e5f6'), true)
  assert.equal(transactions.acknowledged('k4', 'a1b2c3d4e5f6'), false, 'forgotten')
  transactions.clear()
})

test('no ACK: retransmissions stop and the transaction is forgotten at Timer H (32 s); no answer at all: forgotten 32 s after the INVITE', () => {
  const plans: Plan[] = [
    { beginAt: 0, finalAfter: 300, ackAfter: null, udp: true, confirmed: true },
    { beginAt: 20, finalAfter: null, ackAfter: null, udp: true, confirmed: true },
  ]
  const seen = run(plans, 40_000)
  plans.forEach((plan, i) => check(plan, seen[i]!))
  assert.equal(seen[0]!.trying.length, 1, 'answered after 300 ms: a 100 Trying went out first')
})

// FUZZ_SEED and FUZZ_PATH (as a failure prints them) replay a failing case; FUZZ_RUNS runs more.
test('many transactions at random times: each one\'s timers as RFC 3261 has them, whatever the others do', () => {
  const plan = fc.record({
    beginAt: fc.integer({ min: 0, max: 400 }).map((n) => n * STEP),
    // A verification is answered long before Timer H (its own deadlines are seconds).
    finalAfter: fc.option(fc.integer({ min: 0, max: 2000 }).map((n) => n * STEP), { nil: null, freq: 4 }),
    ackAfter: fc.option(fc.integer({ min: 0, max: 3500 }).map((n) => n * STEP), { nil: null, freq: 3 }),
    udp: fc.boolean(),
    confirmed: fc.boolean(),
  })
  fc.assert(fc.property(fc.array(plan, { minLength: 1, maxLength: 40 }), (plans) => {
    mock.timers.reset()
    mock.timers.enable({ apis: ['setInterval', 'Date'], now: 0 })
    const seen = run(plans, 4000 + 35_000 + 35_000 + 1000)
    plans.forEach((p, i) => check(p, seen[i]!))
  }), { numRuns: Number(process.env.FUZZ_RUNS ?? 25), ...replayParameters() })
})
