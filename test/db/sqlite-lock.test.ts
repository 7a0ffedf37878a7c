import { test } from 'node:test'
import assert from 'node:assert/strict'
import { SqliteDatabase } from '../../src/db/sqlite.ts'
test('concurrent transactions serialise', async () => {
  const db = new SqliteDatabase(':memory:')
  await db.exec('CREATE TABLE t (v INTEGER)')
  await Promise.all([1, 2, 3, 4].map((i) => db.transaction(async (tx) => { await tx.run('INSERT INTO t VALUES ($1)', [i]); await new Promise((r) => setTimeout(r, 5)); await tx.run('INSERT INTO t VALUES ($1)', [i]) })))
  const rows = await db.all<{ n: number }>('SELECT COUNT(*) AS n FROM t')
  assert.equal(rows[0]!.n, 8)
  // a failing tx must not swallow a concurrent plain statement
  const failing = db.transaction(async (tx) => { await tx.run('INSERT INTO t VALUES (100)'); await new Promise((r) => setTimeout(r, 5)); throw new Error('boom') }).catch(() => 'failed')
  const plain = db.run('INSERT INTO t VALUES (200)')
  assert.equal(await failing, 'failed'); await plain
  assert.equal((await db.all<{ n: number }>('SELECT COUNT(*) AS n FROM t WHERE v = 200'))[0]!.n, 1)
  assert.equal((await db.all<{ n: number }>('SELECT COUNT(*) AS n FROM t WHERE v = 100'))[0]!.n, 0)
})
