/**
 * The caller-verification commands of the `kns` CLI, run as real child processes on a fresh
 * database: keystore keygen / create / add-key / revoke-key, registry link / unlink, passport
 * sign (checked by `jose`) and passport verify. The tests share state and run in order.
 */
import assert from 'node:assert/strict'
import { generateKeyPairSync, createPublicKey } from 'node:crypto'
import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { after, before, test } from 'node:test'
import { importSPKI, jwtVerify } from 'jose'
import { ConflictError, ValidationError } from '../../src/errors.ts'
import { linkNumber } from '../../src/identity/numbers.ts'
import { openService, type Service } from '../../src/service.ts'
import { freshDatabaseEnv, type TestEnv } from '../helpers.ts'
import { killAll, oneJson, runKns, type RunResult } from '../support/process.ts'
import { callerNumber, conventionalKeyId, localLedger, newSigner, nowS, randomObjectId, randomPhone, STEPS } from '../support/caller.ts'

let fresh: TestEnv
let service: Service
let dir: string
let phone: string
let tokenId: string
const dest = randomPhone()
/** Filled in as the tests go. */
const state = { keystoreId: '', keyId: '', publicPem: '', privatePath: '', publicPath: '', secondKeystore: '', jwt: '' }

before(async () => {
  fresh = await freshDatabaseEnv()
  dir = fresh.env.DATA_DIR!
  service = await openService(fresh.config, { watchChanges: false })
  const token = await localLedger({ service }).mintToken(randomObjectId())
  tokenId = token.objectId
  phone = randomPhone()
  await linkNumber(service.db, phone, tokenId, 'linked')
})

after(async () => {
  await killAll()
  await service?.close()
  await fresh?.cleanup()
})

const kns = (...args: string[]) => runKns(args, fresh.env)

function ok(result: RunResult): Record<string, unknown> {
  assert.equal(result.code, 0, `exit ${result.code}\nstdout: ${result.stdout}\nstderr: ${result.stderr}`)
  return oneJson(result)
}

/** Non-zero exit, nothing on stdout, `{ error: { code } }` on stderr. */
function refused(result: RunResult, exit: number, code: string): string {
  assert.equal(result.code, exit, `stdout: ${result.stdout}\nstderr: ${result.stderr}`)
  assert.equal(result.stdout, '')
  const error = (JSON.parse(result.stderr.trim().split('\n').at(-1)!) as { error: { code: string; message: string } }).error
  assert.equal(error.code, code, result.stderr)
  return error.message
}

function writePublic(name: string, pem: string): string {
  const path = join(dir, name)
  writeFileSync(path, pem)
  return path
}

test('keystore keygen writes an ES256 key pair (private 0600) and prints the conventional key ID', async () => {
  const out = ok(await kns('keystore', 'keygen', '--out', join(dir, 'operator'), '--json'))
  state.privatePath = out.privateKey as string
  state.publicPath = out.publicKey as string
  assert.equal(state.privatePath, join(dir, 'operator.key.pem'))
  assert.equal(state.publicPath, join(dir, 'operator.pub.pem'))
  assert.equal(statSync(state.privatePath).mode & 0o777, 0o600)
  state.publicPem = readFileSync(state.publicPath, 'utf8')
  const pub = createPublicKey(state.publicPem)
  assert.equal(pub.asymmetricKeyType, 'ec')
  assert.equal(pub.asymmetricKeyDetails?.namedCurve, 'prime256v1')
  assert.equal(createPublicKey(readFileSync(state.privatePath, 'utf8')).export({ type: 'spki', format: 'pem' }), state.publicPem)
  assert.match(out.keyId as string, /^[0-9a-f]{32}$/)
  assert.equal(out.keyId, conventionalKeyId(state.publicPem))

  // Never overwrites: the same --out again is refused and the key is untouched.
  const before = readFileSync(state.privatePath, 'utf8')
  refused(await kns('keystore', 'keygen', '--out', join(dir, 'operator'), '--json'), 1, 'CONFLICT')
  assert.equal(readFileSync(state.privatePath, 'utf8'), before)
})

