/**
 * deploy/install.sh as the image's build stage runs it (docs/deploy.md): from the Docker build
 * context (the repository less .dockerignore, with the dev dependencies the stage's `npm ci`
 * installs), `install.sh build` lays out an app that serves on its own: the API, the pages,
 * no dev dependency. Then the same into the same directory again, what it refuses, `npm start`
 * in a checkout without dev dependencies, and `install.sh user` (as root, on a scratch /etc).
 */
import assert from 'node:assert/strict'
import { spawn, spawnSync } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync, cpSync, chmodSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { delimiter, dirname, join } from 'node:path'
import { after, test } from 'node:test'
import { freshDatabaseEnv, type TestEnv } from '../helpers.ts'
import { copyBuildContext } from '../support/docker-context.ts'
import { childEnv, killAll, NODE, ROOT, startServer } from '../support/process.ts'

const work = mkdtempSync(join(tmpdir(), `kns-deploy-${process.pid}-`))
const context = join(work, 'context')
const app = join(work, 'app')
const fresh: TestEnv[] = []

after(async () => {
  await killAll()
  for (const env of fresh) await env.cleanup()
  rmSync(work, { recursive: true, force: true })
})

/**
 * The machine's registry settings, which `npm ci` needs for a package not in its cache: npm's
 * own settings from the environment and the CA bundle. With Node 24 first on PATH, npm looks
 * for its global npmrc beside that node, not where the machine's npm keeps it (its `cafile`).
 */
function registrySettings(): Record<string, string> {
  const kept: Record<string, string> = {}
  for (const [name, value] of Object.entries(process.env)) {
    if (value !== undefined && (/^npm_config_/i.test(name) || name === 'NODE_EXTRA_CA_CERTS' || name === 'SSL_CERT_FILE')) kept[name] = value
  }
  return kept
}

/** npm and Node 24 first on PATH, as in the image (node:24-slim). npm's cache makes `npm ci` local. */
const env = childEnv({ ...registrySettings(), PATH: `${dirname(NODE)}${delimiter}${process.env.PATH ?? ''}`, npm_config_prefer_offline: 'true', npm_config_update_notifier: 'false' })

function skipReason(): string | undefined {
  for (const [tool, flag] of [['bash', '--version'], ['npm', '--version']] as const) {
    if (spawnSync(tool, [flag], { stdio: 'ignore', env }).status !== 0) return `${tool} is not installed`
  }
  return undefined
}

interface Run { code: number | null; stdout: string; stderr: string; ms: number }

