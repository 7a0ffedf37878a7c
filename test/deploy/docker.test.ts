/**
 * deploy/docker/Dockerfile, checked without a Docker engine (our machines cannot pull base
 * images; docs/deploy.md): its stages lay the image out through deploy/install.sh, which
 * test/deploy/install.test.ts runs on the same build context; it runs as kns, checks its health
 * through a file that layout has, and no secret reaches a layer. Nothing here builds the image.
 */
import assert from 'node:assert/strict'
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { test } from 'node:test'
import { dockerfileInstructions, dockerignorePatterns, isIgnored, type Instruction } from '../support/docker-context.ts'
import { ROOT } from '../support/process.ts'

const DOCKERFILE = join(ROOT, 'deploy', 'docker', 'Dockerfile')
const instructions = dockerfileInstructions(DOCKERFILE)

/** The instructions of each stage, by its name. */
function stages(): Map<string, Instruction[]> {
  const byName = new Map<string, Instruction[]>()
  let current: Instruction[] | undefined
  for (const instruction of instructions) {
    if (instruction.keyword === 'FROM') {
      const name = /\bAS (\S+)$/i.exec(instruction.args)?.[1]
      assert.ok(name !== undefined, `every stage is named: FROM ${instruction.args}`)
      current = []
      byName.set(name, current)
    } else current?.push(instruction)
  }
  return byName
}

/** The top-level names deploy/install.sh copies into the app (its `runtime` list), and dist/web. */
function installedTopLevel(): string[] {
  const list = /^runtime=\(([^)]*)\)/m.exec(readFileSync(join(ROOT, 'deploy', 'install.sh'), 'utf8'))
  assert.ok(list !== null, 'install.sh names what it copies in runtime=(...)')
  return [...list[1]!.trim().split(/\s+/), 'dist']
}

