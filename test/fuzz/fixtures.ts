/**
 * A few real things to point generated requests at, so that the routes answer 2xx part of
 * the time instead of only 404: registered numbers, their tokens, approvals of both methods
 * with a valid proof each, a ledger approval signature, periods with data. They are offered to
 * the generators as records of correlated field values, matched by property name.
 */
import { randomInt, randomUUID } from 'node:crypto'
import { addCredential } from '../../src/caller/shaken/credentials.ts'
import { ledgerApproveMessage } from '../../src/ledger/approve.ts'
import { SealedBox } from '../../src/lib/sealed-box.ts'
import { callerNumber, claims, nowS, shakenHeader, signRaw } from '../support/caller.ts'
import { makeShakenPki } from '../support/shaken-pki.ts'
import { revokeApiKey } from '../../src/keys/api-keys.ts'
import type { Harness } from '../helpers.ts'
import { approvalBody, createApproval, ledgerApprove, newKeypair, ownedToken, register, signApproval } from '../support/kns.ts'
import { addUser, bearer, camaraToken, EVERY_SCOPE, recordChange, setCamaraRateLimit } from '../camara/support.ts'
import { FRAUD_PREVENTION_PURPOSE } from '../../src/camara/access.ts'
import { SWAPPED_TYPE } from '../../src/camara/subscriptions/subscription.ts'
import type { FixtureRecord } from './json-schema.ts'
import type { OtherCamaraToken } from './openapi-operations.ts'
import { isoInZone } from './json-schema.ts'

export interface Fixtures {
  /** Holds every scope. */
  apiKey: string
  revokedKey: string
  /** A two-legged CAMARA access token with every CAMARA scope and the purpose. */
  camaraToken: string
  /** Valid tokens that valid requests sometimes carry: three-legged (the mobile number's user), and one for SIM Swap check only. */
  otherCamaraTokens: OtherCamaraToken[]
  /** Well-formed CAMARA tokens that must be refused: expired, signed with a key never published, for another audience. */
  refusedCamaraTokens: string[]
  records: FixtureRecord[]
}

const HOUR = 3_600_000
const DAY = 24 * HOUR

/**
 * Calls as networks send them: a diverted call's two Identity headers (a shaken PASSporT and a
 * div one, each signed by its number's ledger key) and a PASSporT with rich call data; a
 * signing credential the fuzz key is bound to, and signing requests it may sign (shaken, div).
 */
async function callFixtures(h: Harness): Promise<FixtureRecord[]> {
  const pki = makeShakenPki({ crlUrl: 'https://crl.example.test/fuzz.crl' })
  try {
    await addCredential(h.service.db, new SealedBox(h.service.secret, 'shaken-credentials'),
      { name: 'fuzz', keyPem: pki.leaves.range.key, chainPem: pki.leaves.range.bundle, x5u: 'https://certs.example.test/fuzz.pem', displayName: 'Fuzz Bank' })
  } finally {
    pki.cleanup()
  }
  h.service.shakenCredentials.invalidate()
  const [a, b] = [await callerNumber(h), await callerNumber(h)]
  const c = '+14155550123'
  const shaken = signRaw(shakenHeader(a.signers[0]!.keyId), claims(a.phone, b.phone, { rcd: { nam: 'Fuzz Caller' } }), a.signers[0]!.privateKey)
  const div = signRaw({ alg: 'ES256', ppt: 'div', typ: 'passport', kid: b.signers[0]!.keyId },
    { dest: { tn: [c.slice(1)] }, div: { tn: b.phone.slice(1) }, iat: nowS(), orig: { tn: a.phone.slice(1) } }, b.signers[0]!.privateKey)
  const inRange = '12025550150'
  return [
    { origTN: a.phone, destTN: c, identity: [`${shaken};ppt=shaken`, `${div};ppt=div`] },
    { origTN: a.phone, destTN: b.phone, jwt: shaken },
    { from: { tn: a.phone.slice(1) }, to: { tn: [c.slice(1)] }, time: nowS(), identity: [`${div};ppt=div`, `${shaken};ppt=shaken`] },
    { orig: { tn: inRange }, dest: { tn: ['14155550199'] }, attest: 'A', iat: nowS(), origid: randomUUID() },
    { ppt: 'div', orig: { tn: '14155550199' }, div: { tn: inRange }, dest: { tn: ['14155550123'] }, iat: nowS(), credential: 'fuzz' },
  ]
}

