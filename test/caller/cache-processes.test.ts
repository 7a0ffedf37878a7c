/**
 * Cache invalidation across processes: real `kns serve` children (one on SQLite, two on
 * PostgreSQL), warm from successful verifications, and the operator CLI in yet another
 * process revoking a key, unlinking a keystore or relinking the number. Every server must
 * stop verifying within 1 s of the CLI's exit (SQLite: polled change counter; PostgreSQL:
 * LISTEN/NOTIFY).
 */
import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import { createApiKey } from '../../src/keys/api-keys.ts'
import { openService, type Service } from '../../src/service.ts'
import { ENGINE, freshDatabaseEnv, type TestEnv } from '../helpers.ts'
import { killAll, oneJson, runKns, startServer, type RunningServer } from '../support/process.ts'
import { callerNumber, httpProbe, localLedger, measureFlip, randomObjectId, randomPhone, type Flip } from '../support/caller.ts'

const SERVERS = ENGINE === 'postgres' ? 2 : 1
const LIMIT_MS = 1000
const dest = randomPhone()

let fresh: TestEnv | undefined
let seed: Service | undefined
let apiKey: string
let servers: RunningServer[] = []

before(async () => {
  fresh = await freshDatabaseEnv({ PUBLIC_BASE_URL: 'https://kns.example.com' })
  // The test process seeds the shared database; it does not watch changes itself.
  seed = await openService(fresh.config, { watchChanges: false })
  apiKey = (await createApiKey(seed.db, { vendor: 'Terminating Carrier', scopes: ['caller'], rate: 100_000 })).key
  servers = await Promise.all(Array.from({ length: SERVERS }, () => startServer(fresh!.env)))
})

after(async () => {
  await killAll()
  await seed?.close()
  await fresh?.cleanup()
})

const kns = async (...args: string[]) => {
  const result = await runKns([...args, '--json'], fresh!.env)
  assert.equal(result.code, 0, `kns ${args.join(' ')}: ${result.stderr}`)
  return oneJson(result)
}

const ms = (values: number[]) => values.map((v) => Math.round(v)).join(' / ')

function assertFlip(t: { diagnostic(message: string): void }, flip: Flip, reason: string): void {
  t.diagnostic(`${ENGINE}, ${SERVERS} server(s): verification failed ${ms(flip.sinceCommit)} ms after the commit, ` +
    `${ms(flip.lag)} ms after the CLI exited (the CLI ran ${Math.round(flip.actionMs)} ms)`)
  for (const [i, reasonSeen] of flip.reasons.entries()) {
    assert.equal(reasonSeen, reason, `probe ${i}`)
    assert.ok(flip.sinceCommit[i]! <= LIMIT_MS, `probe ${i} still verified ${flip.sinceCommit[i]} ms after the commit`)
    assert.ok(flip.lag[i]! <= LIMIT_MS, `probe ${i} still verified ${flip.lag[i]} ms after the CLI exited`)
  }
}

/** Is the change visible in the shared database yet (read by the test process)? */
const row = async (sql: string, params: unknown[]) => (await seed!.db.get(sql, params)) !== undefined

test('kns keystore revoke-key: every server stops verifying within 1 s (with kid and without)', async (t) => {
  const n = await callerNumber({ service: seed! })
  const s = n.signers[0]!
  const probes = servers.flatMap((srv) => [httpProbe(srv.url, apiKey, n, s, dest), httpProbe(srv.url, apiKey, n, s, dest, null)])
  const flip = await measureFlip(probes, async () => {
    assert.deepEqual(await kns('keystore', 'revoke-key', n.keystoreIds[0]!, s.keyId), { objectId: n.keystoreIds[0], keyId: s.keyId, revoked: true })
  }, { committed: () => row('SELECT 1 AS ok FROM ledger_keystore_keys WHERE keystore_id = $1 AND key_id = $2 AND revoked = 1', [n.keystoreIds[0], s.keyId]) })
  assertFlip(t, flip, 'KEY_NOT_FOUND')
})

test('kns registry unlink --phone: every server stops verifying within 1 s', async (t) => {
  const n = await callerNumber({ service: seed! })
  const flip = await measureFlip(servers.map((srv) => httpProbe(srv.url, apiKey, n, n.signers[0]!, dest)), async () => {
    const out = await kns('registry', 'unlink', '--phone', n.phone, '--keystore', n.keystoreIds[0]!)
    assert.equal(out.removed, true)
  }, { committed: async () => !(await row('SELECT 1 AS ok FROM ledger_keystore_links WHERE token_id = $1', [n.tokenId])) })
  assertFlip(t, flip, 'NO_REGISTRY')
})

test('kns registry unlink --object-id (one of two keystores): that keystore\'s key stops verifying, the other keeps working', async (t) => {
  const n = await callerNumber({ service: seed! }, { keystores: 2 })
  const [gone, kept] = n.signers as [typeof n.signers[0], typeof n.signers[0]]
  const flip = await measureFlip(servers.map((srv) => httpProbe(srv.url, apiKey, n, gone, dest)), async () => {
    await kns('registry', 'unlink', '--object-id', n.tokenId, '--keystore', n.keystoreIds[0]!)
  }, { committed: async () => !(await row('SELECT 1 AS ok FROM ledger_keystore_links WHERE token_id = $1 AND keystore_id = $2', [n.tokenId, n.keystoreIds[0]])) })
  assertFlip(t, flip, 'KEY_NOT_FOUND')
  for (const srv of servers) assert.equal((await httpProbe(srv.url, apiKey, n, kept, dest)()).success, true)
})

test('kns token link (the number moves to another token): every server stops verifying within 1 s', async (t) => {
  const n = await callerNumber({ service: seed! })
  const other = await localLedger({ service: seed! }).mintToken(randomObjectId())
  const flip = await measureFlip(servers.map((srv) => httpProbe(srv.url, apiKey, n, n.signers[0]!, dest)), async () => {
    const out = await kns('token', 'link', '--phone', n.phone, '--object-id', other.objectId)
    assert.equal(out.objectId, other.objectId)
  }, { committed: () => row('SELECT 1 AS ok FROM numbers WHERE phone = $1 AND object_id = $2', [n.phone, other.objectId]) })
  assertFlip(t, flip, 'NO_REGISTRY')
  // object-id-lookup on every server agrees with the new link.
  for (const srv of servers) {
    const res = await fetch(`${srv.url}/numsys/object-id-lookup`, {
      method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': apiKey }, body: JSON.stringify({ phoneNumber: n.phone }),
    })
    assert.deepEqual(await res.json(), { objectId: other.objectId, registries: [] })
  }
})