test('keystore keygen --out <bare name> writes under $DATA_DIR/keys, not the working directory', async () => {
  const out = ok(await kns('keystore', 'keygen', '--out', 'bare-operator', '--json'))
  assert.equal(out.privateKey, join(fresh.env.DATA_DIR!, 'keys', 'bare-operator.key.pem'))
  assert.ok(existsSync(out.privateKey as string))
  assert.equal(existsSync('bare-operator.key.pem'), false)
})

test('keystore create: default key ID = first 32 hex of SHA-256 over the PEM base64 body; stored with its fields', async () => {
  const creator = randomObjectId()
  const out = ok(await kns('keystore', 'create', '--name', 'Acme Telecom', '--creator', creator, '--image-url', 'https://acme.example/logo.png',
    '--public-key', state.publicPath, '--json'))
  assert.match(out.objectId as string, /^0x[0-9a-f]{64}$/)
  assert.equal(out.keyId, conventionalKeyId(state.publicPem))
  state.keystoreId = out.objectId as string
  state.keyId = out.keyId as string
  const stored = await service.ledger.getKeystore(state.keystoreId)
  assert.equal(stored?.name, 'Acme Telecom')
  assert.equal(stored?.creator, creator)
  assert.equal(stored?.imageUrl, 'https://acme.example/logo.png')
  assert.deepEqual(stored?.keys.map((k) => [k.keyId, k.revoked]), [[state.keyId, false]])
})

test('keystore create with --key-id; a non-P-256 public key (RSA here; Ed25519, P-384, junk in-process) is refused', async () => {
  const pemOf = (pair: { publicKey: { export(o: { type: 'spki'; format: 'pem' }): string | Buffer } }) => pair.publicKey.export({ type: 'spki', format: 'pem' }).toString()
  const rsaPem = pemOf(generateKeyPairSync('rsa', { modulusLength: 2048 }))
  const rsa = writePublic('rsa.pub.pem', rsaPem)
  const second = newSigner()
  const secondPath = writePublic('second.pub.pem', second.publicPem)
  const create = (file: string, ...extra: string[]) =>
    kns('keystore', 'create', '--name', 'Other', '--creator', randomObjectId(), '--public-key', file, ...extra, '--json')
  const [custom, bad] = await Promise.all([create(secondPath, '--key-id', 'other-2026:k1'), create(rsa)])
  const created = ok(custom)
  assert.equal(created.keyId, 'other-2026:k1')
  state.secondKeystore = created.objectId as string
  assert.match(refused(bad, 2, 'INVALID_REQUEST'), /P-256/)
  // The same rule, in-process (what the CLI calls), for the other shapes.
  const keystores = localLedger({ service }).keystores
  const others = [pemOf(generateKeyPairSync('ed25519')), pemOf(generateKeyPairSync('ec', { namedCurve: 'P-384' })),
    pemOf(generateKeyPairSync('ec', { namedCurve: 'secp256k1' })), 'hello', second.privatePem, rsaPem]
  for (const publicKey of others) {
    await assert.rejects(keystores.create({ name: 'Bad', creator: randomObjectId(), publicKey }), ValidationError)
  }
  assert.equal(String((await service.db.get<{ n: number }>('SELECT COUNT(*) AS n FROM ledger_keystores', []))?.n), '2')
})

test('keystore add-key: default key ID; a non-P-256 (Ed25519) key is refused; a duplicate key ID conflicts', async () => {
  const extra = newSigner()
  const path = writePublic('extra.pub.pem', extra.publicPem)
  const ed = writePublic('ed25519.pub.pem', generateKeyPairSync('ed25519').publicKey.export({ type: 'spki', format: 'pem' }).toString())
  const [added, edResult] = await Promise.all([
    kns('keystore', 'add-key', state.keystoreId, '--public-key', path, '--json'),
    kns('keystore', 'add-key', state.keystoreId, '--public-key', ed, '--key-id', 'ed', '--json'),
  ])
  assert.deepEqual(ok(added), { objectId: state.keystoreId, keyId: extra.keyId })
  assert.match(refused(edResult, 2, 'INVALID_REQUEST'), /P-256/)
  await assert.rejects(localLedger({ service }).keystores.addKey(state.keystoreId, state.publicPem), ConflictError)
  const keys = (await service.ledger.getKeystore(state.keystoreId))!.keys.map((k) => k.keyId)
  assert.deepEqual(keys.sort(), [state.keyId, extra.keyId].sort())
})

