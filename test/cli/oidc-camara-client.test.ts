/**
 * `kns oidc client add --grant-type ... --jwks <file> --scope ...` as a real child process:
 * prints the client ID (and the client with --json); refusals are exit 2 INVALID_REQUEST or
 * USAGE with nothing stored; `list` shows grant types and scopes; the login form as before.
 */
import assert from 'node:assert/strict'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { after, before, test } from 'node:test'
import { exportJWK, generateKeyPair } from 'jose'
import { FRAUD_PREVENTION_PURPOSE } from '../../src/camara/access.ts'
import { freshDatabaseEnv, type TestEnv } from '../helpers.ts'
import { clientKeyPair } from '../support/camara-client.ts'
import { killAll, oneJson, runKns, type RunResult } from '../support/process.ts'

let fresh: TestEnv
const kns = (...args: string[]) => runKns(args, fresh.env)
const SCOPE = `sim-swap:check sim-swap:retrieve-date ${FRAUD_PREVENTION_PURPOSE}`

before(async () => {
  fresh = await freshDatabaseEnv()
  assert.equal((await kns('migrate')).code, 0)
})
after(async () => {
  await killAll()
  await fresh?.cleanup()
})

function file(name: string, content: unknown): string {
  const path = join(fresh.env.DATA_DIR!, name)
  writeFileSync(path, typeof content === 'string' ? content : JSON.stringify(content))
  return path
}

function assertRefused(result: RunResult, code: string, message: RegExp): void {
  assert.equal(result.code, 2, `stdout: ${result.stdout}\nstderr: ${result.stderr}`)
  assert.equal(result.stdout, '')
  const body = JSON.parse(result.stderr.trim().split('\n').pop()!) as { error: { code: string; message: string } }
  assert.equal(body.error.code, code)
  assert.match(body.error.message, message)
}

async function clientCount(): Promise<number> {
  return ((oneJson(await kns('oidc', 'client', 'list', '--json')).clients as unknown[])).length
}

test('a two-legged client: the clientId printed, the client with --json, listed with its grant type and scopes', async () => {
  const jwks = file('bank.jwks.json', { keys: [(await clientKeyPair('ES256', 'bank-1')).publicJwk] })
  const text = await kns('oidc', 'client', 'add', '--name', 'Acme Bank', '--grant-type', 'client_credentials', '--jwks', jwks, '--scope', SCOPE)
  assert.equal(text.code, 0, text.stderr)
  const id = /added client (cl_[0-9a-f]+) \(Acme Bank\)/.exec(text.stdout)?.[1]
  assert.ok(id, text.stdout)
  assert.match(text.stdout, /client_credentials/)

  const json = oneJson(await kns('oidc', 'client', 'add', '--name', 'Acme Bank 2', '--client-id', 'acme-fraud', '--grant-type', 'client_credentials', '--jwks', jwks, '--scope', SCOPE, '--json'))
  assert.equal(json.clientId, 'acme-fraud')
  assert.deepEqual(json.grantTypes, ['client_credentials'])
  assert.equal(json.scope, SCOPE)
  assert.deepEqual(json.keyIds, ['bank-1'])
  assert.equal(json.clientSecret, null)

  const listed = await kns('oidc', 'client', 'list')
  assert.equal(listed.code, 0, listed.stderr)
  const line = listed.stdout.split('\n').find((l) => l.startsWith('acme-fraud'))
  assert.ok(line, listed.stdout)
  assert.match(line, /private_key_jwt {2}client_credentials {2}Acme Bank 2 .*scope: sim-swap:check sim-swap:retrieve-date dpv:FraudPreventionAndDetection/)
})

test('a three-legged client takes its redirect URI', async () => {
  const jwks = file('app.jwks.json', { keys: [(await clientKeyPair('RS256', 'app-1')).publicJwk] })
  const json = oneJson(await kns('oidc', 'client', 'add', '--name', 'Acme Bank app', '--grant-type', 'authorization_code', '--redirect-uri', 'https://bank.example/cb',
    '--jwks', jwks, '--scope', `openid ${SCOPE}`, '--json'))
  assert.deepEqual(json.grantTypes, ['authorization_code'])
  assert.deepEqual(json.redirectUris, ['https://bank.example/cb'])
  assertRefused(await kns('oidc', 'client', 'add', '--name', 'No URI', '--grant-type', 'authorization_code', '--jwks', jwks, '--scope', SCOPE, '--json'), 'USAGE', /--redirect-uri is required/)
})

test('refusals: a private key, not JSON, a missing file, a wrong grant type, a scope outside the list; nothing stored', async () => {
  const before = await clientCount()
  const { privateKey } = await generateKeyPair('ES256', { extractable: true })
  const leaked = file('leaked.json', { keys: [{ ...(await exportJWK(privateKey)), kid: 'k' }] })
  const good = file('good.json', { keys: [(await clientKeyPair()).publicJwk] })
  const add = (...extra: string[]) => kns('oidc', 'client', 'add', '--name', 'Refused', '--json', ...extra)
  assertRefused(await add('--grant-type', 'client_credentials', '--jwks', leaked, '--scope', SCOPE), 'INVALID_REQUEST', /private key material \(d\)/)
  assertRefused(await add('--grant-type', 'client_credentials', '--jwks', file('bad.json', 'not json'), '--scope', SCOPE), 'INVALID_REQUEST', /is not JSON/)
  assertRefused(await add('--grant-type', 'client_credentials', '--jwks', file('big.json', ' '.repeat(17_000)), '--scope', SCOPE), 'INVALID_REQUEST', /at most 16384 bytes/)
  assertRefused(await add('--grant-type', 'client_credentials', '--jwks', join(fresh.env.DATA_DIR!, 'missing.json'), '--scope', SCOPE), 'INVALID_REQUEST', /cannot read/)
  assertRefused(await add('--grant-type', 'password', '--jwks', good, '--scope', SCOPE), 'USAGE', /--grant-type must be/)
  assertRefused(await add('--grant-type', 'client_credentials', '--jwks', good), 'USAGE', /--scope is required/)
  assertRefused(await add('--grant-type', 'client_credentials', '--scope', SCOPE), 'USAGE', /--jwks is required/)
  assertRefused(await add('--grant-type', 'client_credentials', '--jwks', good, '--scope', 'sim-swap:check dpv:Marketing'), 'INVALID_REQUEST', /cannot be registered/)
  assertRefused(await add('--redirect-uri', 'https://bank.example/cb', '--jwks', good), 'USAGE', /add --grant-type/)
  assertRefused(await add('--grant-type', 'client_credentials', '--jwks', good, '--scope', SCOPE, '--confidential'), 'USAGE', /not a secret/)
  assert.equal(await clientCount(), before)
})

test('the login client form keeps working', async () => {
  const json = oneJson(await kns('oidc', 'client', 'add', '--name', 'Bank web', '--redirect-uri', 'https://bank.example/login', '--json'))
  assert.deepEqual(json.grantTypes, ['authorization_code', 'implicit'])
  assert.equal(json.scope, null)
  assert.deepEqual(json.keyIds, [])
  assert.equal(json.clientSecret, null)
  assertRefused(await kns('oidc', 'client', 'add', '--name', 'No URI', '--json'), 'USAGE', /--redirect-uri is required/)
})
