/**
 * `kns serve` with SIP_LISTEN: the SIP interface starts beside HTTP (UDP and TCP on the given
 * port), says so in the log, counts its requests in /metrics, and stops on SIGTERM; without
 * SIP_LISTEN nothing listens.
 */
import assert from 'node:assert/strict'
import { createSocket } from 'node:dgram'
import { after, before, test } from 'node:test'
import { freshDatabaseEnv, type TestEnv } from '../helpers.ts'
import { freePort, killAll, startServer } from '../support/process.ts'

let fresh: TestEnv

// Each start gets a new port: one public URL keeps them the same service.
before(async () => { fresh = await freshDatabaseEnv({ PUBLIC_BASE_URL: 'https://kns.example.com' }) })
after(async () => {
  await killAll()
  await fresh?.cleanup()
})

function options(port: number, localPort: number): string {
  return [
    `OPTIONS sip:kns@127.0.0.1:${port} SIP/2.0`, `Via: SIP/2.0/UDP 127.0.0.1:${localPort};branch=z9hG4bK-serve`,
    'From: <sip:sbc@127.0.0.1>;tag=1', 'To: <sip:kns@127.0.0.1>', 'Call-ID: serve-1', 'CSeq: 1 OPTIONS', 'Content-Length: 0', '', '',
  ].join('\r\n')
}

async function ask(port: number): Promise<string | undefined> {
  const socket = createSocket('udp4')
  try {
    await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve))
    const answer = new Promise<string>((resolve) => socket.once('message', (m) => resolve(m.toString())))
    socket.send(options(port, socket.address().port), port, '127.0.0.1')
    return await Promise.race([answer, new Promise<undefined>((resolve) => setTimeout(() => resolve(undefined), 1500))])
  } finally {
    socket.close()
  }
}

test('SIP_LISTEN: OPTIONS answered 200 over UDP, the start logged, requests in /metrics; SIGTERM stops it', async () => {
  const sipPort = await freePort()
  const server = await startServer({ ...fresh.env, LOG_LEVEL: 'info', SIP_LISTEN: `127.0.0.1:${sipPort}`, SIP_TRUSTED_SOURCES: '127.0.0.1' })
  const answer = await ask(sipPort)
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
  assert.equal(await ask(sipPort), undefined)
  await server.stop()
  await assert.rejects(startServer({ ...fresh.env, SIP_LISTEN: `127.0.0.1:${sipPort}` }, { timeoutMs: 10_000 }), /SIP_TRUSTED_SOURCES is empty/)
})