test('registry link --phone and --object-id; both at once is a usage error', async () => {
  const [byPhone, byObject, both] = await Promise.all([
    kns('registry', 'link', '--phone', phone, '--keystore', state.keystoreId, '--json'),
    kns('registry', 'link', '--object-id', tokenId, '--keystore', state.secondKeystore, '--json'),
    kns('registry', 'link', '--phone', phone, '--object-id', tokenId, '--keystore', state.keystoreId, '--json'),
  ])
  assert.deepEqual(ok(byPhone), { objectId: tokenId, keystore: state.keystoreId, linked: true })
  assert.deepEqual(ok(byObject), { objectId: tokenId, keystore: state.secondKeystore, linked: true })
  refused(both, 2, 'USAGE')
  assert.deepEqual((await service.ledger.getLinkedKeystores(tokenId)).sort(), [state.keystoreId, state.secondKeystore].sort())
})

test('passport sign prints a JWT that jose verifies with the published key: header and claims as asked', async () => {
  const iat = nowS()
  const out = ok(await kns('passport', 'sign', '--orig', phone, '--dest', dest, '--key', state.privatePath, '--kid', state.keyId,
    '--attest', 'B', '--origid', 'call-123', '--iat', String(iat), '--json'))
  state.jwt = out.jwt as string
  const { payload, protectedHeader } = await jwtVerify(state.jwt, await importSPKI(state.publicPem, 'ES256'), { algorithms: ['ES256'], typ: 'passport' })
  assert.deepEqual(protectedHeader, { alg: 'ES256', typ: 'passport', ppt: 'shaken', kid: state.keyId })
  assert.deepEqual(payload, { attest: 'B', dest: { tn: [dest] }, iat, orig: { tn: phone }, origid: 'call-123' })
  assert.equal(Buffer.from(state.jwt.split('.')[2]!, 'base64url').length, 64, 'JOSE r||s')
})

test('passport verify prints the step report (text), and { success, steps } with --json', async () => {
  const text = await kns('passport', 'verify', '--orig', phone, '--dest', dest, '--jwt', state.jwt)
  assert.equal(text.code, 0, text.stderr)
  const lines = text.stdout.trim().split('\n')
  assert.deepEqual(lines.slice(0, STEPS.length).map((l) => l.split(/\s+/).slice(0, 2).join(' ')), STEPS.map((s) => `ok ${s}${s === 'check_jws_format' ? '' : ':'}`))
  assert.equal(lines.at(-1), 'verified (ledger)')
  assert.doesNotMatch(text.stdout, /BEGIN|PUBLIC KEY/)

  const report = ok(await kns('passport', 'verify', '--orig', phone, '--dest', dest, '--jwt', state.jwt, '--json')) as { success: boolean; steps: { name: string; ok: boolean }[] }
  assert.deepEqual(Object.keys(report).sort(), ['steps', 'success', 'trust'])
  assert.equal(report.success, true)
  assert.deepEqual(report.steps.map((s) => [s.name, s.ok]), STEPS.map((s) => [s, true]))
})

