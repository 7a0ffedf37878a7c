/**
 * The served OpenAPI document against the checked-in copy (docs/openapi.json): a refactor
 * that changes the contract by accident shows here. After an intended change, write the new
 * copy with `UPDATE_OPENAPI=1 node --test test/http/openapi-snapshot.test.ts` and commit it.
 */
import assert from 'node:assert/strict'
import { readFileSync, writeFileSync } from 'node:fs'
import { after, before, test } from 'node:test'
import { startHarness, type Harness } from '../helpers.ts'

const COPY = new URL('../../docs/openapi.json', import.meta.url)

let h: Harness
before(async () => { h = await startHarness() })
after(async () => { await h.close() })

test('the served OpenAPI document is the checked-in docs/openapi.json', async () => {
  const res = await h.app.inject({ method: 'GET', url: '/openapi.json' })
  assert.equal(res.statusCode, 200)
  // The servers entry is this process's PUBLIC_BASE_URL, not part of the contract.
  const document = { ...res.json(), servers: [{ url: 'https://kns.example.com' }] }
  const served = JSON.stringify(document, null, 2) + '\n'
  if (process.env.UPDATE_OPENAPI === '1') writeFileSync(COPY, served)
  assert.equal(served, readFileSync(COPY, 'utf8'), 'the API contract changed: if intended, run UPDATE_OPENAPI=1 node --test test/http/openapi-snapshot.test.ts and commit docs/openapi.json')
})
