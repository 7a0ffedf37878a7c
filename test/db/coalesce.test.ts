import { after, before, describe, test } from 'node:test'
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { ENGINE, startHarness, type Harness } from '../helpers.ts'
import { coalesce, lookupByKey } from '../../src/db/coalesce.ts'
import type { Database } from '../../src/db/engine.ts'
import { findApproval, insertApproval, type Approval } from '../../src/approvals/approval.ts'

describe('coalesce', () => {
  test('calls made in one turn run as one batch, answered in order', async () => {
    const batches: number[][] = []
    const double = coalesce(async (items: number[]) => {
      batches.push(items)
      return items.map((n) => n * 2)
    })
    assert.deepEqual(await Promise.all([1, 2, 3].map(double)), [2, 4, 6])
    assert.deepEqual(batches, [[1, 2, 3]])
    assert.equal(await double(5), 10)
    assert.deepEqual(batches.at(-1), [5])
  })

  test('an Error answer rejects only its call; a thrown error rejects the whole batch', async () => {
    const pick = coalesce(async (items: number[]) => items.map((n) => (n < 0 ? new Error(`negative ${n}`) : n)))
    const results = await Promise.allSettled([pick(1), pick(-1), pick(2)])
    assert.deepEqual(results.map((r) => r.status), ['fulfilled', 'rejected', 'fulfilled'])
    assert.match(String((results[1] as PromiseRejectedResult).reason), /negative -1/)

    const broken = coalesce(async (_items: number[]): Promise<number[]> => { throw new Error('down') })
    const all = await Promise.allSettled([broken(1), broken(2)])
    assert.ok(all.every((r) => r.status === 'rejected'))
  })

  test('a batch reaching `max` is sent at once; the rest goes in the next', async () => {
    const sizes: number[] = []
    const echo = coalesce(async (items: number[]) => { sizes.push(items.length); return items }, { max: 4 })
    await Promise.all(Array.from({ length: 10 }, (_, i) => echo(i)))
    assert.deepEqual(sizes, [4, 4, 2])
  })

  test('with inFlight, calls made while a batch runs wait for it and then go as one batch', async () => {
    const batches: number[][] = []
    let running = 0
    let most = 0
    const slow = coalesce(async (items: number[]) => {
      batches.push(items)
      most = Math.max(most, ++running)
      await new Promise((resolve) => setTimeout(resolve, 20))
      running--
      return items
    }, { inFlight: 1 })
    const first = slow(1)
    await new Promise((resolve) => setImmediate(resolve))
    const later = [2, 3, 4].map(slow)
    await new Promise((resolve) => setTimeout(resolve, 5))
    const last = slow(5)
    assert.deepEqual(await Promise.all([first, ...later, last]), [1, 2, 3, 4, 5])
    assert.deepEqual(batches, [[1], [2, 3, 4, 5]])
    assert.equal(most, 1)
  })
})

describe('lookupByKey isolates its members', () => {
  /** A PostgreSQL-shaped database whose batch statement fails whenever `poison` is among the keys, as PostgreSQL does on a NUL. */
  function fakeDatabase(poison: string, calls: string[]) {
    const rowOf = (key: string) => (key === 'missing' ? undefined : { key, value: key.toUpperCase() })
    return {
      engine: 'postgres', transaction: async () => { throw new Error('unused') },
      async all(_sql: string, [keys]: [string[]]) {
        calls.push(`many:${keys.length}`)
        if (keys.includes(poison)) throw new Error('invalid byte sequence for encoding "UTF8"')
        return keys.map(rowOf).filter((row) => row !== undefined)
      },
      async get(_sql: string, [key]: [string]) {
        calls.push(`one:${key}`)
        if (key === poison) throw new Error('invalid byte sequence for encoding "UTF8"')
        return rowOf(key)
      },
    } as unknown as Database
  }

  test('a key no database can hold (NUL, lone surrogate) matches nothing and never reaches the database', async () => {
    const calls: string[] = []
    const db = fakeDatabase('\u0000', calls)
    const answers = await Promise.all(['a', 'b\u0000', 'c\ud800', 'd'].map((k) => lookupByKey(db, 'one', 'many', 'key', k)))
    assert.deepEqual(answers, [{ key: 'a', value: 'A' }, undefined, undefined, { key: 'd', value: 'D' }])
    assert.deepEqual(calls, ['many:2'])
  })

  test('a batch that fails is retried key by key: only the key at fault gets the error', async () => {
    const calls: string[] = []
    const db = fakeDatabase('boom', calls)
    const results = await Promise.allSettled(['a', 'boom', 'missing', 'b'].map((k) => lookupByKey(db, 'one2', 'many2', 'key', k)))
    assert.deepEqual(results.map((r) => r.status), ['fulfilled', 'rejected', 'fulfilled', 'fulfilled'])
    assert.deepEqual(results.map((r) => (r.status === 'fulfilled' ? r.value : 'error')), [{ key: 'a', value: 'A' }, 'error', undefined, { key: 'b', value: 'B' }])
    assert.deepEqual(calls, ['many:4', 'one:a', 'one:boom', 'one:missing', 'one:b'])
  })
})

