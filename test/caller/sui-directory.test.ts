/**
 * Caller verification over the Sui ledger (GraphQL stub): keystore objects with PEM and
 * base64-body keys, links read by point lookup in the ID map table, and the short TTL that
 * stands in for a change signal on Sui.
 */
import assert from 'node:assert/strict'
import { generateKeyPairSync } from 'node:crypto'
import { after, before, test } from 'node:test'
import type { FastifyInstance } from 'fastify'
import { KeyDirectory } from '../../src/caller/key-directory.ts'
import { verifyCall as runPipeline } from '../../src/caller/verify-call.ts'
import { linkNumber } from '../../src/identity/numbers.ts'
import { SuiLedger } from '../../src/ledger/sui-ledger.ts'
import type { Service } from '../../src/service.ts'
import { startHarness, type Harness } from '../helpers.ts'
import { startSuiGraphqlStub, type SuiGraphqlStub } from '../ledger/sui-graphql-stub.ts'
import { assertError } from '../support/kns.ts'
import {
  ledgerVerdict,
  claims, expectRejected, expectVerified, newSigner, nowS, randomObjectId, randomPhone, shakenHeader, signRaw, sleep, type Signer,
} from '../support/caller.ts'

let stub: SuiGraphqlStub
let service: Service
let app: FastifyInstance
let h: Harness
let apiKey: string
const dest = randomPhone()
const TTL_S = 1

before(async () => {
  stub = await startSuiGraphqlStub()
  h = await startHarness({ LEDGER_CACHE_TTL_S: String(TTL_S) }, { ledger: new SuiLedger(stub.ledgerOptions()) })
  ;({ service, app } = h)
  apiKey = await h.key({ vendor: 'Sui Carrier', scopes: ['caller'] })
})

after(async () => {
  await h?.close()
  await stub?.close()
})

interface SuiNumber { phone: string; tokenId: string; keystoreId: string; pem: Signer; body: Signer }

/** A token on the stub, linked (ID map) to a keystore with one PEM key and one base64-body key; the number in our database. */
async function suiNumber(): Promise<SuiNumber> {
  const tokenId = randomObjectId()
  const keystoreId = randomObjectId()
  const pem = newSigner()
  const body = newSigner()
  stub.world.addToken(tokenId, randomObjectId())
  stub.world.addKeystore({
    objectId: keystoreId, name: 'Sui Telecom', creator: randomObjectId(),
    publicKeys: [{ keyId: pem.keyId, publicKey: pem.publicPem }, { keyId: body.keyId, publicKey: body.publicBody }],
  })
  stub.world.link(tokenId, [keystoreId])
  const phone = randomPhone()
  await linkNumber(service.db, phone, tokenId, 'linked')
  return { phone, tokenId, keystoreId, pem, body }
}

const jwtFor = (n: SuiNumber, s: Signer, kid: string | null = s.keyId) => signRaw(shakenHeader(kid ?? undefined), claims(n.phone, dest), s.privateKey)

test('PEM and base64-body keys of a Sui keystore verify, with kid and without; links are read by point lookup', async () => {
  const n = await suiNumber()
  stub.world.clearRequests()
  await expectVerified(h, apiKey, { origTN: n.phone, destTN: dest, jwt: jwtFor(n, n.pem) }, [n.pem, n.body])
  await expectVerified(h, apiKey, { origTN: n.phone, destTN: dest, jwt: jwtFor(n, n.body) }, [n.pem, n.body])
  const debug = await expectVerified(h, apiKey, { origTN: n.phone, destTN: dest, jwt: jwtFor(n, n.body, null) })
  assert.match(debug.steps[3]!.detail!, /^2 candidate key\(s\)/)
  const operations = new Set(stub.world.requests.map((r) => r.operationName))
  assert.deepEqual([...operations].sort(), ['knsGetDynamicField', 'knsGetObject'])
  const lookups = stub.world.requests.filter((r) => r.operationName === 'knsGetDynamicField')
  assert.ok(lookups.length >= 1)
  for (const r of lookups) assert.equal(r.variables.parent, stub.idMapTableId)
})

