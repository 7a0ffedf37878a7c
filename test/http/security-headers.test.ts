/**
 * Headers every answer carries (issue "Production under pressure", item 6): no cache keeps an
 * answer unless its route says so (personal data: numbers, addresses, capabilities), and HSTS
 * when the service's public URL is https (HSTS_MAX_AGE_S; 0 leaves it to the proxy).
 */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { startHarness } from '../helpers.ts'
import { approvalBody, createApproval, ownedToken, newKeypair, register } from '../support/kns.ts'

test('personal data is never cached; the public statistics keep their own caching', async () => {
  const h = await startHarness()
  try {
    const key = await h.key()
    const token = await ownedToken(h, newKeypair())
    const ref = await createApproval(h, key, approvalBody({ phoneNumber: token.phoneNumber }))
    const answers = [
      await h.app.inject({ method: 'GET', url: `/numsys/transaction_details?ref=${ref}` }),
      await h.app.inject({ method: 'POST', url: '/numsys/object-id-lookup', headers: { 'x-api-key': key }, payload: { phoneNumber: token.phoneNumber } }),
      await h.app.inject({ method: 'GET', url: '/numsys/transaction_details?ref=nope' }),
    ]
    for (const res of answers) assert.equal(res.headers['cache-control'], 'no-store', res.body)
    await register(h)
    const stats = await h.app.inject({ method: 'GET', url: '/api/v1/UsageGraph/global-public-stats' })
    assert.match(String(stats.headers['cache-control']), /max-age/)
    assert.equal(stats.headers['strict-transport-security'], undefined, 'http public URL: no HSTS')
  } finally {
    await h.close()
  }
})

test('HSTS on every answer when PUBLIC_BASE_URL is https; HSTS_MAX_AGE_S=0 leaves it to the proxy', async () => {
  const secure = await startHarness({ PUBLIC_BASE_URL: 'https://kns.example.com' })
  try {
    for (const url of ['/healthz', '/numsys/transaction_details?ref=nope', '/approve', '/docs']) {
      assert.equal((await secure.app.inject({ method: 'GET', url })).headers['strict-transport-security'], 'max-age=31536000', url)
    }
  } finally {
    await secure.close()
  }
  const off = await startHarness({ PUBLIC_BASE_URL: 'https://kns.example.com', HSTS_MAX_AGE_S: '0' })
  try {
    assert.equal((await off.app.inject({ method: 'GET', url: '/healthz' })).headers['strict-transport-security'], undefined)
  } finally {
    await off.close()
  }
})
