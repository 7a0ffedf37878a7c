/**
 * Configuration: defaults, one clear ConfigError per bad variable (naming it), and the values
 * pinned in the database (zkLogin identity, generated server secret).
 */
import assert from 'node:assert/strict'
import { after, test } from 'node:test'
import { loadConfig, SUI_NETWORKS } from '../../src/config.ts'
import { MIGRATIONS } from '../../src/migrations.ts'
import { ConfigError } from '../../src/errors.ts'
import { openService, type Service } from '../../src/service.ts'
import { ENGINE, freshDatabaseEnv, type TestEnv } from '../helpers.ts'

/** Published deployments, copied from ../shared/spec/domain.md (not from src). */
const DOMAIN = {
  mainnet: {
    kns: '0x66dd6f65ebad8911bd196749098bfe6ef826049cef4086c5929863a5a30c93ef',
    map: '0x29f7c3fb2152fad673fe6a79a949a18bd42bf09397b0cac910dbb4e791080871',
    keystore: '0x78b8c91ec5321bce57bdcbf12c8a2d7b5055afcff63ccf5572926ee197801520',
    idMap: '0x6d0c613c6c2db4e1e839ea552f93597cb76d4028af2218356f5b8b9fb0b77cb8',
    idMapTable: '0x8fbb2a81daa43f9592d693a2ee6e1e6e3c8fed1d644581f2802e9c916db12d57',
  },
  testnet: {
    kns: '0x695fa0bd4395696074c4b9e8d2122e40664c0a78842c356095ed28ccdc04a802',
    map: '0xa3f54fe10970b044d3d8b534f14274c3e3c762b96bfe576281ffcec89835fe1c',
    keystore: '0x0f5ec6674ecb24cbf96b2211fea94c491afebf8bc21f284170aaa880a1ac17fb',
    idMap: '0x75250ff5c84aba97a03505c4eb131156f83fe8e7969806fcd8771ff4d59edbea',
    idMapTable: '0x655fc0ea86e13e030829b0824bb141d0c370825cbf57aa9a95d80dbf592b4e43',
  },
}

const envs: TestEnv[] = []
const services: Service[] = []

after(async () => {
  for (const s of services) await s.close().catch(() => {})
  for (const e of envs) await e.cleanup()
})

async function fresh(extra: Record<string, string> = {}): Promise<TestEnv> {
  const e = await freshDatabaseEnv(extra)
  envs.push(e)
  return e
}

async function open(env: Record<string, string>): Promise<Service> {
  const service = await openService(loadConfig(env))
  services.push(service)
  return service
}

async function close(service: Service): Promise<void> {
  services.splice(services.indexOf(service), 1)
  await service.close()
}

test('defaults', () => {
  const config = loadConfig({})
  assert.equal(config.port, 8080)
  assert.equal(config.host, '127.0.0.1', 'loopback unless HOST says otherwise')
  assert.equal(config.publicBaseUrl, 'http://localhost:8080')
  assert.equal(config.ledger, 'local')
  assert.equal(config.approvalTtlS, 900)
  assert.equal(config.approvalCommit, 'async')
  assert.equal(config.dataDir, './data')
  assert.equal(config.databaseUrl, undefined)
  assert.equal(config.redisUrl, undefined)
  assert.equal(config.knsSecret, undefined)
  assert.equal(config.suiNetwork, 'testnet')
  assert.equal(config.knsPackageId, DOMAIN.testnet.kns)
  assert.equal(config.keystorePackageId, DOMAIN.testnet.keystore)
  assert.equal(config.mapPackageId, DOMAIN.testnet.map)
  assert.equal(config.idMapObjectId, DOMAIN.testnet.idMap)
  assert.equal(config.idMapTableId, DOMAIN.testnet.idMapTable)
  assert.equal(config.suiGraphqlUrl, 'https://graphql.testnet.sui.io/graphql')
  assert.equal(config.logLevel, 'info')
  assert.equal(config.trustProxy, false)
  assert.ok(config.zkLoginIssuer.length > 0)
  assert.ok(config.zkLoginClientId.length > 0)
})

test('PUBLIC_BASE_URL follows PORT by default; an explicit one loses its trailing slash', () => {
  assert.equal(loadConfig({ PORT: '3000' }).publicBaseUrl, 'http://localhost:3000')
  assert.equal(loadConfig({ PORT: '3000', PUBLIC_BASE_URL: 'https://kns.example.com/' }).publicBaseUrl, 'https://kns.example.com')
  // Empty values count as unset (a blank line in .env).
  assert.equal(loadConfig({ PORT: '', APPROVAL_TTL_S: '', KNS_SECRET: '' }).port, 8080)
  assert.equal(loadConfig({ KNS_SECRET: '' }).knsSecret, undefined)
})