test('object-id-lookup answers the token and the registries from the ID map', async () => {
  const n = await suiNumber()
  const second = randomObjectId()
  stub.world.addKeystore({ objectId: second, name: 'Second', creator: randomObjectId(), publicKeys: [] })
  stub.world.link(n.tokenId, [n.keystoreId, second])
  const res = await app.inject({ method: 'POST', url: '/numsys/object-id-lookup', payload: { phoneNumber: n.phone }, headers: { 'x-api-key': apiKey } })
  assert.equal(res.statusCode, 200, res.body)
  assert.deepEqual(res.json(), { objectId: n.tokenId, registries: [n.keystoreId, second] })
})

test('malformed and non-P-256 entries are skipped without hiding the good key; a missing keystore is skipped', async () => {
  const n = await suiNumber()
  const rsa = generateKeyPairSync('rsa', { modulusLength: 1024 }).publicKey.export({ type: 'spki', format: 'pem' }).toString()
  const p384 = generateKeyPairSync('ec', { namedCurve: 'P-384' }).publicKey.export({ type: 'spki', format: 'pem' }).toString()
  stub.world.addKeystore({
    objectId: n.keystoreId, name: 'Mixed', creator: randomObjectId(),
    publicKeys: [{ keyId: 'rsa', publicKey: rsa }, { keyId: 'p384', publicKey: p384 }, { keyId: 'junk', publicKey: 'not a key' }, { keyId: n.pem.keyId, publicKey: n.pem.publicPem }],
  })
  stub.world.link(n.tokenId, [randomObjectId(), n.keystoreId])
  const debug = await expectVerified(h, apiKey, { origTN: n.phone, destTN: dest, jwt: jwtFor(n, n.pem, null) })
  assert.equal(debug.steps[3]!.detail, `1 candidate key(s): ${n.pem.keyId}`)
  await expectRejected(h, apiKey, { origTN: n.phone, destTN: dest, jwt: jwtFor(n, n.pem, 'rsa') }, 'KEY_NOT_FOUND', 'resolve_keys')
})

test('a token without an ID-map entry -> NO_REGISTRY; a number without a token -> NO_TOKEN', async () => {
  const n = await suiNumber()
  const m = await suiNumber()
  stub.world.unlink(m.tokenId)
  await expectRejected(h, apiKey, { origTN: m.phone, destTN: dest, jwt: jwtFor(m, m.pem) }, 'NO_REGISTRY', 'resolve_keys')
  const phone = randomPhone()
  await expectRejected(h, apiKey, { origTN: phone, destTN: dest, jwt: signRaw(shakenHeader(n.pem.keyId), claims(phone, dest), n.pem.privateKey) },
    'NO_TOKEN', 'resolve_keys')
})

test('TTL expiry: a key removed and a link removed on the ledger stop verifying once the entry expires, not before', async () => {
  const n = await suiNumber()
  const directory = new KeyDirectory(service.db, new SuiLedger(stub.ledgerOptions()), { ttlMs: 500 })
  const run = (s: Signer, kid: string | null = s.keyId) =>
    runPipeline({ directory, origTN: n.phone, destTN: dest, jwt: jwtFor(n, s, kid), maxAgeS: 60, nowS: nowS() })
  assert.equal((await run(n.body)).success, true)
  // The key is removed from the keystore's vector (how Sui revokes).
  stub.world.addKeystore({ objectId: n.keystoreId, name: 'Sui Telecom', creator: randomObjectId(), publicKeys: [{ keyId: n.pem.keyId, publicKey: n.pem.publicPem }] })
  stub.world.clearRequests()
  assert.equal((await run(n.body)).success, true, 'still cached')
  assert.equal(stub.world.requests.length, 0, 'served without asking the ledger')
  await sleep(550)
  assert.equal((await run(n.body)).reason?.split(':')[0], 'KEY_NOT_FOUND')
  assert.equal((await run(n.pem)).success, true)
  stub.world.unlink(n.tokenId)
  assert.equal((await run(n.pem)).success, true, 'still cached')
  await sleep(550)
  assert.equal((await run(n.pem)).reason?.split(':')[0], 'NO_REGISTRY')
  // And back: a new link is picked up after the TTL too.
  stub.world.link(n.tokenId, [n.keystoreId])
  await sleep(550)
  assert.equal((await run(n.pem)).success, true)
})

