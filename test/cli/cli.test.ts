/**
 * The `kns` command line, run as a real child process (bin/kns.js) on a fresh database:
 * one JSON object on stdout with --json, readable text without, errors on stderr with a
 * non-zero exit code (2 for usage errors).
 */
import assert from 'node:assert/strict'
import { createHash, randomBytes, randomInt } from 'node:crypto'
import { after, before, test } from 'node:test'
import { Ed25519Keypair } from '@mysten/sui/keypairs/ed25519'
import { fromBase58 } from '@mysten/sui/utils'
import { createApproval } from '../../src/approvals/create-approval.ts'
import { MIGRATIONS } from '../../src/migrations.ts'
import { createApiKey } from '../../src/keys/api-keys.ts'
import { findByPhone, linkNumber } from '../../src/identity/numbers.ts'
import { LocalLedger } from '../../src/ledger/local-ledger.ts'
import { openService, type Service } from '../../src/service.ts'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { ENGINE, freshDatabaseEnv, type TestEnv } from '../helpers.ts'
import { killAll, oneJson, runKns, type RunResult } from '../support/process.ts'

let fresh: TestEnv
let opened: Service | undefined

before(async () => {
  fresh = await freshDatabaseEnv()
})

after(async () => {
  await killAll()
  await opened?.close()
  await fresh?.cleanup()
})

const kns = (...args: string[]) => runKns(args, fresh.env)

/** The same database, opened in the test process to check what the CLI did (after `migrate` ran). */
async function service(): Promise<Service> {
  opened ??= await openService(fresh.config)
  return opened
}

function ledger(s: Service): LocalLedger {
  assert.ok(s.ledger instanceof LocalLedger)
  return s.ledger
}

const randomPhone = () => `+4420${String(randomInt(0, 100_000_000)).padStart(8, '0')}`

function assertOk(result: RunResult): void {
  assert.equal(result.code, 0, `exit ${result.code}\nstdout: ${result.stdout}\nstderr: ${result.stderr}`)
}

/** A failed --json command: nothing on stdout, `{ error: { code, message } }` on stderr. */
function assertJsonError(result: RunResult, exitCode: number, code: string, message?: RegExp): string {
  assert.equal(result.code, exitCode, `exit ${result.code}\nstdout: ${result.stdout}\nstderr: ${result.stderr}`)
  assert.equal(result.stdout, '')
  const lines = result.stderr.split('\n').filter(Boolean)
  assert.equal(lines.length, 1, result.stderr)
  const body = JSON.parse(lines[0]!) as { error: { code: string; message: string } }
  assert.deepEqual(Object.keys(body), ['error'])
  assert.equal(body.error.code, code)
  assert.equal(typeof body.error.message, 'string')
  if (message !== undefined) assert.match(body.error.message, message)
  return body.error.message
}

/** A failed text-mode command: nothing on stdout, a readable `kns: ...` line on stderr. */
function assertTextError(result: RunResult, exitCode: number, message: RegExp): void {
  assert.equal(result.code, exitCode, `exit ${result.code}\nstdout: ${result.stdout}\nstderr: ${result.stderr}`)
  assert.equal(result.stdout, '')
  assert.match(result.stderr, /^kns: /)
  assert.match(result.stderr, message)
  assert.throws(() => JSON.parse(result.stderr))
  assert.doesNotMatch(result.stderr, /\bat .*\.(ts|js):\d+/, 'no stack trace')
}

test('migrate --json applies the migrations on a fresh database; a second run says it is up to date', async () => {
  const first = await kns('migrate', '--json')
  assertOk(first)
  assert.equal(first.stderr, '')
  const body = oneJson(first)
  const versions = MIGRATIONS.map((m) => m.version)
  assert.deepEqual(body.applied, versions)
  assert.equal(body.version, Math.max(...versions))
  assert.equal(body.engine, ENGINE)

  const again = await kns('migrate')
  assertOk(again)
  assert.match(again.stdout, new RegExp(`up to date \\(version ${Math.max(...versions)}\\)`))
  assert.throws(() => JSON.parse(again.stdout), 'text mode is not JSON')
})