test('SUI_NETWORK=mainnet selects the mainnet deployment from domain.md; explicit IDs win', () => {
  const config = loadConfig({ SUI_NETWORK: 'mainnet' })
  assert.equal(config.suiNetwork, 'mainnet')
  assert.equal(config.knsPackageId, DOMAIN.mainnet.kns)
  assert.equal(config.knsLatestPackageId, DOMAIN.mainnet.kns)
  assert.equal(config.mapPackageId, DOMAIN.mainnet.map)
  assert.equal(config.keystorePackageId, DOMAIN.mainnet.keystore)
  assert.equal(config.idMapObjectId, DOMAIN.mainnet.idMap)
  assert.equal(config.idMapTableId, DOMAIN.mainnet.idMapTable)
  assert.equal(config.suiGraphqlUrl, SUI_NETWORKS.mainnet.graphqlUrl)
  assert.match(config.suiGraphqlUrl, /mainnet/)
  const custom = `0x${'AB'.repeat(32)}`
  assert.equal(loadConfig({ KNS_PACKAGE_ID: custom }).knsPackageId, custom.toLowerCase())
  // After an upgrade: types keep the original ID, calls go to the latest.
  const upgraded = loadConfig({ KNS_LATEST_PACKAGE_ID: custom })
  assert.equal(upgraded.knsPackageId, DOMAIN.testnet.kns)
  assert.equal(upgraded.knsLatestPackageId, custom.toLowerCase())
  assert.equal(loadConfig({ KNS_PACKAGE_ID: custom }).knsLatestPackageId, custom.toLowerCase(), 'the latest defaults to the original')
  assert.throws(() => loadConfig({ KNS_LATEST_PACKAGE_ID: '0x12' }), /KNS_LATEST_PACKAGE_ID must be 0x followed by 64 hex digits/)
  assert.equal(loadConfig({}).ledgerTimeoutMs, 10_000)
  assert.equal(loadConfig({}).ledgerFreshnessMs, 3_000)
  assert.equal(loadConfig({ LEDGER_FRESHNESS_MS: '0' }).ledgerFreshnessMs, 0)
})

test('accepted values', () => {
  const config = loadConfig({
    PORT: '0', HOST: '127.0.0.1', LEDGER: 'sui', APPROVAL_TTL_S: '60', DATA_DIR: '/tmp/kns',
    DATABASE_URL: 'postgresql://u@db:5432/kns', REDIS_URL: 'rediss://cache:6380', LOG_LEVEL: 'warn', TRUST_PROXY: '2',
    KNS_SECRET: 'x'.repeat(32), ZKLOGIN_ISSUER: 'https://login.example.com/oidc', ZKLOGIN_CLIENT_ID: 'client-1',
  })
  assert.equal(config.port, 0)
  assert.equal(config.host, '127.0.0.1')
  assert.equal(config.ledger, 'sui')
  assert.equal(config.approvalTtlS, 60)
  assert.equal(loadConfig({ APPROVAL_COMMIT: 'sync' }).approvalCommit, 'sync')
  assert.equal(config.dataDir, '/tmp/kns')
  assert.equal(config.databaseUrl, 'postgresql://u@db:5432/kns')
  assert.equal(config.redisUrl, 'rediss://cache:6380')
  assert.equal(config.logLevel, 'warn')
  assert.equal(config.trustProxy, 2)
  assert.equal(config.knsSecret, 'x'.repeat(32))
  assert.equal(config.zkLoginIssuer, 'https://login.example.com/oidc')
  assert.equal(loadConfig({ PUBLIC_BASE_URL: 'https://kns.example.com' }).zkLoginIssuer, 'https://kns.example.com/oidc', 'default: this server\'s /oidc')
  assert.equal(config.zkLoginClientId, 'client-1')
})

