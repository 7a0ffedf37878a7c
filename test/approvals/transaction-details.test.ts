import { after, before, describe, test } from 'node:test'
import assert from 'node:assert/strict'
import { startHarness, type Harness } from '../helpers.ts'
import {
  approvalBody, assertError, createApproval, details, localLedger, newKeypair, ownedToken, randomApprovalNumber, register,
  setExpiry, signApproval, verifySignature,
} from '../support/kns.ts'
import { findByPhone } from '../../src/identity/numbers.ts'
import { signMessageFor } from '../../src/approvals/sign-message.ts'
import { recordStatements } from '../support/statements.ts'

const BASE = 'https://approvals.example.net'
const TTL_S = 600
const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/
let h: Harness
let key: string

before(async () => {
  h = await startHarness({ PUBLIC_BASE_URL: BASE, APPROVAL_TTL_S: String(TTL_S) })
  key = await h.key({ scopes: ['approvals'], vendor: 'Globex Telecom' })
})
after(async () => { await h.close() })

const get = (query: string) => h.app.inject({ method: 'GET', url: `/numsys/transaction_details${query}` })

describe('transaction_details: contract fields', () => {
  test('phone variant: every contract field plus status, expiresAt, signMessage and the vendor\'s referenceNumber', async () => {
    const user = await register(h)
    const objectId = (await findByPhone(h.service.db, user.phoneNumber))!.objectId
    const body = approvalBody({ phoneNumber: user.phoneNumber }, { title: 'SIM swap', message: 'Line 1\nLine 2' })
    const before = Date.now()
    const ref = await createApproval(h, key, body)
    const after = Date.now()
    const res = await get(`?ref=${ref}`)
    assert.equal(res.statusCode, 200, res.body)
    const d = res.json()
    assert.deepEqual(Object.keys(d).sort(), [
      'approvalNumber', 'approved', 'cancelRedirectUrl', 'createdAt', 'expiresAt', 'message', 'method', 'objectId', 'phoneLogin', 'phoneNumber',
      'referenceNumber', 'signMessage', 'status', 'successRedirectUrl', 'title', 'vendorBrand', 'wallet',
    ])
    // Shown on the approval page, so that the owner can match it against the vendor's screen.
    assert.equal(d.referenceNumber, body.referenceNumber)
    assert.equal(d.title, 'SIM swap')
    assert.equal(d.message, 'Line 1\nLine 2')
    assert.equal(d.objectId, objectId)
    assert.equal(d.successRedirectUrl, body.successRedirectUrl)
    assert.equal(d.cancelRedirectUrl, body.cancelRedirectUrl)
    assert.equal(d.approvalNumber, ref)
    assert.equal(d.approved, false)
    assert.equal(d.method, 'sign')
    assert.equal(d.phoneNumber, user.phoneNumber)
    assert.equal(d.wallet, user.zkAddress, 'wallet = the token owner, who must approve')
    assert.equal(d.phoneLogin, true, 'the owner is the number\'s own phone-login address')
    assert.equal(d.vendorBrand, 'Globex Telecom')
    assert.equal(d.status, 'pending')

    assert.match(d.createdAt, ISO_MS)
    const created = Date.parse(d.createdAt)
    assert.ok(created >= before && created <= after, `${d.createdAt} within the request`)
    assert.match(d.expiresAt, ISO_MS)
    assert.equal(Date.parse(d.expiresAt) - created, TTL_S * 1000)
  })

  test('signMessage is the documented text naming service, number, vendor, token, title and message', async () => {
    const user = await register(h)
    const objectId = (await findByPhone(h.service.db, user.phoneNumber))!.objectId
    const ref = await createApproval(h, key, approvalBody({ phoneNumber: user.phoneNumber }, { title: 'Port out', message: 'Move the\nnumber' }))
    const d = await details(h, ref)
    assert.equal(d.signMessage, [
      'KNS approval request',
      `Service: ${BASE}`,
      `Approval number: ${ref}`,
      'Vendor: Globex Telecom',
      `Token: ${objectId}`,
      'Title: Port out',
      'Message: Move the\nnumber',
    ].join('\n'))
    assert.equal(d.signMessage, signMessageFor({ approvalNumber: ref, vendorBrand: 'Globex Telecom', objectId, title: 'Port out', message: 'Move the\nnumber' }, BASE))
  })

  test('object-ID variant reports the phone number when the number is known', async () => {
    const user = await register(h)
    const objectId = (await findByPhone(h.service.db, user.phoneNumber))!.objectId
    const ref = await createApproval(h, key, approvalBody({ objectId }, { method: 'event' }))
    const d = await details(h, ref)
    assert.equal(d.phoneNumber, user.phoneNumber)
    assert.equal(d.objectId, objectId)
    assert.equal(d.method, 'event')
    assert.equal(d.wallet, user.zkAddress)
  })

  test('object-ID variant without a known number leaves phoneNumber out', async () => {
    const token = await ownedToken(h, newKeypair(), { link: false })
    const d = await details(h, await createApproval(h, key, approvalBody({ objectId: token.objectId })))
    assert.equal('phoneNumber' in d, false)
    assert.equal(d.wallet, token.owner)
  })

  test('vendorBrand is the brand of the key that created the approval', async () => {
    const user = await register(h)
    const other = await h.key({ scopes: ['approvals'], vendor: "Bob's Phones & Co." })
    const d = await details(h, await createApproval(h, other, approvalBody({ phoneNumber: user.phoneNumber })))
    assert.equal(d.vendorBrand, "Bob's Phones & Co.")
    assert.match(d.signMessage as string, /^Vendor: Bob's Phones & Co\.$/m)
  })

  test('internals (key ID, request hash, proof) are never exposed; a request not cancelled has no cancelReason', async () => {
    const user = await register(h)
    const ref = await createApproval(h, key, approvalBody({ phoneNumber: user.phoneNumber }))
    const res = await get(`?ref=${ref}`)
    assert.doesNotMatch(res.body, /apiKeyId|api_key_id|requestHash|request_hash|proof|reference_number|cancelReason/)
  })
})

describe('transaction_details: wallet and status over time', () => {
  test('pending: wallet follows the token owner; approved: wallet = the approver, even after a transfer', async () => {
    const first = newKeypair()
    const second = newKeypair()
    const token = await ownedToken(h, first)
    const ref = await createApproval(h, key, approvalBody({ phoneNumber: token.phoneNumber }))
    assert.equal((await details(h, ref)).wallet, first.toSuiAddress())

    await localLedger(h).transferToken(token.objectId, second.toSuiAddress())
    assert.equal((await details(h, ref)).wallet, second.toSuiAddress(), 'the new owner must approve now')

    const before = Date.now()
    assert.equal((await verifySignature(h, ref, await signApproval(h, second, ref))).json().success, true)
    const approved = await details(h, ref)
    assert.equal(approved.approved, true)
    assert.equal(approved.status, 'approved')
    assert.equal(approved.wallet, second.toSuiAddress())

    const decided = await h.service.db.get<{ decided_at: number }>('SELECT decided_at FROM approvals WHERE approval_number = $1', [ref])
    assert.ok(Number(decided?.decided_at) >= before, 'approval time recorded')

    await localLedger(h).transferToken(token.objectId, first.toSuiAddress())
    assert.equal((await details(h, ref)).wallet, second.toSuiAddress(), 'after approval, wallet is the one that approved')
  })

  test('phoneLogin follows the owner: true while the registered number\'s zkAddress owns the token, false once a wallet does', async () => {
    const user = await register(h)
    const objectId = (await findByPhone(h.service.db, user.phoneNumber))!.objectId
    const ref = await createApproval(h, key, approvalBody({ phoneNumber: user.phoneNumber }))
    assert.equal((await details(h, ref)).phoneLogin, true)
    const wallet = newKeypair()
    await localLedger(h).transferToken(objectId, wallet.toSuiAddress())
    assert.equal((await details(h, ref)).phoneLogin, false, 'a wallet owns it now: approve with the wallet')
    // A token never owned by a phone login (minted to a wallet) is not one either.
    const token = await ownedToken(h, newKeypair())
    assert.equal((await details(h, await createApproval(h, key, approvalBody({ phoneNumber: token.phoneNumber })))).phoneLogin, false)
  })

  test('a pending approval past expiresAt reports status expired, approved false', async () => {
    const user = await register(h)
    const ref = await createApproval(h, key, approvalBody({ phoneNumber: user.phoneNumber }))
    await setExpiry(h, ref, Date.now() - 1000)
    const d = await details(h, ref)
    assert.equal(d.status, 'expired')
    assert.equal(d.approved, false)
  })
})

describe('transaction_details: the polled path stays one statement', () => {
  test('approval, phone-login address and owner: at most one statement per request (the owner cached), concurrent ones shared', async () => {
    const refs: string[] = []
    for (let i = 0; i < 8; i++) {
      const user = await register(h)
      refs.push(await createApproval(h, key, approvalBody({ phoneNumber: user.phoneNumber })))
    }
    const expected = await Promise.all(refs.map((ref) => get(`?ref=${ref}`)))
    expected.forEach((res) => assert.equal(JSON.parse(res.body).phoneLogin, true))
    // The same requests again (the token owners now cached), all at once, as the approval page and vendors poll.
    const { result, statements } = await recordStatements(h.service.db, () => Promise.all(refs.map((ref) => get(`?ref=${ref}`))))
    assert.deepEqual(result.map((res) => res.body), expected.map((res) => res.body), 'the same answers')
    assert.ok(statements.length <= refs.length, `${statements.length} statements for ${refs.length} requests:\n${statements.join('\n')}`)
    assert.ok(statements.every((sql) => /\bFROM approvals\b/.test(sql)), statements.join('\n'))
  })
})

describe('transaction_details: bad requests', () => {
  test('unknown ref -> 404 naming ref', async () => {
    assertError(await get(`?ref=${randomApprovalNumber()}`), 404, 'NOT_FOUND', 'ref')
    assertError(await get('?ref=not-an-approval'), 404, 'NOT_FOUND', 'ref')
  })

  test('missing ref -> 400 naming ref', async () => {
    assertError(await get(''), 400, 'INVALID_REQUEST', 'ref')
    assertError(await get('?other=1'), 400, 'INVALID_REQUEST', 'ref')
  })

  test('empty or oversized ref -> 400', async () => {
    assertError(await get('?ref='), 400, 'INVALID_REQUEST', 'ref')
    assertError(await get(`?ref=${'a'.repeat(65)}`), 400, 'INVALID_REQUEST', 'ref')
  })

  test('refs are exact: upper-case or padded variants of a real ref are unknown', async () => {
    const user = await register(h)
    const ref = await createApproval(h, key, approvalBody({ phoneNumber: user.phoneNumber }))
    assertError(await get(`?ref=${ref.toUpperCase()}`), 404, 'NOT_FOUND')
    assertError(await get(`?ref=${ref}0`), 404, 'NOT_FOUND')
  })

  test('needs no API key, and ignores one', async () => {
    const user = await register(h)
    const ref = await createApproval(h, key, approvalBody({ phoneNumber: user.phoneNumber }))
    const res = await h.app.inject({ method: 'GET', url: `/numsys/transaction_details?ref=${ref}`, headers: { 'x-api-key': 'garbage' } })
    assert.equal(res.statusCode, 200)
  })
})
