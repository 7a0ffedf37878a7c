/**
 * CAMARA SIM Swap `check` in the benchmark (bench/api.bench.ts), against the bare route like
 * transaction_details: a two-legged access token of the service's provider, and numbers with a
 * recorded SIM change, so each request reads the number and its latest change as a bank's does.
 */
import { loadConfig } from '../src/config.ts'
import { openService } from '../src/service.ts'
import { camaraToken, recordChange } from '../test/camara/support.ts'
import type { Endpoint } from './bench-server.ts'
import { inPool, pad } from './seed.ts'

export const CHECK_NAME = 'POST /sim-swap/v2/check'

const HOUR_MS = 3_600_000

export interface CamaraSeed {
  token: string
  /** Numbers with an activation long ago and a SIM change a day ago: half the checks see it (maxAge 48), half not (maxAge 12). */
  phones: string[]
}

/** Seeds through the service's own database, in this process, before the server starts (as bench/seed.ts). */
export async function seedCamara(env: Record<string, string>, numbers: number): Promise<CamaraSeed> {
  const service = await openService(loadConfig(env))
  try {
    const phones = Array.from({ length: numbers }, (_, i) => `+1212${pad(i, 7)}`)
    const parallel = service.db.engine === 'sqlite' ? 1 : 8
    await inPool(phones, parallel, async (phone) => {
      await recordChange(service, phone, 'activation', Date.now() - 400 * 24 * HOUR_MS)
      await recordChange(service, phone, 'sim-change', Date.now() - 24 * HOUR_MS)
    })
    // Valid for the whole run (both engines, every endpoint).
    return { token: await camaraToken(service, { clientId: 'bench-bank', scopes: ['sim-swap:check', 'dpv:FraudPreventionAndDetection'], expiresInS: 6 * 3600 }), phones }
  } finally {
    await service.close()
  }
}

export function camaraEndpoints(data: CamaraSeed): Endpoint[] {
  let checks = 0
  return [{
    name: CHECK_NAME, method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${data.token}`, 'x-correlator': 'bench' },
    next() {
      const i = checks++
      return { path: '/sim-swap/v2/check', body: JSON.stringify({ phoneNumber: data.phones[i % data.phones.length], maxAge: i % 2 === 0 ? 48 : 12 }) }
    },
    ok: (body) => body === '{"swapped":true}' || body === '{"swapped":false}',
  }]
}
