/**
 * Backups that are restored (issue 32, item 7), by the procedure of docs/operations.md
 * ("Backups"). A real server holds registered numbers, approvals (pending, approved,
 * cancelled), API keys, a webhook subscription and statistics; the backup is taken while a
 * writer keeps creating approvals; it is restored on a fresh server, KNS is started there with
 * the same configuration, and everything from before the backup must answer as it did: the
 * approvals' transaction_details, the numbers' userId, zkAddress and token, the key, the
 * statistics, and the secret (webhook signatures and statistics client hashes derive from it),
 * given in KNS_SECRET or generated and kept in the database. A start with another secret is
 * refused. PostgreSQL pass: pg_dump / pg_restore from one throw-away cluster into a new one
 * (root, for pg_createcluster); SQLite pass: the sqlite3 shell's `.backup`.
 */
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, test, type TestContext } from 'node:test'
import { Ed25519Keypair } from '@mysten/sui/keypairs/ed25519'
import { loadConfig } from '../../src/config.ts'
import { createApiKey } from '../../src/keys/api-keys.ts'
import { openService } from '../../src/service.ts'
import { ENGINE } from '../helpers.ts'
import {
  createEmptyDatabase, PG_BASEBACKUP_FLAGS, PG_DUMP_FLAGS, PG_RESTORE_FLAGS, postgresToolsUnavailable, restoreBackup, restoreBaseBackup, restoreSqliteBackup, sqliteShellUnavailable,
  takeBackup, takeBaseBackup, takeSqliteBackup, type Backup,
} from '../support/backup.ts'
import { randomPhone } from '../support/kns.ts'
import { approvalPhoneBody, freePort, killAll, postJson, ROOT, runKns, sleep, startServer, type RunningServer } from '../support/process.ts'
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.ts'
import { ApprovalLoad, LOAD_SERVER_ENV, missingApprovals, summarize } from './approval-load.ts'
import { createThrowawayCluster, unavailableReason, type ThrowawayCluster } from './throwaway-postgres.ts'

/** A way of taking and restoring a backup, with the servers it needs. */
interface Method {
  name: string
  skip: string | false
  /** With KNS_SECRET given, and generated (kept in the database). */
  secrets: readonly Secret[]
  /** The backup says which tables' rows it holds (a dump does; a base backup is files). */
  listsTables: boolean
  setup(): Promise<void>
  teardown(): Promise<void>
  /** The environment (DATABASE_URL or DATA_DIR) of a new, empty database named `name`. */
  source(name: string): Promise<Record<string, string>>
  take(source: Record<string, string>, dir: string): Promise<Backup>
  /** Restores into a fresh server; returns the environment that serves the restored database `name`. */
  restore(backup: Backup, name: string): Promise<Record<string, string>>
}
type Secret = 'given' | 'generated'

const dirs: string[] = []
function tempDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix))
  dirs.push(dir)
  return dir
}

const postgresSkip = ENGINE !== 'postgres' ? 'runs in the PostgreSQL pass (DATABASE_URL set); it makes clusters of its own'
  : unavailableReason() ?? postgresToolsUnavailable() ?? false

/** The old server and the new one: a throw-away cluster each, the new one with nothing of the old but the backup. */
function twoClusters() {
  const clusters: { origin?: ThrowawayCluster; fresh?: ThrowawayCluster } = {}
  return {
    clusters,
    async setup() {
      clusters.origin = await createThrowawayCluster()
      clusters.fresh = await createThrowawayCluster()
    },
    async teardown() {
      await clusters.origin?.drop()
      await clusters.fresh?.drop()
    },
    async source(name: string) {
      return { DATA_DIR: tempDir('kns-backup-src-'), DATABASE_URL: await createEmptyDatabase(clusters.origin!.url, { role: 'kns', database: name }) }
    },
  }
}

/** The documented procedure: pg_dump of the service's database, pg_restore into an empty one on the new server. */
function dumpMethod(): Method {
  const { clusters, ...lifecycle } = twoClusters()
  return {
    name: 'pg_dump', skip: postgresSkip, secrets: ['given', 'generated'], listsTables: true, ...lifecycle,
    take: (source, dir) => takeBackup(source.DATABASE_URL!, dir),
    async restore(backup, name) {
      const url = await createEmptyDatabase(clusters.fresh!.url, { role: 'kns', database: name })
      await restoreBackup(backup.file, url)
      return { DATA_DIR: tempDir('kns-backup-dst-'), DATABASE_URL: url }
    },
  }
}