export async function seedFixtures(h: Harness): Promise<Fixtures> {
  const apiKey = await h.key({ signing: { credentials: ['fuzz'], attest: ['A', 'B', 'C'], numbers: null } })
  const revokedKey = await h.key()
  await revokeApiKey(h.service.db, revokedKey.split('_')[1]!)

  // A number whose token is held by a key pair we have: its approvals can be proven.
  const owner = newKeypair()
  const held = await ownedToken(h, owner)
  // A number registered through the API: its token belongs to its zkLogin address.
  const user = await register(h)
  const userToken = await h.service.db.get<{ object_id: string }>('SELECT object_id FROM numbers WHERE phone = $1', [user.phoneNumber])

  const signed = await createApproval(h, apiKey, approvalBody({ phoneNumber: held.phoneNumber }, { method: 'sign' }))
  const signature = (await signApproval(h, owner, signed))
  const event = await createApproval(h, apiKey, approvalBody({ objectId: held.objectId }, { method: 'event' }))
  const approved = await ledgerApprove(h, owner, held.objectId, event)
  if (approved.statusCode !== 200) throw new Error(`fixture ledger approval failed: ${approved.body}`)
  const digest = (approved.json() as { digest: string }).digest
  const pending = await createApproval(h, apiKey, approvalBody({ phoneNumber: user.phoneNumber }))
  const ledgerRef = `fuzz-ledger-${Date.now()}`
  const ledgerSignature = (await owner.signPersonalMessage(new TextEncoder().encode(ledgerApproveMessage(held.objectId, ledgerRef)))).signature

  const now = Date.now()
  const iso = (ms: number, zone = 'Z') => isoInZone(new Date(ms), zone, true)
  const records: FixtureRecord[] = [
    { phoneNumber: held.phoneNumber, objectId: held.objectId, origTN: held.phoneNumber },
    { phoneNumber: user.phoneNumber, email: user.email, objectId: userToken?.object_id },
    { approvalNumber: signed, ref: signed, signature },
    { approvalNumber: event, ref: event, digest },
    { approvalNumber: pending, ref: pending },
    { objectId: held.objectId, ref: ledgerRef, signature: ledgerSignature },
    // Periods (statistics) and session times (ingestion): past, ordered, in both notations.
    { start: iso(now - 7 * DAY), end: iso(now) },
    { start: iso(now - 400 * DAY, '+02:00'), end: iso(now - 10 * DAY, '-05:00') },
    { start: iso(now - 2 * HOUR), end: iso(now - HOUR) },
    { start: now - 3 * DAY, end: now - 3 * DAY + 60_000 },
    { start: '2024-02-29T23:30:00+05:30', end: '2024-03-01T00:10:00Z' },
    ...await callFixtures(h),
  ]
  const camara = await camaraFixtures(h)
  return { apiKey, revokedKey, ...camara, records: [...records, ...camara.records] }
}

/**
 * CAMARA SIM Swap and Device Swap: tokens, and change records on a mobile number (the other
 * fixtures' numbers are London fixed lines, to which the swap APIs do not apply). No per-client
 * rate: a 429 would hide what the request deserved (as PUBLIC_RATE_LIMIT=0).
 */
