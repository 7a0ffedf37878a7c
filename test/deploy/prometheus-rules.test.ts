/**
 * deploy/prometheus (issue 33, item 3): the alert rules pass `promtool check rules`, their unit
 * tests pass `promtool test rules`, and the example configuration passes `promtool check
 * config`. promtool comes with Debian's `prometheus` package, which .ci/run installs: without
 * it these tests are skipped on a workstation, but fail under CI=true (a skip there would hide
 * rules that no longer load).
 */
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { test } from 'node:test'
import { ROOT } from '../support/process.ts'

const DIR = join(ROOT, 'deploy', 'prometheus')
/** PROMTOOL names another one (and, set to a path that does not exist, shows what a missing one does). */
const PROMTOOL = process.env.PROMTOOL !== undefined
  ? (existsSync(process.env.PROMTOOL) ? process.env.PROMTOOL : undefined)
  : ['/usr/bin/promtool', '/usr/local/bin/promtool'].find((path) => existsSync(path))
const MISSING = 'promtool is not installed (Debian: apt-get install prometheus; .ci/run installs it)'
const skip = PROMTOOL === undefined && process.env.CI !== 'true' ? MISSING : false

function promtool(...args: string[]): { code: number | null; output: string } {
  assert.ok(PROMTOOL !== undefined, `${MISSING}: under CI=true this fails rather than skip`)
  const run = spawnSync(PROMTOOL, args, { cwd: DIR, encoding: 'utf8', timeout: 120_000 })
  return { code: run.status, output: `${run.stdout}${run.stderr}` }
}

test('promtool check rules: kns-alerts.yml loads', { skip }, () => {
  const { code, output } = promtool('check', 'rules', 'kns-alerts.yml')
  assert.equal(code, 0, output)
  assert.match(output, /SUCCESS: \d+ rules found/)
})

test('promtool test rules: each alert fires on the series it reads, and stays quiet on a healthy service', { skip }, () => {
  const { code, output } = promtool('test', 'rules', 'kns-alerts.test.yml')
  assert.equal(code, 0, output)
  assert.match(output, /SUCCESS/)
})

test('promtool check config: the example prometheus.yml (and the rules it loads)', { skip }, () => {
  const { code, output } = promtool('check', 'config', 'prometheus.yml')
  assert.equal(code, 0, output)
})
