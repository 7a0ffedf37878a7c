/**
 * The pinned zkLogin issuer: judged once for the server and the doctor (pinDecision); it follows
 * a changed PUBLIC_BASE_URL at start and moves with `kns oidc repin-issuer` only while no address
 * has been handed out; a re-pin and a first registration started together never both win.
 */
import assert from 'node:assert/strict'
import { after, test } from 'node:test'
import { loadConfig } from '../../src/config.ts'
import { ConflictError } from '../../src/errors.ts'
import { pinDecision, readPinnedIdentity, repinIssuer } from '../../src/identity/issuer-pin.ts'
import { registerOrLogin } from '../../src/identity/register.ts'
import { zkLoginAddressFor } from '../../src/identity/zk-address.ts'
import { openService, type Service } from '../../src/service.ts'
import { freshDatabaseEnv, type TestEnv } from '../helpers.ts'
import { killAll, oneJson, runKns } from '../support/process.ts'
import { randomPhone } from '../support/kns.ts'

const envs: TestEnv[] = []
after(async () => {
  await killAll()
  for (const e of envs) await e.cleanup()
})

async function fresh(): Promise<TestEnv> {
  const e = await freshDatabaseEnv()
  envs.push(e)
  return e
}

const start = (e: TestEnv, env: Record<string, string> = {}) => openService(loadConfig({ ...e.env, ...env }), { watchChanges: false })

function registration(s: Service, issuer = s.config.zkLoginIssuer) {
  return registerOrLogin({ db: s.db, ledger: s.ledger, secret: s.secret, zkLoginIssuer: issuer, zkLoginClientId: s.config.zkLoginClientId },
    { email: 'ada@example.com', phoneNumber: randomPhone() })
}

test('pinDecision: pin a new database, keep a pin, follow a changed PUBLIC_BASE_URL only while nothing was handed out, refuse a change', () => {
  const pinned = { issuer: 'http://localhost:8080/oidc', clientId: 'kns' }
  const moved = loadConfig({ PUBLIC_BASE_URL: 'https://kns.example.com' })
  assert.deepEqual(pinDecision(moved, undefined, undefined, false), { kind: 'pin', issuer: 'https://kns.example.com/oidc' })
  assert.deepEqual(pinDecision(moved, pinned, 'http://localhost:8080', false), { kind: 'repin', from: pinned.issuer, issuer: 'https://kns.example.com/oidc' })
  assert.deepEqual(pinDecision(moved, pinned, 'http://localhost:8080', true), { kind: 'keep', issuer: pinned.issuer }, 'an address exists: the issuer stays')
  assert.deepEqual(pinDecision(loadConfig({}), pinned, 'http://localhost:8080', false), { kind: 'keep', issuer: pinned.issuer })
  // Not the default of the kept URL (set explicitly once, or a database from before the provider): kept.
  assert.deepEqual(pinDecision(moved, { issuer: 'https://kns.local/oidc', clientId: 'kns' }, 'http://localhost:8080', false).kind, 'keep')
  const explicit = pinDecision(loadConfig({ ZKLOGIN_ISSUER: 'https://other.example/oidc' }), pinned, undefined, false)
  assert.equal(explicit.kind, 'refuse')
  assert.match(explicit.kind === 'refuse' ? explicit.message : '', /differ from the values this database was created with .*kns oidc repin-issuer/)
  const late = pinDecision(loadConfig({ ZKLOGIN_ISSUER: 'https://other.example/oidc' }), pinned, undefined, true)
  assert.doesNotMatch(late.kind === 'refuse' ? late.message : '', /repin-issuer/, 'no way out offered once addresses exist')
})