/**
 * A physical base backup of the old server (its superuser: replication), laid out as the new
 * server's data directory. The secret's two cases differ only in a row of `settings`, which
 * the dump's test shows either way: one case here.
 */
function baseBackupMethod(): Method {
  const { clusters, ...lifecycle } = twoClusters()
  return {
    name: 'pg_basebackup', skip: postgresSkip, secrets: ['given'], listsTables: false, ...lifecycle,
    take: (_source, dir) => takeBaseBackup(clusters.origin!.url, dir),
    async restore(backup, name) {
      await clusters.fresh!.replaceData((dataDir) => restoreBaseBackup(backup.file, dataDir).then(() => {}))
      const url = new URL(clusters.fresh!.url)
      url.username = 'kns' // the role came with the server's files
      url.pathname = `/${name}`
      return { DATA_DIR: tempDir('kns-backup-dst-'), DATABASE_URL: url.toString() }
    },
  }
}

function sqliteMethod(): Method {
  return {
    name: 'sqlite3 .backup', skip: ENGINE !== 'sqlite' ? 'runs in the SQLite pass' : sqliteShellUnavailable() ?? false,
    secrets: ['given', 'generated'], listsTables: true,
    async setup() {},
    async teardown() {},
    async source() { return { DATA_DIR: tempDir('kns-backup-src-') } },
    take: (source, dir) => takeSqliteBackup(join(source.DATA_DIR!, 'kns.db'), dir),
    async restore(backup) {
      const dataDir = tempDir('kns-backup-dst-')
      restoreSqliteBackup(backup.file, dataDir)
      return { DATA_DIR: dataDir }
    },
  }
}

const methods = ENGINE === 'postgres' ? [dumpMethod(), baseBackupMethod()] : [sqliteMethod()]
let receiver: WebhookReceiver | undefined

before(async () => {
  if (methods.every((m) => m.skip)) return
  receiver = await startWebhookReceiver()
  for (const method of methods) if (!method.skip) await method.setup()
})

after(async () => {
  await killAll()
  await receiver?.close()
  for (const method of methods) await method.teardown()
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true })
})

/** What stays the same between the old server and the restored one: everything but where the database is. */
function configuration(secret: Secret): Record<string, string> {
  return {
    LOG_LEVEL: 'warn', PUBLIC_RATE_LIMIT: '0', PUBLIC_BASE_URL: 'https://kns.example.com',
    ZKLOGIN_ISSUER: 'https://kns.example.com/oidc', ZKLOGIN_CLIENT_ID: 'kns-backup-test',
    WEBHOOK_ALLOW_PRIVATE: 'true', WEBHOOK_TIMEOUT_MS: '2000', WEBHOOK_RETRY_BASE_MS: '200',
    ...(secret === 'given' ? { KNS_SECRET: randomBytes(32).toString('hex') } : {}),
  }
}

interface Registered { phoneNumber: string; userId: string; zkAddress: string; objectId: string }

/** What the old server answered before the backup: the restored one must answer the same. */
interface Before {
  vendorKey: string
  adminKey: string
  numbers: Registered[]
  /** transaction_details of every approval made before the backup, by approval number. */
  approvals: Map<string, Record<string, unknown>>
  pending: string[]
  stats: Record<string, unknown>
}

async function get(url: string): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(url, { signal: AbortSignal.timeout(10_000) })
  return { status: res.status, body: (await res.json()) as Record<string, unknown> }
}

async function ok(answer: Promise<{ status: number; body: Record<string, unknown> }>, status = 200): Promise<Record<string, unknown>> {
  const { status: got, body } = await answer
  assert.equal(got, status, JSON.stringify(body))
  return body
}

const sessions = (from: number, count: number) => Array.from({ length: count }, (_, i) => ({
  sessionId: `backup-${from + i}`, network: 'gateway', nodeUid: 'g1', clientId: `device-${(from + i) % 3}`,
  start: Date.now() - 3_600_000 + (from + i) * 1000, end: Date.now() - 3_600_000 + (from + i) * 1000 + 500, bytesUp: 1000, bytesDown: 2000,
}))

