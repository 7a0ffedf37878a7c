/**
 * The soak benchmark's mixed workload (bench/soak.bench.ts): which requests, in what
 * proportions, made from the seed. Built in the load process (bench/soak-driver.ts) from
 * plain data it is sent, with the same request makers as `npm run bench` where they fit.
 */
import type { Endpoint } from './bench-server.ts'
import { callerEndpoints, LOOKUP_NAME, RESIGN_AFTER_S, VERIFY_NAME } from './caller-bench.ts'
import { callSigner, type CallerSeed } from './caller-seed.ts'
import { areaAEndpoints, type Engine } from './seed.ts'

/** Everything the load process needs, as plain data (it crosses IPC). */
export interface SoakSeed {
  engine: Engine
  /** API key with scope `approvals`. */
  apiKey: string
  ownedPhones: string[]
  users: { email: string; phoneNumber: string }[]
  /** Pending approvals that are only read (transaction_details). */
  detailRefs: string[]
  /** Wallet signatures over pending approvals' signMessage (verify_signature). */
  signed: { approvalNumber: string; signature: string }[]
  /** Pending approvals the users decline (approval-cancel); none of them is ever signed. */
  cancelRefs: string[]
  caller: CallerSeed
}

/**
 * Requests per 100, and why. Caller verification happens on every call, so it leads; a
 * carrier looks numbers up too. Each new approval is read about twice (the wallet's page and
 * the shop polling). Decisions go to seeded approvals: the first verify_signature of each
 * approves it, later ones are idempotent successes (as a retrying wallet sees); the first
 * cancel of each cancels it, later ones answer success again. Logins are of seeded users
 * (no new registrations: each mints a token, not a steady-state event). The public statistics
 * (9 %) come from explorer page views: the network page loads the four usage answers once
 * each, the number-system page (visited less) the sign-up statistics. The sign-up statistics
 * are computed on every request (the others are cached per data version): ~9 ms of server
 * CPU each on SQLite with the soak's ~11 000 numbers, so even at 1 % they take ~1/5 of its CPU.
 */
export const MIX: readonly { name: string; weight: number }[] = [
  { name: VERIFY_NAME, weight: 30 },
  { name: LOOKUP_NAME, weight: 18 },
  { name: 'GET /numsys/transaction_details', weight: 23 },
  { name: 'POST /numsys/approval-phone', weight: 10 },
  { name: 'POST /numsys/verify_signature', weight: 5 },
  { name: 'POST /numsys/approval-cancel', weight: 3 },
  { name: 'POST /numsys/register-user-login (login)', weight: 2 },
  { name: 'GET /api/v1/UsageGraph/global-public-stats', weight: 2 },
  { name: 'POST /api/v1/UsageGraph/global-public-gateway-stats', weight: 2 },
  { name: 'POST /api/v1/UsageGraph/global-public-wifi-stats', weight: 2 },
  { name: 'POST /api/v1/Wifi/wifi-nodes', weight: 2 },
  { name: 'POST /api/v1/UsageGraph/global-public-ns-stats', weight: 1 },
]

const JSON_HEADERS = { 'content-type': 'application/json' }
const DAY_MS = 86_400_000

/**
 * Call verification with every PASSporT re-signed as it is about to be sent once it is older
 * than RESIGN_AFTER_S (CALL_MAX_AGE_S is 60 s), one at a time: re-signing all 10 000 at once,
 * as `npm run bench` does between slices, would stall the load process for ~0.4 s every 30 s,
 * and every response arriving meanwhile would be timed that much slower.
 */
function callVerification(caller: CallerSeed): Endpoint {
  const sign = callSigner(caller)
  const bodies: string[] = []
  const signedAt = new Float64Array(caller.numbers.length)
  let calls = 0
  return {
    name: VERIFY_NAME, method: 'POST', headers: { ...JSON_HEADERS, 'x-api-key': caller.apiKey },
    next() {
      const i = calls++ % caller.numbers.length
      const now = Date.now()
      if (now - signedAt[i]! >= RESIGN_AFTER_S * 1000) {
        bodies[i] = sign(caller.numbers[i]!, Math.floor(now / 1000))
        signedAt[i] = now
      }
      return { path: '/numsys/call-signature-verification', body: bodies[i]! }
    },
    ok: (body) => body.startsWith('{"success":true'),
  }
}

/** A public statistics endpoint over the last `days` days, the period ending now (as explorers ask). */
function rangeStats(name: string, days: number, ok: (body: string) => boolean): Endpoint {
  const path = name.slice(name.indexOf(' ') + 1)
  return {
    name, method: 'POST', headers: JSON_HEADERS, ok,
    next() {
      const end = Date.now()
      return { path, body: JSON.stringify({ start: new Date(end - days * DAY_MS).toISOString(), end: new Date(end).toISOString() }) }
    },
  }
}

/** The endpoints of MIX, in its order. */
export function soakEndpoints(seed: SoakSeed, log: (line: string) => void): Endpoint[] {
  let cancels = 0
  let logins = 0
  const own: Endpoint[] = [
    ...areaAEndpoints(seed.engine, seed, seed.signed),
    ...callerEndpoints(seed.caller, log).filter((e) => e.name === LOOKUP_NAME),
    callVerification(seed.caller),
    {
      name: 'POST /numsys/approval-cancel', method: 'POST', headers: JSON_HEADERS,
      next: () => ({ path: '/numsys/approval-cancel', body: JSON.stringify({ approvalNumber: seed.cancelRefs[cancels++ % seed.cancelRefs.length] }) }),
      ok: (body) => body === '{"success":true}',
    }, {
      name: 'POST /numsys/register-user-login (login)', method: 'POST', headers: JSON_HEADERS,
      next: () => ({ path: '/numsys/register-user-login', body: JSON.stringify(seed.users[logins++ % seed.users.length]) }),
      // The same answer whether or not registered (issue 25): an existing user's own zkAddress.
      ok: (body) => body.startsWith('{"success":true') && body.includes('"zkAddress":"0x'),
    }, {
      name: 'GET /api/v1/UsageGraph/global-public-stats', method: 'GET', headers: {},
      next: () => ({ path: '/api/v1/UsageGraph/global-public-stats' }),
      ok: (body) => body.includes('"totalSessions":'),
    },
    rangeStats('POST /api/v1/UsageGraph/global-public-gateway-stats', 7, (body) => body.includes('"periodUsage":')),
    rangeStats('POST /api/v1/UsageGraph/global-public-wifi-stats', 30, (body) => body.includes('"periodUsage":')),
    {
      name: 'POST /api/v1/Wifi/wifi-nodes', method: 'POST', headers: JSON_HEADERS,
      next: () => ({ path: '/api/v1/Wifi/wifi-nodes', body: '{}' }),
      ok: (body) => body.startsWith('[{'),
    },
    rangeStats('POST /api/v1/UsageGraph/global-public-ns-stats', 90, (body) => body.includes('"totalNS":')),
  ]
  return MIX.map(({ name }) => {
    const endpoint = own.find((e) => e.name === name)
    if (endpoint === undefined) throw new Error(`soak mix: no endpoint named ${name}`)
    return endpoint
  })
}

/**
 * The order of one cycle of 100 requests: each endpoint as often as its weight, shuffled
 * once, so every few hundred requests carry the exact proportions and no kind comes in runs.
 */
export function mixCycle(): number[] {
  const cycle = MIX.flatMap(({ weight }, kind) => Array.from({ length: weight }, () => kind))
  for (let i = cycle.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1))
    ;[cycle[i], cycle[j]] = [cycle[j]!, cycle[i]!]
  }
  return cycle
}
