/**
 * `kns doctor`: the database and the configured ledger deployment, checked on demand; exit 0
 * when all is well, 1 with each problem named (the variable to fix) otherwise.
 */
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { after, before, test } from 'node:test'
import { ENGINE, freshDatabaseEnv, type TestEnv } from '../helpers.ts'
import { startSuiGraphqlStub, type SuiGraphqlStub } from '../ledger/sui-graphql-stub.ts'
import { killAll, oneJson, runKns } from '../support/process.ts'

let fresh: TestEnv
let stub: SuiGraphqlStub

before(async () => {
  stub = await startSuiGraphqlStub()
  fresh = await freshDatabaseEnv()
  assert.equal((await runKns(['migrate'], fresh.env)).code, 0)
})
after(async () => {
  await killAll()
  await stub?.close()
  await fresh?.cleanup()
})

interface Check { name: string; ok: boolean; detail: string }

test('LEDGER=local: the database is checked, the embedded ledger needs nothing', async () => {
  const result = await runKns(['doctor', '--json'], fresh.env)
  assert.equal(result.code, 0, result.stderr)
  const body = oneJson(result) as { ok: boolean; checks: Check[] }
  assert.equal(body.ok, true)
  // PostgreSQL: and no transaction pooler in the way (src/db/pooler-check.ts).
  assert.deepEqual(body.checks.map((c) => c.name), ['database', 'server secret', 'zkLogin identity', 'public URL', ...(ENGINE === 'postgres' ? ['pooler'] : []), 'ledger'])
})

test('what the first start pinned is checked against this configuration: where the server would refuse, doctor fails too', async () => {
  const served = await freshDatabaseEnv({ KNS_SECRET: 'doctor-secret-0123456789abcdef-012345', PUBLIC_BASE_URL: 'https://kns.example.com' })
  try {
    // The first start pins the secret, the zkLogin identity and the public URL.
    const { openService } = await import('../../src/service.ts')
    await (await openService(served.config)).close()
    assert.equal((await runKns(['doctor'], served.env)).code, 0)
    const cases: Array<[string, Record<string, string | undefined>, RegExp]> = [
      ['server secret', { KNS_SECRET: 'another-secret-0123456789abcdef-0123456' }, /FAIL +server secret: KNS_SECRET is not the secret/],
      ['zkLogin identity', { ZKLOGIN_CLIENT_ID: 'other-client' }, /FAIL +zkLogin identity: ZKLOGIN_ISSUER\/ZKLOGIN_CLIENT_ID differ from the values this database was created with .*: the server refuses to start/],
      ['public URL', { PUBLIC_BASE_URL: undefined, PORT: '9999' }, /FAIL +public URL: PUBLIC_BASE_URL is not set and this database is served as https:\/\/kns\.example\.com/],
    ]
    for (const [name, change, expected] of cases) {
      const env: Record<string, string> = { ...served.env }
      for (const [k, v] of Object.entries(change)) if (v === undefined) delete env[k]; else env[k] = v
      const result = await runKns(['doctor'], env)
      assert.equal(result.code, 1, `${name}: ${result.stdout}`)
      assert.match(result.stdout, expected)
      assert.match(result.stdout, /some checks failed/)
    }
  } finally {
    await served.cleanup()
  }
})

test('a database that does not exist is said so, with what creates it (not "unreachable")', async () => {
  const none = await freshDatabaseEnv()
  try {
    const result = await runKns(['doctor'], none.env)
    assert.equal(result.code, 1)
    if (none.env.DATABASE_URL === undefined) assert.match(result.stdout, /FAIL +database: SQLite .* does not exist yet: `npm start` \(or `kns migrate`\) creates it/)
    const missing = await runKns(['doctor'], { ...none.env, DATABASE_URL: 'postgres://postgres@127.0.0.1:5432/kns_no_such_database' })
    assert.equal(missing.code, 1)
    assert.match(missing.stdout, /the database "kns_no_such_database" does not exist: create it/)
  } finally {
    await none.cleanup()
  }
})

test('LEDGER=sui against a sound deployment: every check passes, exit 0', async () => {
  const result = await runKns(['doctor'], { ...fresh.env, ...stub.ledgerEnv() })
  assert.equal(result.code, 0, result.stdout + result.stderr)
  assert.match(result.stdout, /ok +id map: .* holds the table/)
  assert.match(result.stdout, /all checks passed/)
})

test('LEDGER=sui with a wrong package ID: exit 1, the variable named', async () => {
  const wrong = '0x' + randomBytes(32).toString('hex')
  const result = await runKns(['doctor', '--json'], { ...fresh.env, ...stub.ledgerEnv(), SUI_KEYSTORE_PACKAGE_ID: wrong })
  assert.equal(result.code, 1)
  const body = oneJson(result) as { ok: boolean; checks: Check[] }
  assert.equal(body.ok, false)
  assert.match(body.checks.find((c) => !c.ok)?.detail ?? '', new RegExp(`SUI_KEYSTORE_PACKAGE_ID=${wrong} is not a package`))
})

test('LEDGER=sui with the ledger unreachable: exit 1, saying so without the endpoint\'s secrets', async () => {
  const result = await runKns(['doctor', '--json'], { ...fresh.env, ...stub.ledgerEnv(), SUI_GRAPHQL_URL: 'http://127.0.0.1:9/v1/secretpath/graphql?key=secretquery', LEDGER_TIMEOUT_MS: '1000' })
  assert.equal(result.code, 1)
  const body = oneJson(result) as { checks: Check[] }
  assert.match(body.checks.find((c) => c.name === 'ledger')?.detail ?? '', /cannot be asked/)
  assert.doesNotMatch(result.stdout + result.stderr, /secretpath|secretquery/)
})