/** Keys and a token owned by a wallet of the test's, made before the server first starts (as an operator's CLI would). */
async function prepare(env: Record<string, string>) {
  const service = await openService(loadConfig(env), { role: 'tool', watchChanges: false, pinSecret: false })
  try {
    const vendor = await createApiKey(service.db, { vendor: 'Acme Bank', scopes: ['approvals', 'caller'], rate: 100_000 })
    const admin = await createApiKey(service.db, { vendor: 'Operator', scopes: ['webhooks', 'stats'], rate: 100_000 })
    const owner = new Ed25519Keypair()
    const token = await service.ledger.mintToken(owner.toSuiAddress())
    return { vendor, admin, owner, tokenId: token.objectId }
  } finally {
    await service.close()
  }
}

async function populate(server: RunningServer, env: Record<string, string>): Promise<Before> {
  const { vendor, admin, owner, tokenId } = await prepare(env)
  const vendorKey = { 'x-api-key': vendor.key }
  const subscribed = await ok(postJson(`${server.url}/api/v1/admin/webhooks`, { keyId: vendor.id, url: receiver!.url }, { 'x-api-key': admin.key }), 201)
  receiver!.secret = String(subscribed.secret)
  const deliveredBefore = receiver!.received.length

  const numbers: Registered[] = []
  for (let i = 0; i < 4; i++) {
    const phoneNumber = randomPhone()
    const registered = await ok(postJson(`${server.url}/numsys/register-user-login`, { email: `backup-${i}@example.com`, phoneNumber }))
    const lookup = await ok(postJson(`${server.url}/numsys/object-id-lookup`, { phoneNumber }, vendorKey))
    numbers.push({ phoneNumber, userId: String(registered.userId), zkAddress: String(registered.zkAddress), objectId: String(lookup.objectId) })
  }
  const refs: string[] = []
  for (const { phoneNumber } of [...numbers, numbers[0]!, numbers[1]!]) {
    refs.push(String((await ok(postJson(`${server.url}/numsys/approval-phone`, approvalPhoneBody(phoneNumber), vendorKey))).approvalNumber))
  }
  const [cancelled, notMe, ...pending] = refs.slice(-2).concat(refs.slice(0, -2))
  assert.equal((await ok(postJson(`${server.url}/numsys/approval-cancel`, { approvalNumber: cancelled }))).success, true)
  assert.equal((await ok(postJson(`${server.url}/numsys/approval-cancel`, { approvalNumber: notMe, reason: 'not_me' }))).success, true)
  // Approved by the token's owner, signing the approval's text as a wallet does.
  const objectBody = { ...approvalPhoneBody('+10000000000'), phoneNumber: undefined, objectId: tokenId }
  const approved = String((await ok(postJson(`${server.url}/numsys/approval-object-id`, objectBody, vendorKey))).approvalNumber)
  const signMessage = String((await ok(get(`${server.url}/numsys/transaction_details?ref=${approved}`))).signMessage)
  const { signature } = await owner.signPersonalMessage(new TextEncoder().encode(signMessage))
  assert.equal((await ok(postJson(`${server.url}/numsys/verify_signature`, { approvalNumber: approved, signature }))).success, true)
  await receiver!.waitFor(deliveredBefore + 3) // cancelled, not_me, approved

  const usage = await fetch(`${server.url}/api/v1/admin/usage`, {
    method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': admin.key }, body: JSON.stringify(sessions(0, 6)),
  })
  assert.deepEqual(await usage.json(), { received: 6, inserted: 6, duplicates: 0 })

  const approvals = new Map<string, Record<string, unknown>>()
  for (const ref of [...refs, approved]) approvals.set(ref, await ok(get(`${server.url}/numsys/transaction_details?ref=${ref}`)))
  assert.deepEqual([...approvals.values()].map((d) => d.status).sort(), ['approved', 'cancelled', 'cancelled', 'pending', 'pending', 'pending', 'pending'])
  const stats = await ok(get(`${server.url}/api/v1/UsageGraph/global-public-stats`))
  return { vendorKey: vendor.key, adminKey: admin.key, numbers, approvals, pending, stats }
}