const INVALID: [name: string, value: string][] = [
  ['PORT', 'abc'], ['PORT', '65536'], ['PORT', '-1'], ['PORT', '80.5'], ['PORT', ' 80'],
  ['APPROVAL_TTL_S', '0'], ['APPROVAL_TTL_S', 'ten'], ['APPROVAL_TTL_S', String(31 * 24 * 3600)],
  ['LEDGER', 'ethereum'], ['LEDGER', 'LOCAL'],
  ['APPROVAL_COMMIT', 'off'], ['APPROVAL_COMMIT', 'SYNC'],
  ['SUI_NETWORK', 'devnet'],
  ['PUBLIC_BASE_URL', 'not a url'], ['PUBLIC_BASE_URL', 'ftp://kns.example.com'],
  ['DATABASE_URL', 'mysql://db/kns'], ['DATABASE_URL', 'postgres//missing-colon'],
  // A direct URL beside the pooled one: not another scheme, and not alone.
  ['DATABASE_DIRECT_URL', 'mysql://db/kns'], ['DATABASE_DIRECT_URL', 'postgres://db:5432/kns'],
  ['REDIS_URL', 'http://cache:6379'],
  ['SUI_GRAPHQL_URL', 'graphql.testnet.sui.io'],
  ['KNS_PACKAGE_ID', '0x1234'], ['SUI_ID_MAP_TABLE_ID', `0x${'g'.repeat(64)}`],
  ['LOG_LEVEL', 'loud'], ['TRUST_PROXY', 'yes'], ['TRUST_PROXY', 'true'], ['TRUST_PROXY', '11'], ['TRUST_PROXY', '10.0.0.0/33'], ['TRUST_PROXY', '10.0.0.1,proxy.example'],
  ['PUBLIC_RATE_LIMIT', 'many'], ['DEFAULT_KEY_RATE', '0'], ['LEDGER_CACHE_TTL_S', '3601'],
  ['ZKLOGIN_ISSUER', `https://${'i'.repeat(256)}`], ['ZKLOGIN_CLIENT_ID', 'c'.repeat(256)],
  // zkLogin's circuit: an issuer past 156 characters, a client ID past 145, or either with a JSON escape cannot be proven.
  ['ZKLOGIN_ISSUER', `https://login.example.com/${'i'.repeat(131)}`], ['ZKLOGIN_CLIENT_ID', 'c'.repeat(146)], ['ZKLOGIN_CLIENT_ID', 'a"b'],
  ['ZKLOGIN_ISSUER', 'https://login.example.com/o"idc'],
  // The provider is served at the issuer's path: it needs one, not one of the service's own.
  ['ZKLOGIN_ISSUER', 'https://accounts.google.com'], ['ZKLOGIN_ISSUER', 'https://kns.example.com/numsys'],
  ['ZKLOGIN_ISSUER', 'https://kns.example.com/oidc?x=1'], ['ZKLOGIN_ISSUER', 'ftp://kns.example.com/oidc'],
  ['SMS_DELIVERY', 'pigeon'], ['SMS_DELIVERY', 'smpp'], ['SMS_DELIVERY', 'http'], ['SMPP_URL', 'http://smsc:2775'], ['SMS_HTTP_METHOD', 'PUT'],
  ['KNS_SECRET', 'too-short'], ['KNS_SECRET', 'x'.repeat(31)],
]

for (const [name, value] of INVALID) {
  test(`${name}=${value.length > 40 ? `${value.slice(0, 20)}...` : JSON.stringify(value)} is refused with a ConfigError naming ${name}`, () => {
    assert.throws(() => loadConfig({ [name]: value }), (err: unknown) => {
      assert.ok(err instanceof ConfigError, `expected ConfigError, got ${String(err)}`)
      assert.equal(err.code, 'INVALID_CONFIG')
      assert.match(err.message, new RegExp(`\\b${name}\\b`))
      if (name === 'KNS_SECRET') assert.ok(!err.message.includes(value), 'the secret is not echoed')
      return true
    })
  })
}

test('DATABASE_DIRECT_URL beside DATABASE_URL (PgBouncer): both kept; unset by default', () => {
  const config = loadConfig({ DATABASE_URL: 'postgres://kns@pgbouncer:6432/kns', DATABASE_DIRECT_URL: 'postgres://kns@haproxy:5000/kns' })
  assert.deepEqual([config.databaseUrl, config.databaseDirectUrl], ['postgres://kns@pgbouncer:6432/kns', 'postgres://kns@haproxy:5000/kns'])
  assert.equal(loadConfig({ DATABASE_URL: 'postgres://kns@db/kns' }).databaseDirectUrl, undefined)
})

test('a database created with one ZKLOGIN_ISSUER / ZKLOGIN_CLIENT_ID refuses to open with another', async () => {
  const e = await fresh({ ZKLOGIN_ISSUER: 'https://issuer-one.example/oidc', ZKLOGIN_CLIENT_ID: 'client-one' })
  await close(await open(e.env))

  await assert.rejects(openService(loadConfig({ ...e.env, ZKLOGIN_ISSUER: 'https://issuer-two.example/oidc' })), (err: unknown) => {
    assert.ok(err instanceof ConfigError, String(err))
    assert.match(err.message, /ZKLOGIN_ISSUER/)
    assert.match(err.message, /issuer-one/)
    return true
  })
  await assert.rejects(openService(loadConfig({ ...e.env, ZKLOGIN_CLIENT_ID: 'client-two' })), (err: unknown) => {
    assert.ok(err instanceof ConfigError, String(err))
    assert.match(err.message, /ZKLOGIN_CLIENT_ID/)
    return true
  })
  // The original values still open it.
  await close(await open(e.env))
})