test('api-key create prints the key once; list shows no secret; revoke marks it revoked', async () => {
  const [created, textCreated] = await Promise.all([
    kns('api-key', 'create', '--vendor', 'Acme Bank', '--scopes', 'approvals,stats', '--rate', '5', '--json'),
    kns('api-key', 'create', '--vendor', 'Globex'),
  ])
  assertOk(created)
  const key = oneJson(created) as { id: string; key: string; vendor: string; scopes: string[]; rate: number }
  for (const field of ['id', 'key', 'vendor', 'scopes']) assert.ok(field in key, `missing ${field}`)
  assert.match(key.key, /^kns_[0-9a-f]{16}_[A-Za-z0-9_-]{43}$/)
  assert.ok(key.key.startsWith(`kns_${key.id}_`))
  assert.equal(key.vendor, 'Acme Bank')
  assert.deepEqual(key.scopes, ['approvals', 'stats'])
  assert.equal(key.rate, 5)

  // Text mode: readable lines with the key on its own line, defaults for scopes.
  assertOk(textCreated)
  const textKey = /^\s+(kns_[0-9a-f]{16}_[A-Za-z0-9_-]{43})$/m.exec(textCreated.stdout)?.[1]
  assert.ok(textKey, textCreated.stdout)
  assert.match(textCreated.stdout, /Globex/)
  assert.match(textCreated.stdout, /approvals,caller/)
  assert.match(textCreated.stdout, /only this once/)
  const textId = textKey.slice(4, 20)

  // The key works against the same database.
  const s = await service()
  assert.equal((await s.apiKeys.authenticate(key.key)).vendor, 'Acme Bank')

  const listed = await kns('api-key', 'list', '--json')
  assertOk(listed)
  const { keys } = oneJson(listed) as { keys: Record<string, unknown>[] }
  assert.deepEqual(keys.map((k) => k.id).sort(), [key.id, textId].sort())
  for (const k of keys) {
    assert.deepEqual(Object.keys(k).sort(), ['createdAt', 'id', 'rate', 'revokedAt', 'scopes', 'vendor'])
    assert.equal(k.revokedAt, null)
    assert.match(k.createdAt as string, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)
  }
  for (const secret of [key.key, textKey]) {
    const raw = secret.slice(21)
    assert.ok(!listed.stdout.includes(raw), 'list must not show the secret')
    assert.ok(!listed.stdout.includes(createHash('sha256').update(raw).digest('hex')), 'list must not show the hash')
  }
  assert.doesNotMatch(listed.stdout, /secret|hash/i)

  const revoked = await kns('api-key', 'revoke', key.id, '--json')
  assertOk(revoked)
  const rev = oneJson(revoked)
  assert.equal(rev.id, key.id)
  assert.equal(rev.vendor, 'Acme Bank')
  assert.ok(Math.abs(Date.parse(rev.revokedAt as string) - Date.now()) < 60_000)

  const [textList, unknown] = await Promise.all([
    kns('api-key', 'list'),
    kns('api-key', 'revoke', '0123456789abcdef', '--json'),
  ])
  assertOk(textList)
  const lines = textList.stdout.split('\n').filter(Boolean)
  assert.equal(lines.length, 2, textList.stdout)
  assert.match(lines.find((l) => l.startsWith(key.id)) ?? '', /revoked.*Acme Bank/)
  assert.match(lines.find((l) => l.startsWith(textId)) ?? '', /active.*Globex/)
  assert.ok(!textList.stdout.includes(textKey.slice(21)))
  assertJsonError(unknown, 1, 'NOT_FOUND', /0123456789abcdef/)
})