test('through the server: LEDGER_CACHE_TTL_S bounds how long a removed link keeps verifying', async () => {
  const n = await suiNumber()
  const body = () => ({ origTN: n.phone, destTN: dest, jwt: jwtFor(n, n.pem) })
  // The number's own link signal (database change) must have arrived before the cache is warmed.
  await sleep(1100)
  await expectVerified(h, apiKey, body())
  stub.world.unlink(n.tokenId)
  const start = performance.now()
  const cached = await app.inject({ method: 'POST', url: '/numsys/call-signature-verification', payload: body(), headers: { 'x-api-key': apiKey } })
  assert.deepEqual(ledgerVerdict(cached.json()), { success: true }, 'served from the cache right after the ledger change')
  let lag = Infinity
  while (performance.now() - start < (TTL_S + 2) * 1000) {
    const res = await app.inject({ method: 'POST', url: '/numsys/call-signature-verification', payload: body(), headers: { 'x-api-key': apiKey } })
    if ((res.json() as { success: boolean }).success === false) {
      lag = performance.now() - start
      break
    }
    await sleep(20)
  }
  assert.ok(lag <= TTL_S * 1000 + 200, `still verified ${lag} ms after the ledger change (TTL ${TTL_S} s)`)
})

test('a ledger that fails answers 503 LEDGER_UNAVAILABLE, never a verdict', async () => {
  const n = await suiNumber()
  stub.world.fail('http500')
  try {
    const res = await app.inject({ method: 'POST', url: '/numsys/call-signature-verification', payload: { origTN: n.phone, destTN: dest, jwt: jwtFor(n, n.pem) }, headers: { 'x-api-key': apiKey } })
    assertError(res, 503, 'LEDGER_UNAVAILABLE')
    assert.ok(!res.body.includes(stub.url), 'the RPC URL is not echoed')
  } finally {
    stub.world.fail(null)
  }
  await expectVerified(h, apiKey, { origTN: n.phone, destTN: dest, jwt: jwtFor(n, n.pem) })
})

// The SuiLedger caches objects and links for LEDGER_CACHE_TTL_S too; the KeyDirectory reads
// fresh, so its own TTL is the only one between a change on chain and its effect.
test('a key removed on Sui stops verifying within one TTL even when the keystore object is shared by two numbers', async () => {
    const ttlMs = 1000
    const ledger = new SuiLedger(stub.ledgerOptions({ cacheTtlS: ttlMs / 1000 }))
    const directory = new KeyDirectory(service.db, ledger, { ttlMs })
    const a = await suiNumber()
    const b = await suiNumber()
    stub.world.link(b.tokenId, [a.keystoreId])
    const run = (n: SuiNumber) => runPipeline({ directory, origTN: n.phone, destTN: dest, jwt: jwtFor(n, a.pem), maxAgeS: 60, nowS: nowS() })
    assert.equal((await run(a)).success, true, 'reads (and caches) the keystore object')
    stub.world.addKeystore({ objectId: a.keystoreId, name: 'Sui Telecom', creator: randomObjectId(), publicKeys: [] })
    const changedAt = performance.now()
    await sleep(ttlMs * 0.8)
    await run(b)
    while ((await run(b)).success && performance.now() - changedAt < 3 * ttlMs) await sleep(20)
    const stale = performance.now() - changedAt
    assert.ok(stale <= ttlMs + 200, `the removed key still verified ${Math.round(stale)} ms after the ledger change (TTL ${ttlMs} ms)`)
  })
