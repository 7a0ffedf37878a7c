/**
 * METRICS_LISTEN (issue 33, item 2): /metrics on a listener of its own, and then not on the
 * public port (404 there), for one process and under `kns serve --workers` (the primary serves
 * the workers' sum). Without it, /metrics stays on the public port. The setting's forms are
 * checked in test/config/metrics-listen.test.ts.
 */
import assert from 'node:assert/strict'
import { createServer } from 'node:net'
import { after, test } from 'node:test'
import { freshDatabaseEnv, type TestEnv } from '../helpers.ts'
import { sampleValue } from '../support/metrics.ts'
import { freePort, killAll, runKns, sleep, startServer } from '../support/process.ts'

const envs: TestEnv[] = []
after(async () => {
  await killAll()
  for (const e of envs) await e.cleanup()
})

async function fresh(extra: Record<string, string> = {}): Promise<TestEnv> {
  const env = await freshDatabaseEnv(extra)
  envs.push(env)
  return env
}

test('METRICS_LISTEN set: /metrics answers there only (404 on the public port); nothing else is served there', async () => {
  const metricsPort = await freePort()
  const { env } = await fresh({ METRICS_LISTEN: String(metricsPort), LOG_LEVEL: 'info' })
  const server = await startServer(env, { timeoutMs: 120_000 })
  const metrics = `http://127.0.0.1:${metricsPort}/metrics`
  assert.equal((await fetch(`${server.url}/readyz`)).status, 200)
  const publicScrape = await fetch(`${server.url}/metrics`)
  assert.equal(publicScrape.status, 404)
  assert.equal((await publicScrape.json() as { code: string }).code, 'NOT_FOUND', 'the service\'s error shape, as any unknown path')
  const scrape = await fetch(metrics)
  assert.equal(scrape.status, 200)
  assert.match(String(scrape.headers.get('content-type')), /^text\/plain; version=0\.0\.4/)
  const text = await scrape.text()
  // The public port's requests are counted there (the readyz above).
  assert.ok((sampleValue(text, 'kns_http_request_duration_seconds_count', { method: 'GET', route: '/readyz', status: '200' }) ?? 0) >= 1, text.slice(0, 2000))
  assert.notEqual(sampleValue(text, 'kns_login_codes_sent_total'), undefined)
  assert.equal((await fetch(`http://127.0.0.1:${metricsPort}/healthz`)).status, 404)
  assert.equal((await fetch(`http://127.0.0.1:${metricsPort}/`)).status, 404)
  assert.equal((await fetch(metrics, { method: 'POST' })).status, 405)
  assert.match(server.stdout(), /"metrics":"127\.0\.0\.1:\d+".*METRICS_LISTEN only/)
  const exit = await server.stop()
  assert.equal(exit.code, 0, server.stderr())
  // Closed with the server.
  await assert.rejects(fetch(metrics))
})

test('METRICS_LISTEN unset: /metrics stays on the public port', async () => {
  const { env } = await fresh()
  const server = await startServer(env, { timeoutMs: 120_000 })
  const scrape = await fetch(`${server.url}/metrics`)
  assert.equal(scrape.status, 200)
  assert.match(await scrape.text(), /^# HELP kns_/m)
  await server.stop()
})

test('METRICS_LISTEN on an address in use: the server does not start, and says which setting', async () => {
  const taken = createServer()
  await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve))
  const port = (taken.address() as { port: number }).port
  try {
    const { env } = await fresh({ METRICS_LISTEN: `127.0.0.1:${port}` })
    const result = await runKns(['serve'], { ...env, PORT: String(await freePort()) }, { timeoutMs: 120_000 })
    assert.notEqual(result.code, 0)
    assert.match(result.stderr + result.stdout, new RegExp(`METRICS_LISTEN 127\\.0\\.0\\.1:${port}: in use`))
  } finally {
    await new Promise((resolve) => taken.close(resolve))
  }
})

test('--workers 2 with METRICS_LISTEN: the primary serves both workers\' sum there; the public port answers 404', { skip: process.env.DATABASE_URL ? false : 'PostgreSQL only (--workers)' }, async () => {
  const metricsPort = await freePort()
  const { env } = await fresh({ METRICS_LISTEN: `127.0.0.1:${metricsPort}` })
  const server = await startServer(env, { args: ['--workers', '2'], timeoutMs: 120_000 })
  const listening = () => (server.stdout().match(/"msg":"worker listening"/g) ?? []).length
  const deadline = Date.now() + 30_000
  while (listening() < 2 && Date.now() < deadline) await sleep(100)
  assert.equal(listening(), 2, server.stdout())
  for (let i = 0; i < 10; i++) assert.equal((await fetch(`${server.url}/readyz`, { headers: { connection: 'close' } })).status, 200)
  assert.equal((await fetch(`${server.url}/metrics`)).status, 404)
  const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text()
  assert.equal(sampleValue(text, 'kns_workers'), 2)
  assert.equal(sampleValue(text, 'kns_workers_reporting'), 2)
  // Both workers' counts, added up: every readyz above, whichever worker answered it.
  assert.ok((sampleValue(text, 'kns_http_request_duration_seconds_count', { method: 'GET', route: '/readyz', status: '200' }) ?? 0) >= 10, text.slice(0, 3000))
  const exit = await server.stop()
  assert.equal(exit.code, 0, server.stderr())
})
