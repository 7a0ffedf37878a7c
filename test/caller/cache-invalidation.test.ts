/**
 * The number -> keys cache of one server process, invalidated through the change signal
 * (polling on SQLite, LISTEN/NOTIFY on PostgreSQL): after a successful verification (cache
 * warm), a revoked key, an unlinked keystore or a relinked number stops verifying within 1 s;
 * new keys and links start verifying within 1 s too.
 */
import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import { linkNumber } from '../../src/identity/numbers.ts'
import { ENGINE, startHarness, type Harness } from '../helpers.ts'
import {
  callerNumber, injectProbe, localLedger, measureFlip, newSigner, randomObjectId, randomPhone, sleep, type Verdict,
} from '../support/caller.ts'

let h: Harness
let key: string
const dest = randomPhone()
const LIMIT_MS = 1000

before(async () => {
  h = await startHarness()
  key = await h.key({ scopes: ['caller'] })
})

after(async () => {
  await h?.close()
})

function assertWithin(t: { diagnostic(message: string): void }, lag: number[], reasons: (string | undefined)[], reason: string): void {
  t.diagnostic(`${ENGINE}: failed ${lag.map((ms) => Math.round(ms)).join(' / ')} ms after the change`)
  for (const [i, ms] of lag.entries()) {
    assert.ok(ms <= LIMIT_MS, `probe ${i} still verified ${ms} ms after the change`)
    assert.equal(reasons[i], reason)
  }
}

test('the cache is really warm: a change written without the change signal is not seen', async () => {
  const n = await callerNumber(h)
  // Let the signals of the setup itself (keystore created, linked) arrive first: they drop the entry.
  await sleep(1100)
  const probe = injectProbe(h, key, n, n.signers[0]!, dest)
  assert.equal((await probe()).success, true)
  await h.service.db.run('UPDATE ledger_keystore_keys SET revoked = 1 WHERE keystore_id = $1', [n.keystoreIds[0]])
  for (let i = 0; i < 5; i++) {
    assert.equal((await probe()).success, true, 'served from the cache')
    await sleep(100)
  }
  h.service.keyDirectory.invalidate(`keystore:${n.keystoreIds[0]}`)
  assert.equal((await probe()).reason?.split(':')[0], 'KEY_NOT_FOUND')
})

test('revoking the key stops verification within 1 s', async (t) => {
  const n = await callerNumber(h)
  const s = n.signers[0]!
  const flip = await measureFlip([injectProbe(h, key, n, s, dest), injectProbe(h, key, n, s, dest, null)],
    () => localLedger(h).keystores.revokeKey(n.keystoreIds[0]!, s.keyId))
  assertWithin(t, flip.lag, flip.reasons, 'KEY_NOT_FOUND')
})

test('unlinking the keystore stops verification within 1 s', async (t) => {
  const n = await callerNumber(h)
  const flip = await measureFlip([injectProbe(h, key, n, n.signers[0]!, dest)],
    () => localLedger(h).keystores.unlink(n.tokenId, n.keystoreIds[0]!))
  assertWithin(t, flip.lag, flip.reasons, 'NO_REGISTRY')
})

test('relinking the number to another token (token link / linkNumber) stops verification within 1 s', async (t) => {
  const n = await callerNumber(h)
  const other = await localLedger(h).mintToken(randomObjectId())
  const flip = await measureFlip([injectProbe(h, key, n, n.signers[0]!, dest)],
    () => linkNumber(h.service.db, n.phone, other.objectId, 'linked'))
  assertWithin(t, flip.lag, flip.reasons, 'NO_REGISTRY')
})

test('linking the number\'s token to another number drops the old number (it loses its token) within 1 s', async (t) => {
  const n = await callerNumber(h)
  const flip = await measureFlip([injectProbe(h, key, n, n.signers[0]!, dest)],
    () => linkNumber(h.service.db, randomPhone(), n.tokenId, 'linked'))
  assertWithin(t, flip.lag, flip.reasons, 'NO_TOKEN')
})

test('one revocation reaches every number that links the keystore; other numbers keep verifying', async (t) => {
  const ledger = localLedger(h)
  const a = await callerNumber(h)
  const b = await callerNumber(h, { keystores: 0 })
  await ledger.keystores.link(b.tokenId, a.keystoreIds[0]!)
  const bystander = await callerNumber(h)
  const s = a.signers[0]!
  const bystanderProbe = injectProbe(h, key, bystander, bystander.signers[0]!, dest)
  assert.equal((await bystanderProbe()).success, true)
  const flip = await measureFlip([injectProbe(h, key, a, s, dest), injectProbe(h, key, { ...b, signers: [s] }, s, dest)],
    () => ledger.keystores.revokeKey(a.keystoreIds[0]!, s.keyId))
  assertWithin(t, flip.lag, flip.reasons, 'KEY_NOT_FOUND')
  assert.equal((await bystanderProbe()).success, true)
})

/** Polls `probe` until it verifies; the ms that took. */
async function untilVerified(probe: () => Promise<Verdict>, timeoutMs = 3000): Promise<number> {
  const start = performance.now()
  while (performance.now() - start < timeoutMs) {
    if ((await probe()).success) return performance.now() - start
    await sleep(5)
  }
  return Infinity
}

test('the other way: a new key, a new link and a new number verify within 1 s although the misses were cached', async (t) => {
  const ledger = localLedger(h)
  const n = await callerNumber(h)
  const added = newSigner()
  const addedProbe = injectProbe(h, key, n, added, dest)
  assert.equal((await addedProbe()).reason?.split(':')[0], 'KEY_NOT_FOUND')
  await ledger.keystores.addKey(n.keystoreIds[0]!, added.publicPem)
  const keyLag = await untilVerified(addedProbe)

  const bare = await callerNumber(h, { keystores: 0 })
  const late = newSigner()
  const { objectId } = await ledger.keystores.create({ name: 'Late', creator: randomObjectId(), publicKey: late.publicPem })
  const lateProbe = injectProbe(h, key, bare, late, dest)
  assert.equal((await lateProbe()).reason?.split(':')[0], 'NO_REGISTRY')
  await ledger.keystores.link(bare.tokenId, objectId)
  const linkLag = await untilVerified(lateProbe)

  const phone = randomPhone()
  const fresh = { ...bare, phone }
  const freshProbe = injectProbe(h, key, fresh, late, dest)
  assert.equal((await freshProbe()).reason?.split(':')[0], 'NO_TOKEN')
  const lookup = () => h.app.inject({ method: 'POST', url: '/numsys/object-id-lookup', payload: { phoneNumber: phone }, headers: { 'x-api-key': key } })
  assert.equal((await lookup()).statusCode, 404)
  await linkNumber(h.service.db, phone, bare.tokenId, 'linked')
  const numberLag = await untilVerified(freshProbe)
  assert.equal((await lookup()).statusCode, 200)

  t.diagnostic(`${ENGINE}: verified ${[keyLag, linkLag, numberLag].map(Math.round).join(' / ')} ms after add-key / link / number link`)
  for (const ms of [keyLag, linkLag, numberLag]) assert.ok(ms <= LIMIT_MS, `${ms} ms`)
})
