/**
 * `npm run fuzz -- --seconds N [--seed S]`: the fuzz run of the test suite for as long as
 * asked, on SQLite, or on PostgreSQL with DATABASE_URL (a fresh schema, dropped afterwards).
 * Prints the counts by route and status and the seed; exits 1 on any violation.
 */
import { parseArgs } from 'node:util'
import { startHarness } from '../helpers.ts'
import { chooseSeed } from '../support/fuzz-seed.ts'
import { formatCounts, formatViolations, FUZZ_SERVER_ENV, runFuzz } from './fuzz-run.ts'

const { values } = parseArgs({ options: { seconds: { type: 'string', default: '60' }, seed: { type: 'string' }, batch: { type: 'string' } } })
const seconds = Number(values.seconds)
if (!Number.isFinite(seconds) || seconds <= 0) throw new Error(`--seconds must be a positive number, got ${values.seconds}`)
const seed = chooseSeed(values.seed === undefined ? process.env : { FUZZ_SEED: values.seed })

const h = await startHarness(FUZZ_SERVER_ENV)
try {
  console.log(`fuzzing for ${seconds} s on ${h.service.db.engine}, seed ${seed}`)
  const report = await runFuzz(h, { seconds, seed, ...(values.batch === undefined ? {} : { batch: Number(values.batch) }) })
  console.log(formatCounts(report))
  if (report.violations.length > 0) {
    console.log(formatViolations(report, Number(process.env.FUZZ_SHOW ?? 12)))
    process.exitCode = 1
  } else {
    console.log(`no violations (seed ${seed})`)
  }
} finally {
  await h.close()
}
