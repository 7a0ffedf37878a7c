/**
 * `kns serve` with SIP_LISTEN: the SIP interface starts beside HTTP (UDP and TCP on the given
 * port), says so in the log, counts its requests in /metrics, and stops on SIGTERM; without
 * SIP_LISTEN nothing listens.
 */
import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import { freshDatabaseEnv, type TestEnv } from '../helpers.ts'
import { freePort, killAll, startServer } from '../support/process.ts'
import { sipOptionsOverUdp } from '../support/sip-options.ts'

let fresh: TestEnv

// Each start gets a new port: one public URL keeps them the same service.
before(async () => { fresh = await freshDatabaseEnv({ PUBLIC_BASE_URL: 'https://kns.example.com' }) })
after(async () => {
  await killAll()
  await fresh?.cleanup()
})

test('SIP_LISTEN: OPTIONS answered 200 over UDP, the start logged, requests in /metrics; SIGTERM stops it', async () => {
  const sipPort = await freePort()
  const server = await startServer({ ...fresh.env, LOG_LEVEL: 'info', SIP_LISTEN: `127.0.0.1:${sipPort}`, SIP_TRUSTED_SOURCES: '127.0.0.1' })
  const answer = await sipOptionsOverUdp(sipPort)
  assert.match(answer ?? '', /^SIP\/2\.0 200 OK\r\n/)
  assert.match(server.stdout() + server.stderr(), /SIP redirect interface listening/)
  assert.match(server.stdout() + server.stderr(), /SIP_SIGNING_KEY is unset/)
  const metrics = await (await fetch(`${server.url}/metrics`)).text()
  assert.match(metrics, /kns_sip_requests_total\{method="OPTIONS",status="200",transport="udp"\} 1/)
  const exit = await server.stop()
  assert.equal(exit.code, 0)
})

test('without SIP_LISTEN no SIP port is open; SIP_LISTEN without SIP_TRUSTED_SOURCES stops the start', async () => {
  const sipPort = await freePort()
  const server = await startServer(fresh.env)
  assert.equal(await sipOptionsOverUdp(sipPort), undefined)
  await server.stop()
  await assert.rejects(startServer({ ...fresh.env, SIP_LISTEN: `127.0.0.1:${sipPort}` }, { timeoutMs: 10_000 }), /SIP_TRUSTED_SOURCES is empty/)
})
