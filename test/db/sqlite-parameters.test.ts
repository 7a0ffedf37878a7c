import { test } from 'node:test'
import assert from 'node:assert/strict'
import { SqliteDatabase, sqliteParameters } from '../../src/db/sqlite.ts'

test('placeholders used once each, in order, become anonymous', () => {
  assert.equal(sqliteParameters('INSERT INTO t (a, b) VALUES ($1, $2), ($3, $4)'), 'INSERT INTO t (a, b) VALUES (?, ?), (?, ?)')
})

test('placeholders repeated or out of order keep their numbers', () => {
  assert.equal(sqliteParameters('SELECT $1 WHERE x > $1'), 'SELECT ?1 WHERE x > ?1')
  assert.equal(sqliteParameters('SELECT $2, $1'), 'SELECT ?2, ?1')
  assert.equal(sqliteParameters('SELECT $1, $3'), 'SELECT ?1, ?3')
  assert.equal(sqliteParameters('SELECT 1'), 'SELECT 1')
})

test('both forms bind each value to its own placeholder', async () => {
  const db = new SqliteDatabase(':memory:')
  try {
    await db.exec('CREATE TABLE t (a TEXT, b INTEGER, c TEXT)')
    await db.run('INSERT INTO t (a, b, c) VALUES ($1, $2, $3), ($4, $5, $6)', ['x', 1, 'y', 'z', 2, 'w'])
    await db.run('INSERT INTO t (c, b, a) VALUES ($3, $2, $1)', ['p', 3, 'q'])
    assert.deepEqual((await db.all('SELECT a, b, c FROM t ORDER BY b')).map((r) => ({ ...r })), [
      { a: 'x', b: 1, c: 'y' }, { a: 'z', b: 2, c: 'w' }, { a: 'p', b: 3, c: 'q' },
    ])
    assert.deepEqual((await db.all('SELECT a FROM t WHERE b >= $1 AND b <= $1 + 1 ORDER BY b', [2])).map((r) => ({ ...r })), [{ a: 'z' }, { a: 'p' }])
  } finally {
    await db.close()
  }
})