test('passport sign --div and verify --identity, repeated: a diverted call verifies link by link (its dest alone fails); neither or both of --jwt/--identity is a usage error', async () => {
  // The call to `dest` was forwarded by the number it reached (`diverter`) to `forwardedTo`.
  const diverter = await callerNumber({ service })
  const forwardedTo = randomPhone()
  const shaken = ok(await kns('passport', 'sign', '--orig', phone, '--dest', diverter.phone, '--key', state.privatePath, '--kid', state.keyId, '--json')).jwt as string
  // The diverting provider signs its div PASSporT with its own key.
  const diverterKey = writePublic('diverter.key.pem', diverter.signers[0]!.privatePem)
  const div = ok(await kns('passport', 'sign', '--orig', phone, '--dest', forwardedTo, '--div', diverter.phone, '--key', diverterKey,
    '--kid', diverter.signers[0]!.keyId, '--json')).jwt as string
  const { payload, protectedHeader } = await jwtVerify(div, await importSPKI(diverter.signers[0]!.publicPem, 'ES256'), { algorithms: ['ES256'], typ: 'passport' })
  assert.deepEqual(protectedHeader, { alg: 'ES256', typ: 'passport', ppt: 'div', kid: diverter.signers[0]!.keyId })
  assert.deepEqual(Object.keys(payload).sort(), ['dest', 'div', 'iat', 'orig'])
  assert.deepEqual([payload.div, payload.dest], [{ tn: diverter.phone }, { tn: [forwardedTo] }])
  refused(await kns('passport', 'sign', '--orig', phone, '--dest', forwardedTo, '--div', diverter.phone, '--key', diverterKey, '--attest', 'A', '--json'), 2, 'USAGE')
  const args = ['passport', 'verify', '--orig', phone, '--dest', forwardedTo]
  const alone = await kns(...args, '--identity', `${shaken};ppt=shaken`, '--json')
  assert.equal(alone.code, 1)
  assert.match((oneJson(alone) as { reason: string }).reason, /^DEST_MISMATCH: /)

  const text = await kns(...args, '--identity', `${div};ppt=div`, '--identity', `${shaken};ppt=shaken`)
  assert.equal(text.code, 0, text.stdout + text.stderr)
  assert.match(text.stdout, /^ok {3}check_diversion_chain: /m)
  assert.match(text.stdout, new RegExp(`^diverted from \\${diverter.phone} to \\${forwardedTo} \\(ledger\\)$`, 'm'))
  assert.equal(text.stdout.trim().split('\n').at(-1), 'verified (ledger)')
  const report = ok(await kns(...args, '--identity', `${shaken};ppt=shaken`, '--identity', `${div};ppt=div`, '--json')) as { success: boolean; div: unknown }
  assert.equal(report.success, true)
  assert.deepEqual(report.div, [{ from: diverter.phone, to: [forwardedTo], trust: 'ledger' }])

  refused(await kns(...args, '--json'), 2, 'USAGE')
  refused(await kns(...args, '--jwt', shaken, '--identity', `${shaken};ppt=shaken`, '--json'), 2, 'USAGE')
})

test('keystore revoke-key: stored revoked; passport verify then reports the failing step', async () => {
  assert.deepEqual(ok(await kns('keystore', 'revoke-key', state.keystoreId, state.keyId, '--json')), { objectId: state.keystoreId, keyId: state.keyId, revoked: true })
  assert.equal((await service.ledger.getKeystore(state.keystoreId))!.keys.find((k) => k.keyId === state.keyId)?.revoked, true)
  const result = await kns('passport', 'verify', '--orig', phone, '--dest', dest, '--jwt', state.jwt, '--json')
  assert.equal(result.code, 1, 'a JWT that does not verify exits 1 (the report is still printed)')
  const report = oneJson(result) as { success: boolean; reason: string; steps: { name: string; ok: boolean }[] }
  assert.equal(report.success, false)
  assert.match(report.reason, /^KEY_NOT_FOUND: /)
  assert.deepEqual(report.steps.map((s) => [s.name, s.ok]), [...STEPS.slice(0, 3).map((s) => [s, true]), ['resolve_keys', false]])
})

test('registry unlink --object-id and --phone (without +)', async () => {
  const [byObject, byPhone] = await Promise.all([
    kns('registry', 'unlink', '--object-id', tokenId, '--keystore', state.secondKeystore, '--json'),
    kns('registry', 'unlink', '--phone', phone.slice(1), '--keystore', state.keystoreId, '--json'),
  ])
  assert.deepEqual(ok(byObject), { objectId: tokenId, keystore: state.secondKeystore, linked: false, removed: true })
  assert.deepEqual(ok(byPhone), { objectId: tokenId, keystore: state.keystoreId, linked: false, removed: true })
  assert.deepEqual(await service.ledger.getLinkedKeystores(tokenId), [])
})
