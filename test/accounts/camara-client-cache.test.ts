/**
 * The CAMARA resource server looks a token's client up on every call, from an in-process cache
 * of CAMARA registrations (Clients.camara) that the change signal keeps honest: a client removed
 * in this process is refused on the very next call, one removed by another process as soon as
 * its signal arrives (LISTEN/NOTIFY on PostgreSQL, the polled counter on SQLite), and a client
 * registered again under the same ID is accepted again. Two services on one database stand for
 * two server processes.
 */
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { after, before, test } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { CamaraTokens } from '../../src/camara/access-token.ts'
import { CamaraError } from '../../src/camara/camara-error.ts'
import { openService, type Service } from '../../src/service.ts'
import { camaraToken } from '../camara/support.ts'
import { freshDatabaseEnv, type TestEnv } from '../helpers.ts'

/** How long another process may take to hear a removal before the test gives up (the signal takes well under a second). */
const GIVE_UP_MS = 10_000

let fresh: TestEnv
let here: Service
let elsewhere: Service

before(async () => {
  fresh = await freshDatabaseEnv({ PUBLIC_BASE_URL: 'https://kns.example.com' })
  here = await openService(fresh.config)
  elsewhere = await openService(fresh.config)
})
after(async () => {
  await elsewhere?.close()
  await here?.close()
  await fresh?.cleanup()
})

const bearer = (token: string) => `Bearer ${token}`

async function isRefused(tokens: CamaraTokens, token: string): Promise<boolean> {
  try {
    await tokens.verify(bearer(token))
    return false
  } catch (err) {
    assert.ok(err instanceof CamaraError && err.status === 401, String(err))
    assert.match(err.message, /no longer registered/)
    return true
  }
}

test('a client removed in this process: its token is refused on the next call, though its registration was cached', async () => {
  const clientId = `bank-${randomUUID().slice(0, 8)}`
  const token = await camaraToken(here, { clientId })
  const tokens = new CamaraTokens(here)
  assert.equal((await tokens.verify(bearer(token))).clientId, clientId)
  assert.equal((await tokens.verify(bearer(token))).clientId, clientId, 'served again (from the cache)')
  await here.accounts.clients.remove(clientId)
  assert.equal(await isRefused(tokens, token), true)
  assert.equal(await here.accounts.clients.camara(clientId), null)
})

test('a client removed by another process: refused here once its signal arrives; registered again, accepted again', async () => {
  const clientId = `bank-${randomUUID().slice(0, 8)}`
  const token = await camaraToken(here, { clientId })
  const tokens = new CamaraTokens(here)
  await tokens.verify(bearer(token))
  await elsewhere.accounts.clients.remove(clientId)
  const removedAt = Date.now()
  while (!(await isRefused(tokens, token))) {
    assert.ok(Date.now() - removedAt < GIVE_UP_MS, `still accepted ${GIVE_UP_MS} ms after another process removed the client`)
    await sleep(20)
  }
  // Registered again under the same ID (by the other process): a token for it is accepted at once here (a client not found is never cached).
  const again = await camaraToken(elsewhere, { clientId })
  assert.equal((await tokens.verify(bearer(again))).clientId, clientId)
})
