/**
 * `kns api-key delete`: a key that left no record goes, its signing binding with it; one that
 * webhooks (or approvals, events) name is refused, to be revoked instead.
 */
import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import { ConflictError, NotFoundError, UnauthorizedError } from '../../src/errors.ts'
import { addSubscription } from '../../src/events/webhooks/subscriptions.ts'
import { createApiKey, listApiKeys } from '../../src/keys/api-keys.ts'
import { deleteApiKey } from '../../src/keys/delete-api-key.ts'
import { startHarness, type Harness } from '../helpers.ts'

let h: Harness
before(async () => { h = await startHarness() })
after(async () => { await h?.close() })

test('a key that left no record is deleted with its binding: gone from the list, refused as unknown', async () => {
  const key = await createApiKey(h.service.db, { vendor: 'Tour Carrier', scopes: ['signing'], rate: 10, signing: { credentials: ['gone'], attest: ['A'], numbers: null } })
  assert.deepEqual(await deleteApiKey(h.service.db, key.id), { id: key.id, vendor: 'Tour Carrier' })
  assert.equal((await listApiKeys(h.service.db)).some((k) => k.id === key.id), false)
  await assert.rejects(h.service.apiKeys.authenticate(key.key), UnauthorizedError)
  await assert.rejects(deleteApiKey(h.service.db, key.id), NotFoundError)
})

test('a key a webhook names is refused, and stays: revoke it instead', async () => {
  const key = await createApiKey(h.service.db, { vendor: 'Acme Bank', scopes: ['approvals'], rate: 10 })
  await addSubscription(h.service.db, h.service.events.box, { keyId: key.id, url: 'https://hooks.example.com/kns' }, { allowPrivate: true })
  await assert.rejects(deleteApiKey(h.service.db, key.id), (err: unknown) => err instanceof ConflictError && /has webhooks on record: revoke it instead/.test(err.message))
  assert.equal((await listApiKeys(h.service.db)).some((k) => k.id === key.id), true)
})