test('token mint links the number; transfer moves the token; link re-points a number; unknown token refused', async () => {
  const first = new Ed25519Keypair().toSuiAddress()
  const second = new Ed25519Keypair().toSuiAddress()
  const phone = randomPhone()
  const minted = await kns('token', 'mint', '--phone', phone, '--owner', first, '--json')
  assertOk(minted)
  const { objectId } = oneJson(minted) as { objectId: string }
  assert.match(objectId, /^0x[0-9a-f]{64}$/)

  const s = await service()
  assert.equal((await findByPhone(s.db, phone))?.objectId, objectId, 'the number is linked to the new token')
  assert.equal((await s.ledger.getToken(objectId, { fresh: true }))?.owner, first)

  const otherPhone = randomPhone()
  const missing = `0x${randomBytes(32).toString('hex')}`
  const [transferred, linkUnknown] = await Promise.all([
    kns('token', 'transfer', '--object-id', objectId, '--to', second, '--json'),
    kns('token', 'link', '--phone', otherPhone, '--object-id', missing, '--json'),
  ])
  assertOk(transferred)
  const moved = oneJson(transferred)
  assert.equal(moved.objectId, objectId)
  assert.equal(moved.owner, second)
  assert.equal(fromBase58(moved.digest as string).length, 32)
  assert.equal((await s.ledger.getToken(objectId, { fresh: true }))?.owner, second)

  assert.notEqual(linkUnknown.code, 0)
  assertJsonError(linkUnknown, 1, 'NOT_FOUND', new RegExp(missing))
  assert.equal(await findByPhone(s.db, otherPhone), null)

  const linked = await kns('token', 'link', '--phone', otherPhone, '--object-id', objectId, '--json')
  assertOk(linked)
  assert.equal(oneJson(linked).objectId, objectId)
  assert.equal((await findByPhone(s.db, otherPhone))?.objectId, objectId)
  assert.equal(await findByPhone(s.db, phone), null, 'one token, one number: the old link is gone')
})

test('ledger approve records an ApprovalEvent for the owner and refuses any other key', async () => {
  const s = await service()
  const owner = new Ed25519Keypair()
  const stranger = new Ed25519Keypair()
  const token = await ledger(s).mintToken(owner.toSuiAddress())
  const phone = randomPhone()
  await linkNumber(s.db, phone, token.objectId, 'linked')
  const apiKey = await createApiKey(s.db, { vendor: 'Acme Bank', scopes: ['approvals'], rate: 100 })
  const { approvalNumber } = await createApproval({ db: s.db, ledger: s.ledger, phoneLinks: s.phoneLinks, publicBaseUrl: 'http://localhost', approvalTtlS: 900, approvalCommit: 'sync' }, apiKey, {
    title: 'Wire transfer', message: 'Approve it', successRedirectUrl: 'https://vendor.example/ok',
    cancelRedirectUrl: 'https://vendor.example/no', referenceNumber: 'ref-cli-1', method: 'event', phoneNumber: phone,
  })

  const ownerKey = owner.getSecretKey()
  assert.match(ownerKey, /^suiprivkey1/)
  const [refused, approved] = await Promise.all([
    kns('ledger', 'approve', '--object-id', token.objectId, '--ref', approvalNumber, '--secret-key', stranger.getSecretKey(), '--json'),
    kns('ledger', 'approve', '--object-id', token.objectId, '--ref', approvalNumber, '--secret-key', ownerKey, '--json'),
  ])
  assert.notEqual(refused.code, 0)
  assertJsonError(refused, 1, 'FORBIDDEN', /does not own/)

  assertOk(approved)
  const { digest } = oneJson(approved) as { digest: string }
  assert.equal(fromBase58(digest).length, 32)
  const tx = await s.ledger.getTransaction(digest)
  assert.ok(tx)
  assert.equal(tx.success, true)
  assert.equal(tx.sender, owner.toSuiAddress())
  assert.deepEqual(tx.events.map((e) => [e.type, e.json]), [[s.ledger.approvalEventType, { object_id: token.objectId, ref: approvalNumber }]])
  assert.ok(!approved.stdout.includes(ownerKey) && !approved.stderr.includes(ownerKey), 'the secret key is never echoed')

  // Not for a `sign` approval (its owner signs a message), another token's, or an unknown one:
  // refused, no transaction recorded.
  const { approvalNumber: signRef } = await createApproval({ db: s.db, ledger: s.ledger, phoneLinks: s.phoneLinks, publicBaseUrl: 'http://localhost', approvalTtlS: 900, approvalCommit: 'sync' }, apiKey, {
    title: 'Wire transfer', message: 'Approve it', successRedirectUrl: 'https://vendor.example/ok',
    cancelRedirectUrl: 'https://vendor.example/no', referenceNumber: 'ref-cli-2', method: 'sign', phoneNumber: phone,
  })
  const other = await ledger(s).mintToken(owner.toSuiAddress())
  const [onSign, onOtherToken, onUnknown] = await Promise.all([
    kns('ledger', 'approve', '--object-id', token.objectId, '--ref', signRef, '--secret-key', ownerKey, '--json'),
    kns('ledger', 'approve', '--object-id', other.objectId, '--ref', approvalNumber, '--secret-key', ownerKey, '--json'),
    kns('ledger', 'approve', '--object-id', token.objectId, '--ref', 'a'.repeat(24), '--secret-key', ownerKey, '--json'),
  ])
  assertJsonError(onSign, 2, 'INVALID_REQUEST', /uses method "sign".*wallet signature/)
  assertJsonError(onOtherToken, 2, 'INVALID_REQUEST', /is for token/)
  assertJsonError(onUnknown, 1, 'NOT_FOUND', /no approval/)
})

