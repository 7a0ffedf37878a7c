/**
 * What Node's HTTP parser and Fastify answer below the routes, over real sockets: every error
 * in the service's one shape, and slow clients ended within the configured timeouts.
 */
import assert from 'node:assert/strict'
import { connect } from 'node:net'
import { after, before, test } from 'node:test'
import { startHarness, type Harness } from '../helpers.ts'

const REQUEST_TIMEOUT_MS = 1500
const HEADERS_TIMEOUT_MS = 800

let h: Harness
let port: number

before(async () => {
  h = await startHarness({ REQUEST_TIMEOUT_MS: String(REQUEST_TIMEOUT_MS), HEADERS_TIMEOUT_MS: String(HEADERS_TIMEOUT_MS) })
  await h.app.listen({ port: 0, host: '127.0.0.1' })
  port = (h.app.server.address() as { port: number }).port
})
after(async () => { await h.close() })

interface RawAnswer { status: number; headers: string; body: string; ms: number }

/** Sends `parts` (pausing `pauseMs` between them) and reads until the server closes. */
function raw(parts: string[], pauseMs = 0): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const started = performance.now()
    let out = ''
    const socket = connect(port, '127.0.0.1', async () => {
      for (const part of parts) {
        socket.write(part)
        if (pauseMs > 0) await new Promise((r) => setTimeout(r, pauseMs))
      }
    })
    socket.setEncoding('utf8').on('data', (chunk: string) => { out += chunk })
    socket.on('error', () => {})
    const guard = setTimeout(() => { socket.destroy(); reject(new Error(`no answer in 10 s; got ${JSON.stringify(out)}`)) }, 10_000)
    socket.on('close', () => {
      clearTimeout(guard)
      const split = out.indexOf('\r\n\r\n')
      resolve({ status: Number(out.slice(9, 12)), headers: out.slice(0, split), body: out.slice(split + 4), ms: performance.now() - started })
    })
  })
}

function assertShape(answer: RawAnswer, status: number, code: string): void {
  assert.equal(answer.status, status, `${answer.headers}\n${answer.body}`)
  assert.match(answer.headers, /content-type: application\/json/i)
  const body = JSON.parse(answer.body) as Record<string, unknown>
  assert.equal(body.success, false)
  assert.equal(body.code, code)
  assert.equal(typeof body.message, 'string')
  assert.equal(body.error, body.message)
  assert.equal(typeof body.requestId, 'string')
}

test('malformed HTTP: 400 INVALID_REQUEST in the error shape', async () => {
  assertShape(await raw(['GARBAGE\r\n\r\n']), 400, 'INVALID_REQUEST')
  assertShape(await raw(['GET / HTTP/1.1\r\nHost: x\r\nContent-Length: nope\r\n\r\n']), 400, 'INVALID_REQUEST')
})

test('oversized headers: 431 HEADERS_TOO_LARGE in the error shape', async () => {
  assertShape(await raw([`GET /healthz HTTP/1.1\r\nHost: x\r\nX-Pad: ${'a'.repeat(20_000)}\r\n\r\n`]), 431, 'HEADERS_TOO_LARGE')
})

test('a URL that does not decode: 400 INVALID_REQUEST in the error shape', async () => {
  assertShape(await raw(['GET /assets/%E0%A4%A HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n']), 400, 'INVALID_REQUEST')
})

test('no Host header: 400 INVALID_REQUEST naming it, in the error shape', async () => {
  const answer = await raw(['GET /healthz HTTP/1.1\r\nConnection: close\r\n\r\n'])
  assertShape(answer, 400, 'INVALID_REQUEST')
  assert.match(answer.body, /Host header/)
  // HTTP/1.0 may omit it.
  assert.equal((await raw(['GET /healthz HTTP/1.0\r\n\r\n'])).status, 200)
})

test('wrong method over the wire: 405 with Allow', async () => {
  const answer = await raw(['DELETE /numsys/register-user-login HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n'])
  assertShape(answer, 405, 'METHOD_NOT_ALLOWED')
  assert.match(answer.headers, /^allow: POST$/im)
})

test(`a body that stops arriving: 408 REQUEST_TIMEOUT within REQUEST_TIMEOUT_MS (${REQUEST_TIMEOUT_MS} ms) plus slack`, async () => {
  const answer = await raw(['POST /numsys/register-user-login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n', '{"a"'], 100)
  assertShape(answer, 408, 'REQUEST_TIMEOUT')
  assert.ok(answer.ms < REQUEST_TIMEOUT_MS + 3000, `${Math.round(answer.ms)} ms`)
})

test(`idle and half-sent headers: closed within HEADERS_TIMEOUT_MS (${HEADERS_TIMEOUT_MS} ms) plus slack`, async () => {
  for (const parts of [[], ['GET /healthz HTTP/1.1\r\nHost: x\r\n']]) {
    const answer = await raw(parts)
    assertShape(answer, 408, 'REQUEST_TIMEOUT')
    assert.ok(answer.ms < HEADERS_TIMEOUT_MS + 3000, `${Math.round(answer.ms)} ms`)
  }
})
