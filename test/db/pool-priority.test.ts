/**
 * Issue 31, item 4: under a registration flood on PostgreSQL, some forty admitted registrations
 * waited for the pool's ten connections first come first served, and the light client's
 * `transaction_details` (critical) waited behind all of them. The pool's waiters are now served
 * by the priority of the request they belong to (src/db/priority-gate.ts).
 */
import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { PostgresDatabase } from '../../src/db/postgres.ts'
import { PriorityGate } from '../../src/db/priority-gate.ts'
import { isDatabaseUnavailable } from '../../src/db/unavailable.ts'
import { runWithPriority, type WorkPriority } from '../../src/lib/work-priority.ts'
import { ENGINE } from '../helpers.ts'

describe('PriorityGate', () => {
  test('a freed permit goes to the highest priority waiting, in arrival order within one', async () => {
    const gate = new PriorityGate(1, 0)
    let free!: () => void
    const holding = gate.with(() => new Promise<void>((resolve) => { free = resolve }))
    await new Promise(setImmediate)
    const served: string[] = []
    const wait = (priority: WorkPriority, name: string) => runWithPriority(priority, () => gate.with(async () => { served.push(name) }))
    const all = [wait('low', 'low'), wait('normal', 'normal 1'), wait('normal', 'normal 2'), wait('critical', 'critical'), wait('ops', 'ops'), wait('normal', 'normal 3')]
    assert.equal(gate.waiting, 6)
    free()
    await Promise.all([holding, ...all])
    assert.deepEqual(served, ['ops', 'critical', 'normal 1', 'normal 2', 'normal 3', 'low'])
  })

  test('normal work leaves a fifth of the permits to critical work: with the rest held, a critical caller is not even queued', async () => {
    const gate = new PriorityGate(5, 0)
    const frees: Array<() => void> = []
    const hold = () => gate.with(() => new Promise<void>((resolve) => { frees.push(resolve) }))
    const held = [hold(), hold(), hold(), hold()]
    const fifth = hold()
    await new Promise(setImmediate)
    assert.equal(frees.length, 4, 'the fifth normal caller waits')
    assert.equal(gate.waiting, 1)
    const critical = runWithPriority('critical', () => hold())
    await new Promise(setImmediate)
    assert.equal(frees.length, 5, 'the critical caller took the reserved permit at once')
    for (const free of frees.splice(0)) free()
    await new Promise(setImmediate)
    for (const free of frees.splice(0)) free()
    await Promise.all([...held, fifth, critical])
  })

  test('a wait past its limit fails as the pool\'s own connection timeout does (503 DATABASE_UNAVAILABLE), and gives its place up', async () => {
    const gate = new PriorityGate(1, 20)
    let free!: () => void
    const holding = gate.with(() => new Promise<void>((resolve) => { free = resolve }))
    await new Promise(setImmediate)
    const err = await gate.with(async () => 'never').catch((e: unknown) => e)
    assert.ok(isDatabaseUnavailable(err))
    assert.equal(gate.waiting, 0)
    free()
    await holding
    assert.equal(await gate.with(async () => 'next'), 'next')
  })
})

describe('the PostgreSQL pool', { skip: ENGINE !== 'postgres' && 'PostgreSQL only (DATABASE_URL)' }, () => {
  test('with every connection held by normal work, a critical query gets the next free connection ahead of the normal ones waiting', async () => {
    const db = new PostgresDatabase(process.env.DATABASE_URL!, { max: 1 })
    try {
      let free!: () => void
      const held = new Promise<void>((resolve) => { free = resolve })
      let started!: () => void
      const holding = db.transaction(async (tx) => { await tx.get('SELECT 1'); started(); await held })
      await new Promise<void>((resolve) => { started = resolve })
      const answered: string[] = []
      const query = (priority: WorkPriority, name: string) => runWithPriority(priority, async () => {
        await db.get('SELECT $1::text AS name', [name])
        answered.push(name)
      })
      const waiting = [query('normal', 'registration 1'), query('normal', 'registration 2'), query('normal', 'registration 3'), query('critical', 'transaction_details')]
      free()
      await Promise.all([holding, ...waiting])
      assert.equal(answered[0], 'transaction_details')
    } finally {
      await db.close()
    }
  })
})
