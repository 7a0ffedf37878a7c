/**
 * The fuzz run shared by the test (test/fuzz/openapi.test.ts) and `npm run fuzz`:
 *
 * 1. valid phase: requests generated from every operation's schemas (fixtures overlaid), and
 *    mutants the document still accepts; never a 5xx, every error in the one shape;
 * 2. mutated phase: mutants the document rejects, in small batches; each must get a 4xx in
 *    the one shape, and the database must be exactly as it was (snapshot around each batch).
 *
 * Violations are collected rather than thrown at the first one, so that one run lists every
 * kind of failure; the seed replays the same sequence of requests (FUZZ_SEED).
 */
import fc from 'fast-check'
import type { LightMyRequestResponse } from 'fastify'
import type { Harness } from '../helpers.ts'
import { seedFixtures } from './fixtures.ts'
import { mutatedCaseArbitrary } from './mutations.ts'
import { fetchOpenApi, listOperations, refResolver, validCaseArbitrary, type FuzzCase, type FuzzRequest } from './openapi-operations.ts'
import { classify, responseProblems, type OracleContext } from './oracle.ts'
import { snapshotDiff, snapshotTables } from './snapshot.ts'

/**
 * The fuzz server's settings (both the test and `npm run fuzz`): WAIT_MAX_S=0, or a valid
 * `wait` would hold a generated request for up to a minute; WEBHOOK_ALLOW_PRIVATE=true, so that
 * the subscriptions' sinks on loopback are taken (and no name is looked up in DNS for them).
 */
export const FUZZ_SERVER_ENV = { WAIT_MAX_S: '0', WEBHOOK_ALLOW_PRIVATE: 'true' }

export interface FuzzOptions {
  /** Wall-clock budget of both phases together. */
  seconds: number
  seed: number
  /** Mutants per database snapshot in the mutated phase. */
  batch?: number
}

export interface Violation {
  phase: 'valid' | 'mutated'
  op: string
  mutation?: string
  problems: string[]
  request: FuzzRequest
  status?: number
  response?: string
}

/** operation id -> status -> requests */
export type Counts = Record<string, Record<string, number>>

export interface FuzzReport {
  seed: number
  engine: string
  operations: string[]
  counts: { valid: Counts; mutated: Counts }
  requests: { valid: number; mutated: number }
  violations: Violation[]
  elapsedMs: number
}

async function send(h: Harness, request: FuzzRequest): Promise<LightMyRequestResponse> {
  return h.app.inject({
    method: request.method as 'GET',
    url: request.url,
    headers: request.headers,
    ...(request.payload === undefined ? {} : { payload: request.payload }),
  })
}

export async function runFuzz(h: Harness, options: FuzzOptions): Promise<FuzzReport> {
  const started = Date.now()
  const doc = await fetchOpenApi(h.app)
  const ops = listOperations(doc)
  const fixtures = await seedFixtures(h)
  const resolve = refResolver(doc)
  const tokens = { camaraToken: fixtures.camaraToken, otherCamaraTokens: fixtures.otherCamaraTokens }
  const oracle: OracleContext = { ops, apiKey: fixtures.apiKey, ...tokens, resolve }
  const requestCtx = { resolve, records: fixtures.records, apiKey: fixtures.apiKey, ...tokens }
  const valid = fc.oneof(...ops.map((op) => validCaseArbitrary(op, requestCtx)))
  const mutated = mutatedCaseArbitrary(valid, {
    ops, apiKey: fixtures.apiKey, revokedKey: fixtures.revokedKey, camaraToken: fixtures.camaraToken, refusedCamaraTokens: fixtures.refusedCamaraTokens,
  })

  const report: FuzzReport = {
    seed: options.seed, engine: h.service.db.engine, operations: ops.map((o) => o.id),
    counts: { valid: {}, mutated: {} }, requests: { valid: 0, mutated: 0 }, violations: [], elapsedMs: 0,
  }

  /** Sends `c`, counts and judges the answer; its status. */
  async function check(phase: Violation['phase'], c: FuzzCase): Promise<number | undefined> {
    const expectation = classify(c, oracle)
    report.requests[phase]++
    let res: LightMyRequestResponse
    try {
      res = await send(h, c.request)
    } catch (err) {
      report.violations.push({ phase, op: c.op.id, ...(c.mutation ? { mutation: c.mutation } : {}), problems: [`inject threw: ${(err as Error).message}`], request: c.request })
      return undefined
    }
    const perStatus = (report.counts[phase][c.op.id] ??= {})
    perStatus[res.statusCode] = (perStatus[res.statusCode] ?? 0) + 1
    const problems = responseProblems(c, expectation, res)
    if (problems.length > 0) {
      report.violations.push({
        phase, op: c.op.id, ...(c.mutation ? { mutation: c.mutation } : {}), problems, request: c.request,
        status: res.statusCode, response: res.body.slice(0, 400),
      })
    }
    return res.statusCode
  }

  const budgetMs = Math.max(1000, options.seconds * 1000 - (Date.now() - started))
  const runParameters = (ms: number, seed: number): fc.Parameters<unknown> => ({ seed, numRuns: 1e9, interruptAfterTimeLimit: ms, markInterruptAsFailure: false })
  // At the time limit fast-check abandons the run in progress rather than waiting for it:
  // the phase is over only when that run is, or its writes would land in the next phase.
  let inFlight: Promise<void> = Promise.resolve()
  const tracked = <T>(run: (value: T) => Promise<void>) => (value: T) => (inFlight = run(value))

  // Valid requests, and mutants the document still accepts (a NUL where a pattern allows one).
  await fc.assert(fc.asyncProperty(fc.oneof({ weight: 3, arbitrary: valid }, { weight: 1, arbitrary: mutated }), tracked(async (c) => {
    await check('valid', c)
  })), runParameters(budgetMs / 2, options.seed))
  await inFlight

  // Mutants the document rejects: nothing may be stored. Snapshots bracket each small batch,
  // so a change is pinned to a few requests.
  const rejected = mutated.filter((c) => classify(c, oracle).kind === 'reject')
  let before = await snapshotTables(h.service.db)
  const phaseEnd = started + options.seconds * 1000
  await fc.assert(fc.asyncProperty(fc.array(rejected, { minLength: 1, maxLength: options.batch ?? 8 }), tracked(async (batch) => {
    const statuses: (number | undefined)[] = []
    for (const c of batch) statuses.push(await check('mutated', c))
    const after = await snapshotTables(h.service.db)
    const changes = snapshotDiff(before, after)
    if (changes.length > 0) {
      // The example is the request answered 2xx, if one was (it is a violation of its own too).
      const culprit = Math.max(0, statuses.findIndex((s) => s !== undefined && s < 300))
      const c = batch[culprit]!
      const sent = batch.map((b, i) => `${b.request.method} ${b.request.url.slice(0, 100)} (${b.mutation}) -> ${statuses[i]}`)
      report.violations.push({
        phase: 'mutated', op: c.op.id, ...(c.mutation ? { mutation: c.mutation } : {}), request: c.request,
        problems: ['stored data changed while only rejected requests were sent', ...changes, 'the batch:', ...sent],
      })
      before = after
    }
  })), runParameters(Math.max(500, phaseEnd - Date.now()), (options.seed + 1) | 0))
  await inFlight

  report.elapsedMs = Date.now() - started
  return report
}

