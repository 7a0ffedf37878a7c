import { after, before, describe, test } from 'node:test'
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { execFile } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { ENGINE, freshDatabaseEnv, startHarness, type Harness } from '../helpers.ts'
import { loadConfig } from '../../src/config.ts'
import { isUniqueViolation } from '../../src/db/engine.ts'
import { migrate, schemaVersion } from '../../src/db/migrations.ts'
import { MIGRATIONS } from '../../src/migrations.ts'
import { openDatabase } from '../../src/db/open.ts'
import { withServerSetting } from '../../src/db/postgres.ts'
import { parseIntoClientConfig } from 'pg-connection-string'
import pg from 'pg'
import { getOrInitSetting, getSetting } from '../../src/db/settings.ts'
import { openService } from '../../src/service.ts'

let h: Harness

before(async () => { h = await startHarness() })
after(async () => { await h.close() })

const MIGRATIONS_MODULE = fileURLToPath(new URL('../../src/db/migrations.ts', import.meta.url))
const ALL_MIGRATIONS_MODULE = fileURLToPath(new URL('../../src/migrations.ts', import.meta.url))
const OPEN_MODULE = fileURLToPath(new URL('../../src/db/open.ts', import.meta.url))
const CONFIG_MODULE = fileURLToPath(new URL('../../src/config.ts', import.meta.url))

/** `migrate()` in a child process on `env`'s database; resolves to the versions it applied. */
function migrateInChild(env: Record<string, string>): Promise<number[]> {
  const script = `
    const { migrate } = await import(${JSON.stringify(MIGRATIONS_MODULE)})
    const { MIGRATIONS } = await import(${JSON.stringify(ALL_MIGRATIONS_MODULE)})
    const { openDatabase } = await import(${JSON.stringify(OPEN_MODULE)})
    const { loadConfig } = await import(${JSON.stringify(CONFIG_MODULE)})
    const db = openDatabase(loadConfig(process.env))
    try { console.log(JSON.stringify(await migrate(db, MIGRATIONS))) } finally { await db.close() }`
  return new Promise((resolve, reject) => {
    execFile(process.execPath, ['--no-warnings', '--input-type=module', '-e', script], { env: { PATH: process.env.PATH ?? '', ...env }, timeout: 30_000 },
      (err, stdout, stderr) => {
        if (err) reject(new Error(`child migrate failed: ${err.message}\n${stderr}`))
        else resolve(JSON.parse(stdout.trim()) as number[])
      })
  })
}

const name = () => `test-${randomBytes(6).toString('hex')}`

