/**
 * `kns doctor`: the database and the configured ledger deployment, checked on demand; exit 0
 * when all is well, 1 with each problem named (the variable to fix) otherwise.
 */
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { after, before, test } from 'node:test'
import { freshDatabaseEnv, type TestEnv } from '../helpers.ts'
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
  assert.deepEqual(body.checks.map((c) => c.name), ['database', 'ledger'])
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
  assert.match(body.checks[1]?.detail ?? '', /cannot be asked/)
  assert.doesNotMatch(result.stdout + result.stderr, /secret/)
})