test('KNS_SECRET unset: a secret is generated once and kept across reopen; KNS_SECRET set is used as is', async () => {
  const e = await fresh()
  const first = await open(e.env)
  assert.equal(first.secret.length, 32)
  const generated = Buffer.from(first.secret)
  await close(first)

  const second = await open(e.env)
  assert.deepEqual(second.secret, generated)
  await close(second)

  const given = 'k'.repeat(40)
  const withSecret = await open({ ...(await fresh()).env, KNS_SECRET: given })
  assert.deepEqual(withSecret.secret, Buffer.from(given))
  await close(withSecret)

  // Another database gets its own secret.
  const other = await open((await fresh()).env)
  assert.notDeepEqual(other.secret, generated)
  await close(other)
})

test('KNS_SECRET is pinned: another secret, one set where it was generated, or none where it was set, is refused', async () => {
  const refusedFor = async (env: Record<string, string>, pattern: RegExp) => {
    await assert.rejects(open(env), (err: Error) => {
      assert.match(err.message, pattern)
      assert.match(err.message, /zkLogin/)
      assert.ok(!err.message.includes('s'.repeat(40)) && !err.message.includes('t'.repeat(40)), 'no secret is echoed')
      return true
    })
  }
  const generated = await fresh()
  await close(await open(generated.env))
  await refusedFor({ ...generated.env, KNS_SECRET: 's'.repeat(40) }, /KNS_SECRET is not the secret this database was created with/)
  await close(await open(generated.env))

  const set = await fresh({ KNS_SECRET: 's'.repeat(40) })
  await close(await open(set.env))
  await refusedFor({ ...set.env, KNS_SECRET: 't'.repeat(40) }, /KNS_SECRET is not the secret this database was created with/)
  const { KNS_SECRET: _, ...unset } = set.env
  await refusedFor(unset, /KNS_SECRET is not set, but this database was created with it/)
  assert.equal(await (async () => { const s = await open(set.env); const n = s.secret.length; await close(s); return n })(), 40, 'the original secret still opens it')
})

test('KNS_SECRET on a database from before the pin: what it holds decides, and a one-off command never chooses the secret', async () => {
  // A database that generated its own secret and used it, not pinned yet (as before the pin).
  const generated = await fresh()
  const first = await open(generated.env)
  await first.db.run("DELETE FROM settings WHERE name = 'server_secret_fingerprint'")
  await close(first)
  await assert.rejects(open({ ...generated.env, KNS_SECRET: 's'.repeat(40) }), /generated its own secret and has used it/)
  await close(await open(generated.env))

  // A database served with KNS_SECRET, not pinned yet, holding users: a command without the
  // variable must not generate (and pin) a secret of its own.
  const served = await fresh({ KNS_SECRET: 't'.repeat(40) })
  const server = await open(served.env)
  await server.db.run("DELETE FROM settings WHERE name = 'server_secret_fingerprint'")
  await server.db.run("INSERT INTO users (user_id, phone, email, email_normalized, zk_address, created_at) VALUES ('u1', '+14155550100', 'a@b.c', 'a@b.c', '0x1', 1)")
  await close(server)
  const { KNS_SECRET: _, ...withoutSecret } = served.env
  const toolRefused = openService(loadConfig(withoutSecret), { role: 'tool' })
  await assert.rejects(toolRefused, /holds data derived from a secret it has no record of/)
  const afterwards = await open(served.env)
  assert.equal(afterwards.secret.toString(), 't'.repeat(40), 'the real secret still opens it')
  await close(afterwards)

  // A fresh database and a one-off command before the first start: it works without a secret
  // (API keys need none), chooses none, and the server then generates and pins its own.
  const early = await fresh()
  const tool = await openService(early.config, { role: 'tool' })
  services.push(tool)
  assert.throws(() => tool.secret, /no server secret yet/)
  assert.equal(await tool.db.get("SELECT value FROM settings WHERE name = 'server_secret'"), undefined)
  await close(tool)
  const later = await open({ ...early.env, KNS_SECRET: 'u'.repeat(40) })
  assert.equal(later.secret.toString(), 'u'.repeat(40))
  await close(later)
})

test('services opening a fresh PostgreSQL database at once migrate once and agree on the secret', { skip: ENGINE !== 'postgres' && 'PostgreSQL only' }, async () => {
  const e = await fresh()
  const opened = await Promise.all([0, 1, 2].map(() => open(e.env)))
  for (const s of opened) assert.deepEqual(s.secret, opened[0]!.secret)
  const rows = await opened[0]!.db.all<{ version: number }>('SELECT version FROM schema_migrations')
  assert.deepEqual(rows.map((r) => Number(r.version)).sort((x, y) => x - y), MIGRATIONS.map((m) => m.version))
})
