/**
 * Every entry point refuses a node older than 24 in one line (bin/require-node.js) instead of
 * dying on the first .ts file with ERR_UNKNOWN_FILE_EXTENSION: bin/kns.js, the image's
 * healthcheck, and the npm scripts as a checkout without dev dependencies runs them (no pinned
 * node there: the machine's own node answers). Run with the machine's older node where it has
 * one (Debian's is 20).
 */
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { cpSync, existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { delimiter, dirname, join } from 'node:path'
import { after, test } from 'node:test'
import { childEnv, NODE, ROOT } from '../support/process.ts'

const REFUSAL = /^kns needs Node\.js 24 or newer \(this is v\d+\.\d+\.\d+\): install Node 24, or run `npm ci` with the dev dependencies so that npm scripts and npx use the project's pinned node\.$/

/** A node older than 24 on this machine: /usr/bin/node or one on PATH. */
function findOlderNode(): string | undefined {
  const candidates = ['/usr/bin/node', '/usr/local/bin/node', ...(process.env.PATH ?? '').split(delimiter).map((dir) => join(dir, 'node'))]
  for (const candidate of candidates) {
    if (!existsSync(candidate)) continue
    const version = spawnSync(candidate, ['-p', 'process.versions.node'], { encoding: 'utf8' }).stdout?.trim() ?? ''
    if (/^\d+\./.test(version) && Number(version.split('.')[0]) < 24) return candidate
  }
  return undefined
}

const older = findOlderNode()
const skip = older === undefined ? 'no node older than 24 on this machine to try the refusal with' : false
/** The older node first on PATH, as on a machine whose node is too old. */
const env = childEnv({ PATH: `${older === undefined ? '' : dirname(older)}${delimiter}${process.env.PATH ?? ''}`, npm_config_update_notifier: 'false' })
const work = mkdtempSync(join(tmpdir(), `kns-node-version-${process.pid}-`))

after(() => rmSync(work, { recursive: true, force: true }))

function lines(text: string): string[] {
  return text.split('\n').filter((line) => line !== '')
}

test('Node 24 passes the guard silently', () => {
  const result = spawnSync(NODE, [join(ROOT, 'bin', 'require-node.js')], { encoding: 'utf8' })
  assert.equal(result.status, 0)
  assert.equal(result.stdout + result.stderr, '')
})

test('an older node: bin/kns.js, bin/healthcheck.js and the guard itself exit 1 with the one-line refusal', { skip }, () => {
  for (const args of [['bin/kns.js', 'serve'], ['bin/kns.js', 'migrate', '--json'], ['bin/healthcheck.js'], ['bin/require-node.js']]) {
    const result = spawnSync(older!, args, { cwd: ROOT, env, encoding: 'utf8', timeout: 30_000 })
    assert.equal(result.status, 1, `${args.join(' ')}: ${result.stderr}`)
    assert.equal(result.stdout, '', args.join(' '))
    const said = lines(result.stderr)
    assert.equal(said.length, 1, `${args.join(' ')}: one line, got ${result.stderr}`)
    assert.match(said[0]!, REFUSAL)
  }
})

test('an older node and no dev dependencies: npm start, npm run kns, npm test and npm run build:web refuse in one line', { skip }, (t) => {
  // What a checkout has without `npm ci`'s dev dependencies as far as these scripts go: the
  // scripts and bin/ (the refusal comes before anything else is read).
  const checkout = join(work, 'checkout')
  cpSync(join(ROOT, 'package.json'), join(checkout, 'package.json'))
  cpSync(join(ROOT, 'bin'), join(checkout, 'bin'), { recursive: true })
  const npmWorks = spawnSync('npm', ['--version'], { cwd: checkout, env, encoding: 'utf8' })
  if (npmWorks.status !== 0) return t.skip(`npm does not run on ${older}: ${npmWorks.stderr.trim()}`)
  for (const args of [['start'], ['run', 'kns', '--', 'migrate'], ['test'], ['run', 'build:web']]) {
    const result = spawnSync('npm', args, { cwd: checkout, env, encoding: 'utf8', timeout: 60_000 })
    const name = `npm ${args.join(' ')}`
    assert.notEqual(result.status, 0, name)
    assert.doesNotMatch(result.stderr, /ERR_UNKNOWN_FILE_EXTENSION/, name)
    const refusals = lines(result.stderr).filter((line) => REFUSAL.test(line))
    assert.equal(refusals.length, 1, `${name}: the refusal once, got\n${result.stderr}`)
  }
})