describe(`coalesced statements (${ENGINE})`, () => {
  let h: Harness
  before(async () => { h = await startHarness() })
  after(async () => { await h.close() })

  /** The harness database, counting the statements it is asked to run. */
  function counting(db: Database): { db: Database; statements: () => number } {
    let n = 0
    const wrapped = Object.create(db) as Database
    for (const method of ['all', 'get', 'run'] as const) {
      const original = db[method].bind(db) as (...args: unknown[]) => Promise<unknown>
      ;(wrapped as unknown as Record<string, unknown>)[method] = (...args: unknown[]) => { n++; return original(...args) }
    }
    wrapped.transaction = (fn) => { n++; return db.transaction(fn) }
    return { db: wrapped, statements: () => n }
  }

  const approval = (referenceNumber: string): Approval => ({
    approvalNumber: randomBytes(12).toString('hex'), apiKeyId: 'coalesce-test', vendorBrand: 'Acme', referenceNumber,
    requestHash: 'h', title: 't', message: 'm', successRedirectUrl: 'https://a.example/ok', cancelRedirectUrl: 'https://a.example/no',
    method: 'sign', objectId: `0x${'ab'.repeat(32)}`, phoneNumber: null, status: 'pending', wallet: null, proof: null,
    createdAt: Date.now(), expiresAt: Date.now() + 60_000, decidedAt: null, cancelReason: null,
  })

  test('concurrent inserts go in one statement or transaction; a reused reference is refused only for the later twin', async () => {
    const { db, statements } = counting(h.service.db)
    const ref = `ref-${randomBytes(4).toString('hex')}`
    const batch = [approval(ref), approval(`${ref}-b`), approval(ref), approval(`${ref}-c`)]
    const stored = await Promise.all(batch.map((a) => insertApproval(db, a)))
    assert.deepEqual(stored, [true, true, false, true])
    assert.equal(statements(), 1)
    for (const [i, a] of batch.entries()) assert.equal((await findApproval(h.service.db, a.approvalNumber)) !== null, stored[i])
  })

  test('concurrent lookups by key: one statement on PostgreSQL, each answered with its own row', async () => {
    const rows = [approval(`look-${randomBytes(4).toString('hex')}`), approval(`look-${randomBytes(4).toString('hex')}`)]
    for (const a of rows) assert.equal(await insertApproval(h.service.db, a), true)
    const { db, statements } = counting(h.service.db)
    const unknown = randomBytes(12).toString('hex')
    const keys = [rows[0]!.approvalNumber, unknown, rows[1]!.approvalNumber, rows[0]!.approvalNumber]
    const found = await Promise.all(keys.map((k) => lookupByKey<{ approval_number: string }>(db,
      'SELECT * FROM approvals WHERE approval_number = $1', 'SELECT * FROM approvals WHERE approval_number = ANY($1::text[])', 'approval_number', k)))
    assert.deepEqual(found.map((r) => r?.approval_number), [keys[0], undefined, keys[2], keys[0]])
    assert.equal(statements(), ENGINE === 'postgres' ? 1 : keys.length)
  })

  test('an approval whose number no longer points at its token is not inserted, alone or in a batch', async () => {
    const phone = `+4420${randomBytes(4).readUInt32BE() % 100_000_000}`.padEnd(13, '0')
    const linked = `0x${randomBytes(32).toString('hex')}`
    await h.service.db.run(`INSERT INTO numbers (phone, object_id, source, country, created_at) VALUES ($1, $2, 'linked', 'GB', 0)`, [phone, linked])
    const forToken = (objectId: string): Approval => ({ ...approval(`link-${randomBytes(4).toString('hex')}`), phoneNumber: phone, objectId })
    const stale = `0x${randomBytes(32).toString('hex')}`
    assert.equal(await insertApproval(h.service.db, forToken(stale)), false)
    const batch = [forToken(linked), forToken(stale), forToken(linked)]
    assert.deepEqual(await Promise.all(batch.map((a) => insertApproval(h.service.db, a))), [true, false, true])
    assert.equal(await findApproval(h.service.db, batch[1]!.approvalNumber), null)
  })

  test('inside a transaction nothing is coalesced (each statement runs in it, at once)', async () => {
    const a = approval(`tx-${randomBytes(4).toString('hex')}`)
    await h.service.db.transaction(async (tx) => {
      assert.equal(await insertApproval(tx, a), true)
      assert.equal((await findApproval(tx, a.approvalNumber))?.referenceNumber, a.referenceNumber)
    })
  })
})