/** The backup, taken while a writer creates approvals (and registers numbers) on `server`. */
async function backupUnderLoad(t: TestContext, method: Method, server: RunningServer, world: Before, source: Record<string, string>) {
  const load = new ApprovalLoad({ url: server.url, key: world.vendorKey, phoneNumber: world.numbers[3]!.phoneNumber, workers: 4, registrationEvery: 5 })
  t.after(() => load.stop())
  load.start()
  await load.untilAcknowledged(50)
  const acknowledgedBefore = load.acknowledged.slice()
  const backup = await method.take(source, tempDir('kns-backup-archive-'))
  await load.untilAcknowledged(load.acknowledged.length + 20)
  // Decided after the backup: the restored database is from before this.
  assert.equal((await ok(postJson(`${server.url}/numsys/approval-cancel`, { approvalNumber: world.pending[0] }))).success, true)
  await load.stop()
  // Writes in flight while the dump read its snapshot (started before it ended, answered after it started).
  const overlapping = load.attempts.filter((a) => a.status === 200 && a.at < backup.finishedAt && a.at + a.ms > backup.startedAt)
  t.diagnostic(`backup: ${backup.bytes} bytes, ${backup.tables.length} tables, ${Math.round(backup.ms)} ms; the writer: ${summarize(load.attempts)}, ` +
    `${overlapping.length} of its requests answered 200 were in flight while the backup ran`)
  assert.ok(load.attempts.every((a) => a.status === 200), summarize(load.attempts))
  assert.ok(overlapping.length > 0, 'no write of the writer overlapped the backup: not a backup under load')
  const expected = ['settings', 'api_keys', 'users', 'numbers', 'approvals', 'approval_events', 'webhook_subscriptions', 'webhook_deliveries', 'stats_sessions']
  for (const table of method.listsTables ? expected : []) {
    assert.ok(backup.tables.includes(table), `the archive has no rows of ${table}: ${backup.tables.join(', ')}`)
  }
  return { backup, load, acknowledgedBefore }
}

async function assertAnswersAsBefore(t: TestContext, server: RunningServer, world: Before, taken: Awaited<ReturnType<typeof backupUnderLoad>>) {
  for (const [ref, details] of world.approvals) {
    assert.deepEqual(await ok(get(`${server.url}/numsys/transaction_details?ref=${ref}`)), details, `approval ${ref}`)
  }
  const vendorKey = { 'x-api-key': world.vendorKey }
  for (const number of world.numbers) {
    const again = await ok(postJson(`${server.url}/numsys/register-user-login`, { email: 'someone@example.com', phoneNumber: number.phoneNumber }))
    assert.equal(again.userId, number.userId)
    assert.equal(again.zkAddress, number.zkAddress)
    assert.equal((await ok(postJson(`${server.url}/numsys/object-id-lookup`, { phoneNumber: number.phoneNumber }, vendorKey))).objectId, number.objectId)
  }
  assert.deepEqual(await ok(get(`${server.url}/api/v1/UsageGraph/global-public-stats`)), world.stats)

  // The writer's approvals: all acknowledged before the backup started are there; none sent after it ended.
  const missing = await missingApprovals(server.url, taken.acknowledgedBefore)
  assert.deepEqual(missing, [], `${missing.length} approvals acknowledged before the backup are missing`)
  const later = taken.load.acknowledged.filter((a) => a.at > taken.backup.finishedAt)
  const during = taken.load.acknowledged.filter((a) => !taken.acknowledgedBefore.includes(a) && a.at <= taken.backup.finishedAt)
  let duringFound = 0
  for (const a of [...later, ...during]) {
    const { status } = await get(`${server.url}/numsys/transaction_details?ref=${a.approvalNumber}`)
    if (later.includes(a)) assert.equal(status, 404, `approval ${a.approvalNumber}, sent after the backup ended, is in it`)
    else if (status === 200) duringFound++
  }
  t.diagnostic(`approvals acknowledged before the backup ${taken.acknowledgedBefore.length} (all restored), while it ran ${during.length} ` +
    `(${duringFound} restored), after it ${later.length} (none restored)`)
}

