/**
 * The verification pipeline helper: named checks run in order, the first CheckFailed is the
 * verdict (with its step), any other error is not a verdict and propagates.
 */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { check, CheckFailed, runChecks, type Check } from '../../src/lib/checks.ts'

interface Ctx { seen: string[]; value?: number }

const record = (name: string, detail?: string): Check<Ctx> => check(name, (ctx) => {
  ctx.seen.push(name)
  return detail
})

test('CheckFailed is an Error with a stable code', () => {
  const err = new CheckFailed('WRONG_SIGNER', 'the signer does not own the token')
  assert.ok(err instanceof Error)
  assert.equal(err.name, 'CheckFailed')
  assert.equal(err.code, 'WRONG_SIGNER')
  assert.equal(err.message, 'the signer does not own the token')
})

test('all checks pass: ok, every step reported in order, details only where given', async () => {
  const ctx: Ctx = { seen: [] }
  const outcome = await runChecks([record('load'), record('verify', 'ed25519'), record('record')], ctx)
  assert.deepEqual(outcome, {
    ok: true,
    steps: [{ name: 'load', ok: true }, { name: 'verify', ok: true, detail: 'ed25519' }, { name: 'record', ok: true }],
  })
  assert.deepEqual(ctx.seen, ['load', 'verify', 'record'])
})

test('an empty pipeline passes', async () => {
  assert.deepEqual(await runChecks<Ctx>([], { seen: [] }), { ok: true, steps: [] })
})

test('the first CheckFailed stops the pipeline and names the step, code and reason', async () => {
  const ctx: Ctx = { seen: [] }
  const failing = check<Ctx>('check_owner', async (c) => {
    c.seen.push('check_owner')
    await new Promise((resolve) => setImmediate(resolve))
    throw new CheckFailed('WRONG_SIGNER', 'signed by 0xabc, owned by 0xdef')
  })
  const outcome = await runChecks([record('load', 'found'), failing, record('record')], ctx)
  assert.deepEqual(outcome, {
    ok: false,
    code: 'WRONG_SIGNER',
    message: 'signed by 0xabc, owned by 0xdef',
    failedStep: 'check_owner',
    steps: [{ name: 'load', ok: true, detail: 'found' }, { name: 'check_owner', ok: false, detail: 'signed by 0xabc, owned by 0xdef' }],
  })
  assert.deepEqual(ctx.seen, ['load', 'check_owner'], 'later checks do not run')
})

test('checks share the context: an earlier step prepares what a later one reads', async () => {
  const load = check<Ctx>('load', async (c) => { c.value = 41 })
  const use = check<Ctx>('use', (c) => {
    if (c.value !== 41) throw new CheckFailed('TOKEN_NOT_FOUND', 'nothing loaded')
    return `value ${c.value + 1}`
  })
  const outcome = await runChecks([load, use], { seen: [] })
  assert.equal(outcome.ok, true)
  assert.deepEqual(outcome.steps[1], { name: 'use', ok: true, detail: 'value 42' })
})

test('an error that is not a CheckFailed is not a verdict: it propagates, sync or async', async () => {
  const outage = check<Ctx>('load', async () => { throw new Error('database unavailable') })
  await assert.rejects(runChecks([outage, record('never')], { seen: [] }), /database unavailable/)
  const bug = check<Ctx>('parse', () => { throw new TypeError('undefined is not a function') })
  const ctx: Ctx = { seen: [] }
  await assert.rejects(runChecks([record('first'), bug, record('never')], ctx), TypeError)
  assert.deepEqual(ctx.seen, ['first'])
})

test('an empty detail string is left out of the report', async () => {
  const outcome = await runChecks([check<Ctx>('quiet', () => '')], { seen: [] })
  assert.deepEqual(outcome.steps, [{ name: 'quiet', ok: true }])
})