/** Runs a command to completion (asynchronously: the test runner's timers keep running). */
function run(file: string, args: string[], options: { cwd?: string; env?: Record<string, string> } = {}): Promise<Run> {
  const started = performance.now()
  return new Promise((resolve, reject) => {
    const child = spawn(file, args, { cwd: options.cwd ?? work, env: options.env ?? env, stdio: ['ignore', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => { stdout += chunk })
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => { stderr += chunk })
    const timer = setTimeout(() => child.kill('SIGKILL'), 300_000)
    child.on('error', reject)
    child.on('close', (code) => {
      clearTimeout(timer)
      resolve({ code, stdout, stderr, ms: performance.now() - started })
    })
  })
}

const installBuild = (out: string) => run('bash', [join(context, 'deploy', 'install.sh'), 'build', out])

/** Every package the lock marks as a dev dependency only (none of them may be in the app). */
function devOnlyPackages(lockFile: string): string[] {
  const lock = JSON.parse(readFileSync(lockFile, 'utf8')) as { packages: Record<string, { dev?: boolean }> }
  return Object.entries(lock.packages).filter(([path, entry]) => path !== '' && entry.dev === true).map(([path]) => path)
}

test('install.sh build: from the Docker build context, an app that serves the API and the pages with production dependencies only', { timeout: 600_000, skip: skipReason() ?? false }, async (t) => {
  copyBuildContext(context)
  // The build stage's `npm ci` (all dependencies): the repository's own.
  symlinkSync(join(ROOT, 'node_modules'), join(context, 'node_modules'))
  assert.ok(!existsSync(join(context, 'dist')), 'dist/ is not in the build context: the build stage makes the pages')

  const first = await installBuild(app)
  assert.equal(first.code, 0, `${first.stdout}\n${first.stderr}`)
  t.diagnostic(`install.sh build (pages built, npm ci --omit=dev): ${(first.ms / 1000).toFixed(1)} s`)

  for (const path of ['bin/kns.js', 'bin/require-node.js', 'bin/healthcheck.js', 'src/cli/main.ts', 'dist/web/.build-stamp', 'dist/web/approve/index.html', 'LICENSE', 'package.json', 'package-lock.json', 'node_modules/fastify/package.json']) {
    assert.ok(existsSync(join(app, path)), `${path} is in the app`)
  }
  for (const path of ['web', 'test', 'bench', 'docs', 'deploy', '.git']) assert.ok(!existsSync(join(app, path)), `${path} is not in the app`)
  const devOnly = devOnlyPackages(join(app, 'package-lock.json'))
  // (typescript is not among them: @mysten/sui's gql.tada requires it as a peer, so it is a
  // production package, never loaded at run time.)
  assert.ok(devOnly.includes('node_modules/vite') && devOnly.includes('node_modules/node') && devOnly.includes('node_modules/playwright-core'),
    'the lock marks vite, the pinned node and playwright-core as dev dependencies')
  const present = devOnly.filter((path) => existsSync(join(app, path)))
  assert.deepEqual(present, [], 'no dev dependency is in the app')
  assert.ok(statSync(join(app, 'src', 'cli', 'main.ts')).mode & 0o004, 'the app is readable by the service user')

  const db = await freshDatabaseEnv()
  fresh.push(db)
  const server = await startServer(db.env, { command: { file: NODE, args: [join(app, 'bin', 'kns.js'), 'serve'] } })
  for (const path of ['/healthz', '/readyz']) {
    const res = await fetch(`${server.url}${path}`)
    assert.equal(res.status, 200, `${path}: ${await res.text()}`)
  }
  const page = await fetch(`${server.url}/approve?ref=0123456789abcdef`)
  assert.equal(page.status, 200, 'the approval page is served from the app\'s dist/web')
  assert.match(page.headers.get('content-type') ?? '', /text\/html/)
  assert.match(await page.text(), /<script type="module"[^>]* src="\/assets\//)

  // The image's HEALTHCHECK, against this server and against nothing.
  const healthy = await run(NODE, [join(app, 'bin', 'healthcheck.js')], { env: { ...env, HOST: '127.0.0.1', PORT: String(server.port) } })
  assert.equal(healthy.code, 0, healthy.stderr)
  const exit = await server.stop()
  assert.equal(exit.code, 0, server.stderr())
  const down = await run(NODE, [join(app, 'bin', 'healthcheck.js')], { env: { ...env, HOST: '127.0.0.1', PORT: String(server.port) } })
  assert.equal(down.code, 1)
  assert.match(down.stderr, /^healthcheck: http:\/\/127\.0\.0\.1:\d+\/healthz: .+\n$/)

  // Again into the same directory: the same layout (the pages are fresh: not rebuilt).
  const stale = join(app, 'src', 'left-over.ts')
  writeFileSync(stale, 'export {}\n')
  const second = await installBuild(app)
  assert.equal(second.code, 0, `${second.stdout}\n${second.stderr}`)
  t.diagnostic(`install.sh build again into the same directory: ${(second.ms / 1000).toFixed(1)} s`)
  assert.ok(!existsSync(stale), 'a file of an earlier layout is gone')
  assert.ok(existsSync(join(app, 'node_modules', 'fastify', 'package.json')))
})

test('install.sh build refuses a directory it did not lay out, the repository, a tree without dev dependencies, and a missing argument', { skip: skipReason() ?? false }, async () => {
  const foreign = join(work, 'foreign')
  mkdirSync(foreign)
  writeFileSync(join(foreign, 'keep.txt'), 'not ours\n')
  const script = join(ROOT, 'deploy', 'install.sh')
  const refused = await run('bash', [script, 'build', foreign])
  assert.notEqual(refused.code, 0)
  assert.match(refused.stderr, /install\.sh: build: .*foreign is not empty and was not laid out by this script/)
  assert.equal(readFileSync(join(foreign, 'keep.txt'), 'utf8'), 'not ours\n')

  const itself = await run('bash', [script, 'build', ROOT])
  assert.notEqual(itself.code, 0)
  assert.match(itself.stderr, /holds the repository itself/)
  const inside = await run('bash', [script, 'build', join(ROOT, 'src', 'x')])
  assert.notEqual(inside.code, 0)
  assert.match(inside.stderr, /inside what is copied/)
  assert.ok(!existsSync(join(ROOT, 'src', 'x')), 'nothing was made inside the repository')

  // A source tree without its dev dependencies cannot build the pages: it stops, saying so.
  const bare = join(work, 'bare')
  copyBuildContext(bare)
  const noVite = await run('bash', [join(bare, 'deploy', 'install.sh'), 'build', join(work, 'bare-app')])
  assert.notEqual(noVite.code, 0)
  assert.match(noVite.stderr, /Vite is not installed \(a dev dependency\)/)
  assert.match(noVite.stderr, /install\.sh: build: the web pages could not be built \(above\); they need the repository's dev dependencies: run npm ci in /)
  assert.ok(!existsSync(join(work, 'bare-app', 'node_modules')), 'nothing installed after the failure')

  const usage = await run('bash', [script, 'build'])
  assert.notEqual(usage.code, 0)
  assert.match(usage.stderr, /^install\.sh: usage: deploy\/install\.sh build <out-dir> \| deploy\/install\.sh user\n$/)
})

test('npm ci --omit=dev && npm start in a checkout: it serves, and the pages answer 503 saying they need the dev dependencies', { timeout: 120_000, skip: skipReason() ?? false }, async (t) => {
  if (!existsSync(join(app, 'node_modules'))) return t.skip('needs the app the first test lays out')
  // A checkout with production dependencies only: the app's files and node_modules, the
  // pages' sources, no dist/ (git-ignored) and no Vite.
  const checkout = join(work, 'checkout')
  cpSync(app, checkout, { recursive: true })
  cpSync(join(context, 'web'), join(checkout, 'web'), { recursive: true })
  rmSync(join(checkout, 'dist'), { recursive: true, force: true })
  assert.ok(!existsSync(join(checkout, 'node_modules', 'vite')) && !existsSync(join(checkout, 'node_modules', '.bin', 'node')))

  const db = await freshDatabaseEnv()
  fresh.push(db)
  const server = await startServer({ ...db.env, PATH: env.PATH! }, { command: { file: 'npm', args: ['start'], cwd: checkout }, timeoutMs: 60_000 })
  assert.equal((await fetch(`${server.url}/healthz`)).status, 200)
  const page = await fetch(`${server.url}/approve?ref=0123456789abcdef`)
  assert.equal(page.status, 503)
  assert.match(await page.text(), /npm run build:web/)
  assert.match(server.stderr(), /kns: the web pages could not be built \(the pages need building and Vite is not installed \(a dev dependency\)/)
  await server.stop()
})

const isRoot = process.getuid?.() === 0
const hasUseradd = spawnSync('useradd', ['--help'], { stdio: 'ignore' }).status === 0

test('install.sh user: the group and user kns (no login shell, home /var/lib/kns owned by it), again without change, a wrong KNS_UID refused', {
  skip: !isRoot ? 'useradd needs root (CI runs as root)' : !hasUseradd ? 'useradd is not installed' : false,
}, async () => {
  // A scratch root file system (DESTDIR): the machine's own users are not touched.
  const root = join(work, 'root')
  mkdirSync(join(root, 'etc'), { recursive: true })
  mkdirSync(join(root, 'usr', 'sbin'), { recursive: true })
  writeFileSync(join(root, 'usr', 'sbin', 'nologin'), '#!/bin/sh\nexit 1\n')
  chmodSync(join(root, 'usr', 'sbin', 'nologin'), 0o755)
  for (const [file, line] of [['passwd', 'root:x:0:0:root:/root:/bin/sh'], ['group', 'root:x:0:'], ['shadow', 'root:*:19000:0:99999:7:::'], ['gshadow', 'root:*::']]) {
    writeFileSync(join(root, 'etc', file!), `${line}\n`, { mode: file!.includes('shadow') ? 0o640 : 0o644 })
  }
  const script = join(ROOT, 'deploy', 'install.sh')
  const userEnv = { ...env, DESTDIR: root, KNS_UID: '10001' }
  const first = await run('bash', [script, 'user'], { env: userEnv })
  assert.equal(first.code, 0, first.stderr)
  assert.match(first.stdout, /created the group kns[\s\S]*created the user kns/)
  const passwd = () => readFileSync(join(root, 'etc', 'passwd'), 'utf8')
  assert.match(passwd(), /^kns:x:10001:10001:KNS server:\/var\/lib\/kns:\/usr\/sbin\/nologin$/m)
  assert.match(readFileSync(join(root, 'etc', 'group'), 'utf8'), /^kns:x:10001:$/m)
  const home = statSync(join(root, 'var', 'lib', 'kns'))
  assert.deepEqual([home.uid, home.gid, home.mode & 0o777], [10001, 10001, 0o750])

  const again = await run('bash', [script, 'user'], { env: userEnv })
  assert.equal(again.code, 0, again.stderr)
  assert.equal(again.stdout, '', 'nothing to create the second time')
  assert.equal(passwd().match(/^kns:/gm)?.length, 1)

  const other = await run('bash', [script, 'user'], { env: { ...userEnv, KNS_UID: '10002' } })
  assert.notEqual(other.code, 0)
  assert.match(other.stderr, /kns exists with uid 10001 and gid 10001, not KNS_UID=10002/)
  assert.deepEqual(readdirSync(join(root, 'var', 'lib')), ['kns'])
})