async function camaraFixtures(h: Harness): Promise<Pick<Fixtures, 'camaraToken' | 'otherCamaraTokens' | 'refusedCamaraTokens' | 'records'>> {
  setCamaraRateLimit(h.service, 1_000_000)
  const phone = `+447911${String(randomInt(0, 1_000_000)).padStart(6, '0')}`
  await recordChange(h.service, phone, 'activation', Date.now() - 40 * DAY)
  await recordChange(h.service, phone, 'sim-change', Date.now() - 2 * HOUR)
  await recordChange(h.service, phone, 'device-change', Date.now() - 20 * DAY)
  const token = await camaraToken(h.service, { expiresInS: 3600 })
  return {
    // The mobile number thrice: overlays are drawn evenly, and the other numbers (fixed lines) only get 422s here.
    records: [{ phoneNumber: phone }, { phoneNumber: phone }, { phoneNumber: phone, maxAge: 24 }, ...await subscriptionFixtures(h, token, phone)],
    camaraToken: token,
    otherCamaraTokens: [
      { what: 'three-legged', token: await camaraToken(h.service, { userId: await addUser(h.service, phone), expiresInS: 3600 }), scopes: EVERY_SCOPE },
      { what: 'narrow', token: await camaraToken(h.service, { clientId: 'fuzz-check-only', scopes: NARROW, expiresInS: 3600 }), scopes: NARROW },
    ],
    refusedCamaraTokens: [
      await camaraToken(h.service, { expiresInS: -60 }),
      await camaraToken(h.service, { foreignKey: true }),
      await camaraToken(h.service, { audience: 'https://elsewhere.example' }),
    ],
  }
}

/** A client's token for SIM Swap check alone: every other CAMARA operation is 403 to it, whatever the request. */
const NARROW = ['sim-swap:check', FRAUD_PREVENTION_PURPOSE]

/** Subscriptions seeded for get and delete (each deletable once, then 404). */
const SEEDED_SUBSCRIPTIONS = 12
/** Sinks the generated creates may name: one live subscription per client, number and sink, so a few give a few 201s (then 409). */
const SINKS = 24

/**
 * SIM Swap Subscriptions: the parts of a request the server takes (HTTP, the one event type, a
 * sink on loopback, which the fuzz server allows with WEBHOOK_ALLOW_PRIVATE: no delivery is ever
 * attempted, the harness starts no worker), an ACCESSTOKEN credential and an expiry in the
 * future, and subscriptions of the fuzz token's client, created over HTTP, for get and delete.
 */
async function subscriptionFixtures(h: Harness, token: string, phone: string): Promise<FixtureRecord[]> {
  const inAMonth = isoInZone(new Date(Date.now() + 30 * DAY), 'Z', true)
  const request = (sink: string) => ({ protocol: 'HTTP', sink, types: [SWAPPED_TYPE] })
  const credential = { credentialType: 'ACCESSTOKEN', accessToken: 'fuzz-sink-token.x', accessTokenExpiresUtc: inAMonth, accessTokenType: 'bearer' }
  const seeded: FixtureRecord[] = []
  for (let i = 0; i < SEEDED_SUBSCRIPTIONS; i++) {
    const res = await h.app.inject({
      method: 'POST', url: '/sim-swap-subscriptions/v0.3/subscriptions', headers: bearer(token),
      payload: { ...request(`https://127.0.0.1/fuzz/seeded-${i}`), sinkCredential: credential, config: { subscriptionDetail: { phoneNumber: phone } } },
    })
    if (res.statusCode !== 201) throw new Error(`fixture subscription failed (is WEBHOOK_ALLOW_PRIVATE=true?): ${res.statusCode} ${res.body}`)
    seeded.push({ subscriptionId: (res.json() as { id: string }).id })
  }
  return [
    ...Array.from({ length: SINKS }, (_, i) => request(`https://127.0.0.1/fuzz/sink-${i}`)),
    credential,
    { subscriptionExpireTime: inAMonth, subscriptionMaxEvents: 3 },
    ...seeded,
  ]
}