function statusList(perStatus: Record<string, number> | undefined): string {
  return Object.entries(perStatus ?? {}).sort(([a], [b]) => Number(a) - Number(b)).map(([s, n]) => `${s}:${n}`).join(' ') || '-'
}

/** The counts by route and status, one line per operation. */
export function formatCounts(report: FuzzReport): string {
  const width = Math.max(...report.operations.map((o) => o.length))
  const lines = [`${report.engine}: ${report.requests.valid} valid-phase and ${report.requests.mutated} mutated-phase requests in ${(report.elapsedMs / 1000).toFixed(1)} s, seed ${report.seed}`]
  for (const op of report.operations) {
    const ok = Object.entries(report.counts.valid[op] ?? {}).filter(([s]) => s.startsWith('2')).reduce((n, [, k]) => n + k, 0)
    lines.push(`  ${op.padEnd(width)}  2xx ${String(ok).padStart(4)} | valid ${statusList(report.counts.valid[op])} | mutated ${statusList(report.counts.mutated[op])}`)
  }
  const without = report.operations.filter((op) => !Object.keys(report.counts.valid[op] ?? {}).some((s) => s.startsWith('2')))
  if (without.length > 0) lines.push(`  no 2xx at all (fixtures missing for them?): ${without.join(', ')}`)
  return lines.join('\n')
}

function showRequest(r: FuzzRequest): string {
  const clip = (s: string, n: number) => (s.length > n ? `${s.slice(0, n)}... (${s.length} chars)` : s)
  const payload = r.payload === undefined ? '' : typeof r.payload === 'string'
    ? `\n      payload: ${clip(JSON.stringify(r.payload), 400)}`
    : `\n      payload (bytes): ${clip(r.payload.toString('hex'), 400)}`
  const headers = Object.entries(r.headers).map(([k, v]) => `${k}: ${clip(JSON.stringify(v), 80)}`).join(', ')
  return `${r.method} ${clip(r.url, 200)}\n      headers: {${headers}}${payload}`
}

/** A problem without its particulars (numbers, quoted text, the reason in parentheses), to group alike failures. */
function problemKind(problem: string): string {
  return problem.replace(/\(.*\)/g, '').replace(/"[^"]*"/g, '"…"').replace(/\d{4,}/g, '#').trim()
}

/** Violations grouped by status and kind of problem: how often, on which operations, and the first example of each. */
export function formatViolations(report: FuzzReport, max = 12): string {
  const groups = new Map<string, { example: Violation; n: number; ops: Set<string> }>()
  for (const v of report.violations) {
    // Server errors have causes of their own on each route: grouped per route.
    const key = `${v.status ?? '-'}|${problemKind(v.problems[0]!)}${(v.status ?? 0) >= 500 ? `|${v.op}` : ''}`
    const group = groups.get(key) ?? { example: v, n: 0, ops: new Set<string>() }
    group.n++
    group.ops.add(v.op)
    groups.set(key, group)
  }
  const lines = [`${report.violations.length} violations of ${groups.size} kinds (seed ${report.seed}; replay with FUZZ_SEED=${report.seed}):`]
  for (const { example: v, n, ops } of [...groups.values()].slice(0, max)) {
    lines.push(`  ${n}x on ${[...ops].slice(0, 4).join(', ')}${ops.size > 4 ? ` and ${ops.size - 4} more` : ''}; e.g. [${v.phase}] ${v.op}${v.mutation ? ` (${v.mutation})` : ''} -> ${v.status ?? 'no answer'}`)
    for (const p of v.problems) lines.push(`    ${p}`)
    lines.push(`    request: ${showRequest(v.request)}`)
    if (v.response !== undefined) lines.push(`    response: ${JSON.stringify(v.response)}`)
  }
  if (groups.size > max) lines.push(`  ... and ${groups.size - max} more kinds`)
  return lines.join('\n')
}