test('help: kns --help, -h, help <command> and <command> --help print usage and exit 0; an unknown command\'s help exits 2', async () => {
  const [long, short, topic, flag, unknown] = await Promise.all([
    kns('--help'), kns('-h'), kns('help', 'token'), kns('api-key', 'create', '--help'), kns('frobnicate', '--help'),
  ])
  for (const r of [long, short]) {
    assert.equal(r.code, 0, r.stderr)
    assert.match(r.stdout, /Usage: kns <command>/)
  }
  assert.equal(topic.code, 0, topic.stderr)
  assert.match(topic.stdout, /token mint --phone/)
  assert.doesNotMatch(topic.stdout, /api-key create/)
  assert.equal(flag.code, 0, flag.stderr)
  assert.match(flag.stdout, /api-key create --vendor/)
  assertTextError(unknown, 2, /unknown command 'frobnicate'/)
})

test('a command on a missing embedded database stops, naming the path, and creates nothing; text mode says which database', async () => {
  const elsewhere = await freshDatabaseEnv()
  try {
    if (ENGINE === 'sqlite') {
      const result = await runKns(['api-key', 'list'], elsewhere.env)
      assertTextError(result, 1, /no database at .*kns\.db.*kns migrate/)
      assert.equal(existsSync(join(elsewhere.env.DATA_DIR!, 'kns.db')), false, 'no database was created')
    }
    const listed = await kns('api-key', 'list')
    assert.equal(listed.code, 0, listed.stderr)
    assert.match(listed.stderr, ENGINE === 'sqlite' ? /^kns: using SQLite \/.*kns\.db$/m : /^kns: using PostgreSQL /m)
  } finally {
    await elsewhere.cleanup()
  }
})

test('usage errors exit 2 with a message on stderr and nothing on stdout', async () => {
  const [unknownJson, unknownOption, missingVendor] = await Promise.all([
    kns('frobnicate', '--json'),
    kns('api-key', 'list', '--bogus'),
    kns('api-key', 'create', '--json'),
  ])
  assertJsonError(unknownJson, 2, 'USAGE', /unknown command 'frobnicate'/)
  assertTextError(unknownOption, 2, /Unknown option '--bogus'/)
  assert.match(unknownOption.stderr, /kns help/)
  assertJsonError(missingVendor, 2, 'USAGE', /--vendor/)
})

test('an invalid configuration is refused with a message naming the variable', async () => {
  const [portText, ledgerJson] = await Promise.all([
    runKns(['api-key', 'list'], { ...fresh.env, PORT: 'abc' }),
    runKns(['api-key', 'list', '--json'], { ...fresh.env, LEDGER: 'ethereum' }),
  ])
  assertTextError(portText, 1, /PORT must be a whole number, got "abc"/)
  assertJsonError(ledgerJson, 1, 'INVALID_CONFIG', /\bLEDGER\b.*ethereum/)
})