/** The secret is the old one: the webhook secret sealed with it opens, the statistics client hashes match. */
async function assertSameSecret(server: RunningServer, world: Before) {
  const seen = new Set(receiver!.received.map((d) => d.id))
  assert.equal((await ok(postJson(`${server.url}/numsys/approval-cancel`, { approvalNumber: world.pending[1] }))).success, true)
  const deadline = Date.now() + 20_000
  let fresh = receiver!.received.filter((d) => !seen.has(d.id))
  while (!fresh.some((d) => (d.verified?.data as { approvalNumber?: string } | undefined)?.approvalNumber === world.pending[1]) && Date.now() < deadline) {
    await sleep(50)
    fresh = receiver!.received.filter((d) => !seen.has(d.id))
  }
  for (const delivery of receiver!.received) assert.equal(delivery.verifyError, null, `delivery ${delivery.id} does not verify with the subscription's secret`)
  assert.ok(fresh.some((d) => (d.verified?.data as { approvalNumber?: string } | undefined)?.approvalNumber === world.pending[1]),
    `no delivery of the decision taken on the restored server: ${fresh.map((d) => d.body).join('\n')}`)
  // A delivery repeated (one the backup holds as not yet delivered) is the same event: same id, same bytes.
  const bodies = new Map<string, string>()
  for (const { id, body } of receiver!.received) {
    assert.equal(bodies.get(id) ?? body, body, `webhook-id ${id} with two different bodies`)
    bodies.set(id, body)
  }

  // A new session of a client seen before the backup: the same keyed hash, so no new client.
  const usage = await fetch(`${server.url}/api/v1/admin/usage`, {
    method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': world.adminKey }, body: JSON.stringify(sessions(6, 1)),
  })
  assert.deepEqual(await usage.json(), { received: 1, inserted: 1, duplicates: 0 })
  const stats = await ok(get(`${server.url}/api/v1/UsageGraph/global-public-stats`))
  assert.equal(stats.totalUniqueClients, world.stats.totalUniqueClients)
  assert.equal(stats.totalSessions, Number(world.stats.totalSessions) + 1)
}

/** New rows after the restore (sequences, the embedded ledger's feed) go in beside the restored ones. */
async function assertWritable(server: RunningServer, world: Before) {
  const phoneNumber = randomPhone()
  await ok(postJson(`${server.url}/numsys/register-user-login`, { email: 'after@example.com', phoneNumber }))
  await ok(postJson(`${server.url}/numsys/approval-phone`, approvalPhoneBody(phoneNumber), { 'x-api-key': world.vendorKey }))
  await ok(get(`${server.url}/readyz`))
}

for (const method of methods) {
  for (const secret of method.secrets) {
    const what = secret === 'given' ? 'KNS_SECRET given' : 'KNS_SECRET unset (generated, kept in the database)'
    test(`a backup taken under load, restored on a fresh server, answers as before (${ENGINE}, ${method.name}, ${what})`, { skip: method.skip }, async (t) => {
      const settings = configuration(secret)
      const source = { ...settings, ...(await method.source(`kns_${secret}`)) }
      const server = await startServer({ ...source, ...LOAD_SERVER_ENV })
      const world = await populate(server, source)
      const taken = await backupUnderLoad(t, method, server, world, source)
      await server.stop()

      const restored = { ...settings, ...(await method.restore(taken.backup, `kns_${secret}`)) }
      const doctor = await runKns(['doctor'], restored)
      assert.equal(doctor.code, 0, `kns doctor on the restored database:\n${doctor.stdout}${doctor.stderr}`)
      const other = await runKns(['serve'], { ...restored, KNS_SECRET: randomBytes(32).toString('hex'), PORT: String(await freePort()) })
      assert.equal(other.code, 1, `a start with another KNS_SECRET was not refused:\n${other.stdout}${other.stderr}`)
      assert.match(other.stderr, /KNS_SECRET is not the secret this database was created with/)

      const second = await startServer(restored)
      await assertAnswersAsBefore(t, second, world, taken)
      await assertSameSecret(second, world)
      await assertWritable(second, world)
      await second.stop()
    })
  }
}

test('docs/operations.md gives operators the commands this test runs', () => {
  const doc = readFileSync(join(ROOT, 'docs', 'operations.md'), 'utf8')
  const section = doc.slice(doc.indexOf('\n## Backups\n'), doc.indexOf('\n## ', doc.indexOf('\n## Backups\n') + 1))
  for (const command of [`pg_dump ${PG_DUMP_FLAGS.join(' ')} `, `pg_restore ${PG_RESTORE_FLAGS.join(' ')} `, `pg_basebackup ${PG_BASEBACKUP_FLAGS.join(' ')} `,
    'tar -xzf kns-base-20250101T000000Z/pg_wal.tar.gz -C "$PGDATA/pg_wal"', 'pg_verifybackup --manifest-path=', 'sqlite3 -cmd \'.timeout 5000\' "$DATA_DIR/kns.db" ".backup \'']) {
    assert.ok(section.includes(command), `the Backups section does not give \`${command.trim()}\``)
  }
})
