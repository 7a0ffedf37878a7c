/**
 * What the fault tests observe and demand of a running server while PostgreSQL goes away or
 * fails over: its readiness probe over time, the first success after an event, and the shape
 * of every failure (503 DATABASE_UNAVAILABLE with Retry-After, nothing else).
 */
import assert from 'node:assert/strict'
import { PostgresDatabase } from '../../src/db/postgres.ts'
import { createApiKey } from '../../src/keys/api-keys.ts'
import { postJson, sleep } from '../support/process.ts'
import { summarize, type ApprovalLoad, type Attempt } from './approval-load.ts'

export interface Probe { at: number; ms: number; status: number; body: string }

/** GET /readyz every 100 ms until stopped. */
export function pollReadiness(url: string): { probes: Probe[]; stop(): Promise<void> } {
  const probes: Probe[] = []
  let running = true
  const loop = (async () => {
    while (running) {
      const at = performance.now()
      try {
        const res = await fetch(`${url}/readyz`, { signal: AbortSignal.timeout(10_000) })
        probes.push({ at, ms: performance.now() - at, status: res.status, body: await res.text() })
      } catch (err) {
        probes.push({ at, ms: performance.now() - at, status: 0, body: String(err) })
      }
      await sleep(100)
    }
  })()
  return { probes, async stop() { running = false; await loop } }
}

/** The first approval answered 200 that was sent after `since` (ms after `since`), waiting up to 15 s. */
export async function firstSuccessAfter(load: ApprovalLoad, since: number): Promise<number> {
  const deadline = since + 15_000
  for (;;) {
    const ok = load.attempts.find((a) => a.kind === 'approval' && a.status === 200 && a.at >= since)
    if (ok !== undefined) return ok.at + ok.ms - since
    if (performance.now() > deadline) throw new Error(`no approval succeeded within 15 s: ${summarize(load.attempts.filter((a) => a.at >= since))}`)
    await sleep(20)
  }
}

/** Every failure is a 503 DATABASE_UNAVAILABLE in the usual error shape, with Retry-After; nothing else, no hang. */
export function assertOnlyUnavailable(attempts: readonly Attempt[]): void {
  const other = attempts.filter((a) => a.status !== 200 && !(a.status === 503 && a.code === 'DATABASE_UNAVAILABLE'))
  assert.deepEqual(other.slice(0, 5), [], `answers other than 200 and 503 DATABASE_UNAVAILABLE: ${summarize(other)}`)
  for (const a of attempts.filter((a) => a.status === 503)) {
    assert.equal(a.body?.success, false)
    assert.equal(typeof a.body?.error, 'string')
    assert.equal(a.body?.message, a.body?.error)
    assert.equal(typeof a.body?.requestId, 'string')
    assert.equal(a.retryAfter, '1', 'a 503 DATABASE_UNAVAILABLE says when to retry')
  }
}

/** Whether `check` comes true within `timeoutMs` (asked every 100 ms; a throw counts as false). */
export async function eventually(check: () => Promise<boolean>, timeoutMs: number): Promise<boolean> {
  const deadline = performance.now() + timeoutMs
  while (performance.now() < deadline) {
    if (await check().catch(() => false)) return true
    await sleep(100)
  }
  return false
}

/**
 * What approvals need on a new database behind a running server: an API key with the
 * approvals scope (made directly in the database at `databaseUrl`) and `phoneNumber`
 * registered through the server. Returns the key.
 */
export async function prepareApprovals(serverUrl: string, databaseUrl: string, phoneNumber: string, vendor: string): Promise<string> {
  const db = new PostgresDatabase(databaseUrl)
  let key: string
  try {
    key = (await createApiKey(db, { vendor, scopes: ['approvals'], rate: 100_000 })).key
  } finally {
    await db.close()
  }
  const registered = await postJson(`${serverUrl}/numsys/register-user-login`, { email: 'fault@example.com', phoneNumber })
  assert.equal(registered.status, 200, JSON.stringify(registered.body))
  return key
}
