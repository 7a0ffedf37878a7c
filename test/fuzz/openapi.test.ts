/**
 * Property-based fuzzing of every operation in the served OpenAPI document (see fuzz-run.ts):
 * valid requests never get a 5xx, rejected ones get a 4xx in the one error
 * shape and store nothing. Bounded in time (FUZZ_SECONDS, default 15); the seed is printed
 * with any failure and FUZZ_SEED replays it. `npm run fuzz -- --seconds N` runs it longer.
 */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { ENGINE, startHarness } from '../helpers.ts'
import { chooseSeed } from '../support/fuzz-seed.ts'
import { formatCounts, formatViolations, FUZZ_SERVER_ENV, runFuzz } from './fuzz-run.ts'

const SECONDS = Number(process.env.FUZZ_SECONDS ?? 15)

test(`every operation of /openapi.json, fuzzed for ${SECONDS} s (${ENGINE})`, { timeout: (SECONDS + 90) * 1000 }, async (t) => {
  const seed = chooseSeed()
  // PUBLIC_RATE_LIMIT=0 (the harness default): a 429 would hide what the request deserved.
  const h = await startHarness({ PUBLIC_RATE_LIMIT: '0', ...FUZZ_SERVER_ENV })
  try {
    const report = await runFuzz(h, { seconds: SECONDS, seed })
    for (const line of formatCounts(report).split('\n')) t.diagnostic(line)
    const unreached = report.operations.filter((op) => report.counts.valid[op] === undefined || report.counts.mutated[op] === undefined)
    assert.deepEqual(unreached, [], `operations that got no valid or no mutated request (seed ${seed})`)
    assert.equal(report.violations.length, 0, formatViolations(report))
  } finally {
    await h.close()
  }
})
