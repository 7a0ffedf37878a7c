/**
 * A signing key bound to what it may sign (issue "Calls as networks send them"): the CLI binds
 * keys at creation and after (`kns api-key create --credentials`, `kns api-key bind`), and
 * migration 18 leaves every signing key made before bindings bound to nothing.
 */
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { after, before, test } from 'node:test'
import { migrate } from '../../src/db/migrations.ts'
import { openDatabase } from '../../src/db/open.ts'
import { findApiKey } from '../../src/keys/api-keys.ts'
import { MIGRATIONS } from '../../src/migrations.ts'
import { freshDatabaseEnv, type TestEnv } from '../helpers.ts'
import { killAll, oneJson, runKns } from '../support/process.ts'
import { makeShakenPki, type ShakenPki } from '../support/shaken-pki.ts'

let pki: ShakenPki
let fresh: TestEnv

before(async () => {
  pki = makeShakenPki({ crlUrl: 'https://crl.example.test/inter.crl' })
  fresh = await freshDatabaseEnv({ KNS_SECRET: randomBytes(32).toString('hex') })
  assert.equal((await runKns(['migrate'], fresh.env)).code, 0)
  const chain = join(pki.dir, 'spc-bundle.pem')
  writeFileSync(chain, pki.leaves.spc.bundle)
  const added = await runKns(['shaken', 'credential', 'add', '--name', 'carrier', '--key', join(pki.dir, 'spc.key'), '--cert', chain,
    '--x5u', 'https://certs.carrier.example/spc.pem', '--display-name', 'Carrier Inc'], fresh.env)
  assert.equal(added.code, 0, added.stderr)
})
after(async () => {
  await killAll()
  await fresh?.cleanup()
  pki?.cleanup()
})

test('create --credentials --attest --numbers binds the key; list shows it; bind changes it', async () => {
  const created = await runKns(['api-key', 'create', '--vendor', 'SBC', '--scopes', 'signing', '--credentials', 'carrier', '--attest', 'C,B',
    '--numbers', '+1202555*,+14155550100', '--json'], fresh.env)
  assert.equal(created.code, 0, created.stderr)
  const key = oneJson(created)
  assert.deepEqual(key.signing, { credentials: ['carrier'], attest: ['B', 'C'], numbers: ['+1202555*', '+14155550100'] })
  const listed = oneJson(await runKns(['api-key', 'list', '--json'], fresh.env))
  assert.deepEqual((listed.keys as Array<{ id: string; signing?: unknown }>).find((k) => k.id === key.id)?.signing, key.signing)
  const rebound = await runKns(['api-key', 'bind', String(key.id), '--credentials', 'carrier'], fresh.env)
  assert.equal(rebound.code, 0, rebound.stderr)
  assert.match(rebound.stdout, /credentials carrier, attest A,B,C/)
  const text = await runKns(['api-key', 'list'], fresh.env)
  assert.match(text.stdout, /signing: credentials carrier, attest A,B,C/)
})

test('refused: an unknown credential, a binding without the signing scope, --attest alone, a bad level or number; bind on a key without signing', async () => {
  const unknown = await runKns(['api-key', 'create', '--vendor', 'SBC', '--scopes', 'signing', '--credentials', 'nope'], fresh.env)
  assert.equal(unknown.code, 2)
  assert.match(unknown.stderr, /no signing credential nope/)
  const noScope = await runKns(['api-key', 'create', '--vendor', 'SBC', '--scopes', 'caller', '--credentials', 'carrier'], fresh.env)
  assert.equal(noScope.code, 2)
  assert.match(noScope.stderr, /add the signing scope/)
  assert.equal((await runKns(['api-key', 'create', '--vendor', 'SBC', '--scopes', 'signing', '--attest', 'A'], fresh.env)).code, 2)
  assert.match((await runKns(['api-key', 'create', '--vendor', 'SBC', '--scopes', 'signing', '--credentials', 'carrier', '--attest', 'D'], fresh.env)).stderr, /--attest lists A, B and\/or C/)
  assert.match((await runKns(['api-key', 'create', '--vendor', 'SBC', '--scopes', 'signing', '--credentials', 'carrier', '--numbers', '1202555'], fresh.env)).stderr, /not an E\.164 number or a prefix/)
  const caller = oneJson(await runKns(['api-key', 'create', '--vendor', 'V', '--scopes', 'caller', '--json'], fresh.env))
  const bind = await runKns(['api-key', 'bind', String(caller.id), '--credentials', 'carrier'], fresh.env)
  assert.equal(bind.code, 2)
  assert.match(bind.stderr, /has no signing scope/)
})

test('an unbound signing key is listed as signing nothing', async () => {
  const created = oneJson(await runKns(['api-key', 'create', '--vendor', 'Old SBC', '--scopes', 'signing', '--json'], fresh.env))
  assert.equal(created.signing, null)
  assert.match((await runKns(['api-key', 'list'], fresh.env)).stdout, /signing: bound to no credential: signs nothing/)
})

test('migration 18: signing keys made before it are bound to nothing', async () => {
  const old = await freshDatabaseEnv()
  const db = openDatabase(old.config)
  try {
    await migrate(db, MIGRATIONS.filter((m) => m.version <= 17))
    await db.run('INSERT INTO api_keys (id, secret_hash, vendor, scopes, rate, created_at) VALUES ($1, $2, $3, $4, 10, 0)', ['00000000000000a1', 'x', 'V', 'caller,signing'])
    assert.deepEqual(await migrate(db, MIGRATIONS.filter((m) => m.version <= 18)), [18])
    assert.equal((await findApiKey(db, '00000000000000a1'))?.signing, null)
  } finally {
    await db.close()
    await old.cleanup()
  }
})