/** A path of the image under /opt/kns that install.sh puts there from the repository. */
function assertInLayout(imagePath: string): void {
  const inApp = imagePath.replace(/^\/opt\/kns\//, '')
  assert.notEqual(inApp, imagePath, `${imagePath} is under /opt/kns, where install.sh lays the app out`)
  assert.ok(installedTopLevel().includes(inApp.split('/')[0]!), `install.sh copies ${inApp.split('/')[0]}/`)
  assert.ok(existsSync(join(ROOT, inApp)), `${inApp} exists in the repository`)
}

test('the Dockerfile: a pinned Node 24 slim base, a build stage and a runtime stage both through deploy/install.sh', () => {
  const base = instructions.find((i) => i.keyword === 'ARG' && i.args.startsWith('NODE_IMAGE='))
  assert.ok(base !== undefined, 'the base image is the ARG NODE_IMAGE')
  assert.match(base.args, /^NODE_IMAGE=node:24-[a-z]+-slim$/, 'Node 24, slim, the Debian release named in the tag')
  const byName = stages()
  assert.deepEqual([...byName.keys()], ['build', 'runtime'])
  for (const from of instructions.filter((i) => i.keyword === 'FROM')) assert.match(from.args, /^\$\{NODE_IMAGE\} AS /)

  const build = byName.get('build')!
  const runs = build.filter((i) => i.keyword === 'RUN').map((i) => i.args)
  const npmCi = runs.findIndex((run) => /^npm ci\b/.test(run))
  const install = runs.findIndex((run) => run === 'deploy/install.sh build /opt/kns')
  assert.ok(npmCi >= 0 && install > npmCi, `the build stage installs the dev dependencies (the pages need Vite), then runs install.sh build: ${runs.join(' | ')}`)
  for (const copy of build.filter((i) => i.keyword === 'COPY')) {
    for (const source of copy.args.split(' ').slice(0, -1)) assert.ok(source === '.' || existsSync(join(ROOT, source)), `COPY ${source} exists`)
  }

  const runtime = byName.get('runtime')!
  const user = runtime.find((i) => i.keyword === 'RUN' && /\buser$/.test(i.args))
  assert.ok(user !== undefined, 'the runtime stage makes its user with install.sh user')
  assert.match(user.args, /--mount=type=bind,from=build,source=\/src\/deploy\/install\.sh,target=(\S+) KNS_UID=10001 bash \1 user$/)
  const copies = runtime.filter((i) => i.keyword === 'COPY').map((i) => i.args)
  assert.deepEqual(copies, ['--from=build /opt/kns /opt/kns'], 'the runtime stage takes the laid-out app and nothing else')
})

test('the image runs as kns, serves on 0.0.0.0:8080, checks /healthz through a file of the layout, stops on SIGTERM', () => {
  const runtime = stages().get('runtime')!
  const only = (keyword: string) => {
    const found = runtime.filter((i) => i.keyword === keyword)
    assert.equal(found.length, 1, `one ${keyword}`)
    return found[0]!.args
  }
  const user = only('USER')
  assert.equal(user, 'kns', 'the user install.sh user creates')
  assert.match(readFileSync(join(ROOT, 'deploy', 'install.sh'), 'utf8'), /useradd --system .* kns\n/)

  const env = only('ENV')
  assert.match(env, /\bHOST=0\.0\.0\.0\b/)
  const port = /\bPORT=(\d+)\b/.exec(env)?.[1]
  assert.equal(only('EXPOSE'), port)
  assert.match(env, /\bDATA_DIR=\/var\/lib\/kns\b/, 'the database directory is kns\'s home, which install.sh user makes')
  assert.equal(only('STOPSIGNAL'), 'SIGTERM')

  const healthcheck = /^(?:--\S+ )*CMD (\[.*\])$/.exec(only('HEALTHCHECK'))
  assert.ok(healthcheck !== null, 'HEALTHCHECK CMD in exec form')
  const check = JSON.parse(healthcheck[1]!) as string[]
  assert.equal(check[0], 'node')
  assertInLayout(check[1]!)
  assert.match(readFileSync(join(ROOT, check[1]!.replace('/opt/kns/', '')), 'utf8'), /\/healthz/)

  const entrypoint = JSON.parse(only('ENTRYPOINT')) as string[]
  assert.equal(entrypoint[0], 'node')
  assertInLayout(entrypoint[1]!)
  assert.equal(entrypoint[1], '/opt/kns/bin/kns.js')
  assert.deepEqual(JSON.parse(only('CMD')), ['serve'])
})

test('no secret in any layer: no ENV or ARG carries one, and .dockerignore keeps secrets, history and build output out of the context', () => {
  const secretName = /SECRET|PASSWORD|PASSWD|TOKEN|API_?KEY|PRIVATE|DATABASE_URL|REDIS_URL|SMPP_URL|SMS_HTTP_URL/i
  for (const instruction of instructions.filter((i) => i.keyword === 'ENV' || i.keyword === 'ARG')) {
    const names = [...instruction.args.matchAll(/(?:^|\s)([A-Za-z_][A-Za-z0-9_]*)(?==|\s|$)/g)].map((m) => m[1]!)
    for (const name of names) assert.doesNotMatch(name, secretName, `${instruction.keyword} ${instruction.args}`)
  }
  for (const instruction of instructions) assert.doesNotMatch(instruction.args, /KNS_SECRET/, `${instruction.keyword} ${instruction.args}`)

  const patterns = dockerignorePatterns()
  for (const path of ['.env', 'kns.env', 'secrets/kns.env', 'secrets/tls.pem', '.git', 'node_modules/vite/package.json', 'web/node_modules/x', 'dist/web/index.html', 'data/kns.db']) {
    assert.ok(isIgnored(path, patterns), `${path} is not sent to the build`)
  }
  // What the build stage needs (test/deploy/install.test.ts builds from exactly this context).
  for (const path of ['package.json', 'package-lock.json', 'LICENSE', 'tsconfig.json', 'bin/kns.js', 'bin/healthcheck.js', 'src/cli/main.ts', 'src/contract/failure-codes.ts', 'web/build.ts', 'web/vite.config.ts', 'deploy/install.sh']) {
    assert.ok(!isIgnored(path, patterns), `${path} is in the build context`)
  }
})