describe(`database (${ENGINE})`, () => {
  test('the engine is the one the environment selects', () => {
    assert.equal(h.service.db.engine, ENGINE)
  })

  test('asyncCommit: the same database, with commits that do not wait for the disk on PostgreSQL', async () => {
    const db = h.service.db
    const written = name()
    await db.asyncCommit.run('INSERT INTO settings (name, value) VALUES ($1, $2)', [written, 'a'])
    assert.equal(await getSetting(db, written), 'a', 'visible through the main connections at once')
    if (ENGINE === 'sqlite') {
      assert.equal(db.asyncCommit, db, 'SQLite commits do not wait for the disk (WAL, synchronous = NORMAL)')
      return
    }
    const setting = 'SELECT current_setting($1) AS value'
    const off = await db.asyncCommit.get<{ value: string }>(setting, ['synchronous_commit'])
    assert.equal(off?.value, 'off')
    assert.equal(await db.asyncCommit.transaction(async (tx) => (await tx.get<{ value: string }>(setting, ['synchronous_commit']))?.value), 'off')
    // What a plain connection with the same settings gets: the main pool adds nothing to it.
    const plain = new pg.Client({ connectionString: h.env.DATABASE_URL })
    await plain.connect()
    const expected = (await plain.query<{ value: string }>(setting, ['synchronous_commit'])).rows[0]?.value
    await plain.end()
    assert.notEqual(expected, 'off', 'the test server commits synchronously by default')
    assert.equal((await db.get<{ value: string }>(setting, ['synchronous_commit']))?.value, expected, 'the main connections keep the default')
    assert.equal(db.asyncCommit.asyncCommit, db.asyncCommit)
  })

  test('a transaction commits all of its writes together', async () => {
    const [a, b] = [name(), name()]
    const result = await h.service.db.transaction(async (tx) => {
      await tx.run('INSERT INTO settings (name, value) VALUES ($1, $2)', [a, '1'])
      await tx.run('INSERT INTO settings (name, value) VALUES ($1, $2)', [b, '2'])
      return 'done'
    })
    assert.equal(result, 'done')
    assert.equal(await getSetting(h.service.db, a), '1')
    assert.equal(await getSetting(h.service.db, b), '2')
  })

  test('a transaction that throws rolls back every write and rethrows', async () => {
    const [a, b] = [name(), name()]
    const failure = new Error('second write failed')
    await assert.rejects(h.service.db.transaction(async (tx) => {
      await tx.run('INSERT INTO settings (name, value) VALUES ($1, $2)', [a, '1'])
      assert.equal((await tx.get<{ value: string }>('SELECT value FROM settings WHERE name = $1', [a]))?.value, '1', 'visible inside')
      await tx.run('INSERT INTO settings (name, value) VALUES ($1, $2)', [b, '2'])
      throw failure
    }), (err) => err === failure)
    assert.equal(await getSetting(h.service.db, a), undefined)
    assert.equal(await getSetting(h.service.db, b), undefined)
  })

  test('a failing statement rolls back the earlier ones; the error is a unique violation on both engines', async () => {
    const existing = name()
    await h.service.db.run('INSERT INTO settings (name, value) VALUES ($1, $2)', [existing, 'kept'])
    const fresh = name()
    let caught: unknown
    await h.service.db.transaction(async (tx) => {
      await tx.run('INSERT INTO settings (name, value) VALUES ($1, $2)', [fresh, 'x'])
      await tx.run('INSERT INTO settings (name, value) VALUES ($1, $2)', [existing, 'dup'])
    }).catch((err: unknown) => { caught = err })
    assert.ok(caught, 'the duplicate insert fails')
    assert.equal(isUniqueViolation(caught), true)
    assert.equal(isUniqueViolation(new Error('something else')), false)
    assert.equal(await getSetting(h.service.db, fresh), undefined)
    assert.equal(await getSetting(h.service.db, existing), 'kept')
  })

  test('a row written inside a transaction that later rolls back is never seen outside it', async () => {
    const key = name()
    let release!: () => void
    const gate = new Promise<void>((resolve) => { release = resolve })
    let inserted!: () => void
    const insertedSignal = new Promise<void>((resolve) => { inserted = resolve })
    const tx = h.service.db.transaction(async (t) => {
      await t.run('INSERT INTO settings (name, value) VALUES ($1, $2)', [key, 'uncommitted'])
      inserted()
      await gate
      throw new Error('abort')
    }).catch(() => 'rolled back')
    await insertedSignal
    // SQLite queues this read behind the transaction; PostgreSQL reads the committed state.
    const outside = getSetting(h.service.db, key)
    setTimeout(release, 50)
    assert.equal(await outside, undefined)
    assert.equal(await tx, 'rolled back')
    assert.equal(await getSetting(h.service.db, key), undefined)
  })

  test('the registration transaction leaves no half-registered user when minting fails', async () => {
    const ledger = h.service.ledger as { mintToken: (...args: unknown[]) => Promise<unknown> }
    const original = ledger.mintToken
    ledger.mintToken = async () => { throw new Error('ledger write failed') }
    const phone = `+4420${String(Math.floor(Math.random() * 1e8)).padStart(8, '0')}`
    try {
      const res = await h.app.inject({ method: 'POST', url: '/numsys/register-user-login', payload: { email: 'tx@example.com', phoneNumber: phone } })
      assert.equal(res.statusCode, 500)
    } finally {
      ledger.mintToken = original
    }
    assert.equal(await h.service.db.get('SELECT * FROM users WHERE phone = $1', [phone]), undefined)
    // And the number registers normally afterwards.
    const res = await h.app.inject({ method: 'POST', url: '/numsys/register-user-login', payload: { email: 'tx@example.com', phoneNumber: phone } })
    assert.equal(res.statusCode, 200, res.body)
  })

  test('getOrInitSetting: the first value wins, concurrent initialisers agree', async () => {
    const key = name()
    const values = await Promise.all(Array.from({ length: 5 }, (_, i) => getOrInitSetting(h.service.db, key, () => `v${i}`)))
    assert.equal(new Set(values).size, 1)
    assert.equal(await getOrInitSetting(h.service.db, key, () => 'later'), values[0])
  })

  test('BIGINT epoch milliseconds come back as JS numbers', async () => {
    const row = await h.service.db.get<{ applied_at: unknown }>('SELECT applied_at FROM schema_migrations WHERE version = 1')
    assert.equal(typeof row?.applied_at, 'number')
    assert.ok((row!.applied_at as number) > 1_600_000_000_000)
  })
})

