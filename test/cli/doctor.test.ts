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

test('without PUBLIC_BASE_URL and PORT (a second terminal beside `PORT=8123 npm start`): the URL the database keeps, as the CLI uses it', async () => {
  const served = await freshDatabaseEnv({ PORT: '8123' })
  try {
    const { openService } = await import('../../src/service.ts')
    await (await openService(served.config)).close()
    const env: Record<string, string> = { ...served.env }
    delete env.PORT
    const result = await runKns(['doctor'], env)
    assert.equal(result.code, 0, result.stdout)
    assert.match(result.stdout, /ok +public URL: http:\/\/localhost:8123 \(kept in the database; PUBLIC_BASE_URL and PORT are not set here: a server started with this environment needs PUBLIC_BASE_URL=http:\/\/localhost:8123 or its port\)/)
  } finally {
    await served.cleanup()
  }
})

test('--production: fails on what must not reach production, each with its fix (what the server warns of at start); a production setup passes', async () => {
  const { openService } = await import('../../src/service.ts')
  const { createDevelopmentKey } = await import('../../src/keys/development-key.ts')
  const { revokeApiKey } = await import('../../src/keys/api-keys.ts')
  const development = await freshDatabaseEnv({ X5U_ALLOW_PRIVATE: 'true' })
  const production = await freshDatabaseEnv({
    KNS_SECRET: 'production-secret-0123456789abcdef-0123', SMS_DELIVERY: 'http', SMS_HTTP_URL: 'https://sms.example.com/send',
    PUBLIC_BASE_URL: 'https://kns.example.com', METRICS_LISTEN: '127.0.0.1:9464',
  })
  try {
    const dev = await openService(development.config)
    const key = (await createDevelopmentKey(dev.db, 100))!
    await dev.close()
    const warned = await openService(development.config)
    await warned.close()
    const failed = await runKns(['doctor', '--production', '--json'], development.env)
    assert.equal(failed.code, 1)
    const body = oneJson(failed) as { ok: boolean; checks: Check[] }
    const findings = body.checks.filter((c) => c.name.startsWith('production: '))
    assert.deepEqual(findings.map((c) => c.name), ['SMS_DELIVERY', 'KNS_SECRET', 'development key', 'X5U_ALLOW_PRIVATE', 'PUBLIC_BASE_URL', 'ZKLOGIN_ISSUER', 'METRICS_LISTEN'].map((n) => `production: ${n}`))
    assert.ok(findings.every((c) => !c.ok))
    assert.match(findings.find((c) => c.name === 'production: development key')!.detail, new RegExp(`npx kns api-key revoke ${key.id}`))
    // The server warns of the same findings at start, one line each.
    assert.deepEqual(findings.map((c) => c.detail).filter((d) => !warned.warnings.includes(d)), [])

    const prod = await openService(production.config)
    await revokeApiKey(prod.db, (await createDevelopmentKey(prod.db, 100))!.id)
    assert.deepEqual(prod.warnings, [])
    await prod.close()
    const passed = await runKns(['doctor', '--production'], production.env)
    assert.equal(passed.code, 0, passed.stdout)
    assert.match(passed.stdout, /ok +production: nothing for development only/)
  } finally {
    await development.cleanup()
    await production.cleanup()
  }
})