test('at start: the default issuer follows a new PUBLIC_BASE_URL while no address exists; once one does, it stays', async () => {
  const e = await fresh()
  await (await start(e)).close()
  // A one-off command with the new URL keeps the pin (and keeps the URL it was the default of).
  const tool = await openService(loadConfig({ ...e.env, PUBLIC_BASE_URL: 'https://kns.example.com' }), { watchChanges: false, role: 'tool' })
  await tool.close()
  assert.equal(tool.config.zkLoginIssuer, 'http://localhost:8080/oidc')
  const moved = await start(e, { PUBLIC_BASE_URL: 'https://kns.example.com' })
  try {
    assert.equal(moved.config.zkLoginIssuer, 'https://kns.example.com/oidc')
    assert.match(moved.warnings.join('\n'), /ZKLOGIN_ISSUER re-pinned from http:\/\/localhost:8080\/oidc to https:\/\/kns\.example\.com\/oidc/)
    await registration(moved)
  } finally {
    await moved.close()
  }
  const again = await start(e, { PUBLIC_BASE_URL: 'https://kns2.example.com' })
  try {
    assert.equal(again.config.zkLoginIssuer, 'https://kns.example.com/oidc', 'an address was handed out: the issuer no longer moves')
    assert.doesNotMatch(again.warnings.join('\n'), /re-pinned/)
    await assert.rejects(repinIssuer(again.db, 'https://kns.example.com/oidc', 'https://kns2.example.com/oidc', null),
      (err: unknown) => err instanceof ConflictError && /cannot change any more: zkLogin addresses have been handed out/.test(err.message))
  } finally {
    await again.close()
  }
})

test('a re-pin and a first registration started together: exactly one wins, and no address is derived from an issuer no longer pinned', async () => {
  const e = await fresh()
  const s = await start(e)
  try {
    const [a, b] = ['https://a.example/oidc', 'https://b.example/oidc']
    // Which wins depends on the interleaving (on PostgreSQL both happen over a few rounds); the
    // invariants hold whichever does.
    for (let round = 0; round < 8; round++) {
      await s.db.run('DELETE FROM users')
      await s.db.run('UPDATE settings SET value = $1 WHERE name = $2', [JSON.stringify([a, 'kns']), 'zklogin_identity'])
      const [repin, registered] = await Promise.allSettled([repinIssuer(s.db, a, b, null), registration(s, a)])
      const pinned = (await readPinnedIdentity(s.db))!.issuer
      const users = await s.db.all<{ user_id: string; zk_address: string }>('SELECT user_id, zk_address FROM users')
      if (repin.status === 'fulfilled') {
        assert.equal(registered.status, 'rejected', 're-pinned: the registration with the old issuer is refused')
        assert.ok(registered.status === 'rejected' && registered.reason instanceof ConflictError, String(registered.status === 'rejected' && registered.reason))
        assert.equal(pinned, b)
        assert.deepEqual(users, [])
      } else {
        assert.equal(registered.status, 'fulfilled', `one of the two wins: ${String(repin.reason)}`)
        assert.ok(repin.reason instanceof ConflictError)
        assert.equal(pinned, a)
        assert.equal(users.length, 1)
        assert.equal(users[0]!.zk_address, zkLoginAddressFor(s.secret, a, 'kns', users[0]!.user_id), 'the address is the pinned issuer\'s')
      }
    }
  } finally {
    await s.close()
  }
})

test('kns oidc repin-issuer: moves the pin while no address exists (the doctor then agrees), refuses with the reason after', async () => {
  const e = await fresh()
  await (await start(e)).close()
  const production = { ...e.env, PUBLIC_BASE_URL: 'https://kns.example.com' }
  const moved = await runKns(['oidc', 'repin-issuer', '--issuer', 'https://id.example.com/oidc', '--json'], production)
  assert.equal(moved.code, 0, moved.stderr)
  assert.deepEqual(oneJson(moved), { issuer: 'https://id.example.com/oidc', previous: 'http://localhost:8080/oidc', changed: true })
  const s = await start(e, { PUBLIC_BASE_URL: 'https://kns.example.com' })
  try {
    assert.equal(s.config.zkLoginIssuer, 'https://id.example.com/oidc')
    await registration(s)
  } finally {
    await s.close()
  }
  const refused = await runKns(['oidc', 'repin-issuer'], production)
  assert.equal(refused.code, 1)
  assert.match(refused.stderr, /cannot change any more: zkLogin addresses have been handed out/)
  assert.equal((await runKns(['oidc', 'repin-issuer', '--issuer', 'https://kns.example.com/api'], production)).code, 2, 'an issuer the server would refuse is a usage error')
})