describe(`migrations (${ENGINE})`, () => {
  test('running the migrations again applies nothing and changes nothing', async () => {
    const latest = Math.max(...MIGRATIONS.map((m) => m.version))
    assert.equal(await schemaVersion(h.service.db), latest)
    const before = await h.service.db.all('SELECT * FROM schema_migrations ORDER BY version')
    assert.deepEqual(await migrate(h.service.db, MIGRATIONS), [])
    assert.deepEqual(await migrate(h.service.db, MIGRATIONS), [])
    assert.deepEqual(await h.service.db.all('SELECT * FROM schema_migrations ORDER BY version'), before)
    assert.equal(await schemaVersion(h.service.db), latest)
  })

  test('every migration is recorded once with its name', async () => {
    const rows = await h.service.db.all<{ version: number; name: string }>('SELECT version, name FROM schema_migrations ORDER BY version')
    assert.deepEqual(rows.map((r) => [Number(r.version), r.name]), MIGRATIONS.map((m) => [m.version, m.name]))
  })

  test('concurrent migrators on a fresh database (processes starting together) apply each migration once', async () => {
    // Separate processes: in one process, node:sqlite's busy wait would block the very
    // connection it waits for.
    for (let round = 0; round < 3; round++) {
      const fresh = await freshDatabaseEnv()
      try {
        const results = await Promise.all(Array.from({ length: 3 }, () => migrateInChild(fresh.env)))
        const applied = results.flat().sort()
        assert.deepEqual(applied, MIGRATIONS.map((m) => m.version).sort(), `round ${round}: ${JSON.stringify(results)}`)
        const db = openDatabase(loadConfig(fresh.env))
        try {
          assert.equal(await schemaVersion(db), Math.max(...MIGRATIONS.map((m) => m.version)))
          assert.deepEqual(await migrate(db, MIGRATIONS), [])
        } finally {
          await db.close()
        }
      } finally {
        await fresh.cleanup()
      }
    }
  })

  test('reopening the service on the same database keeps data and secret', async () => {
    const key = name()
    await h.service.db.run('INSERT INTO settings (name, value) VALUES ($1, $2)', [key, 'persisted'])
    const again = await openService(loadConfig(h.env))
    try {
      assert.equal(await getSetting(again.db, key), 'persisted')
      assert.deepEqual(again.secret, h.service.secret)
    } finally {
      await again.close()
    }
  })

  test('a service with a different ZKLOGIN_ISSUER refuses to open the database', async () => {
    await assert.rejects(openService(loadConfig({ ...h.env, ZKLOGIN_ISSUER: 'https://other-issuer.example/oidc' })), /ZKLOGIN_ISSUER/)
  })

  test('a database is reachable: ping works', async () => {
    await h.service.db.ping()
  })
})

test('withServerSetting adds a startup setting after the options pg would otherwise use', () => {
  const off = 'synchronous_commit=off'
  const plain = withServerSetting('postgres://u:secret@db:5433/kns', off, {})
  assert.deepEqual([plain.user, plain.password, plain.host, plain.port, plain.database, plain.options], ['u', 'secret', 'db', 5433, 'kns', '-c synchronous_commit=off'])
  const given = withServerSetting('postgres://u@db/kns?options=-c%20search_path%3Dt_1&application_name=app', off, { PGOPTIONS: '-c work_mem=8MB' })
  assert.equal(given.options, '-c search_path=t_1 -c synchronous_commit=off', "the URL's own options first")
  assert.equal(given.application_name, 'app')
  assert.equal(withServerSetting('postgres://u@db/kns', off, { PGOPTIONS: '-c search_path=app' }).options, '-c search_path=app -c synchronous_commit=off', 'else PGOPTIONS')
  // Whatever pg makes of an odd URL, the async connections make the same of it.
  for (const odd of ['postgres://u:p%zz@db/kns', 'postgresql://u@%2Fvar%2Frun%2Fpostgresql/kns', 'postgres://u:p%40ss@[::1]:5432/kns']) {
    const { options, ...rest } = withServerSetting(odd, off, {})
    assert.deepEqual(rest, { ...parseIntoClientConfig(odd) }, odd)
    assert.equal(options, '-c synchronous_commit=off', odd)
  }
})
