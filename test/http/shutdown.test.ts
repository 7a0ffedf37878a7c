/**
 * A request that arrives while the server closes (on a keep-alive connection a load balancer
 * holds open: its health check has not seen the node go yet) is answered 503 in the error
 * shape with Retry-After, its request ID echoed and the connection closed, so the balancer's
 * client retries elsewhere. Found by the cluster's rolling restart: Fastify's own answer had
 * no Retry-After and another shape.
 */
import assert from 'node:assert/strict'
import { connect } from 'node:net'
import { test } from 'node:test'
import { startHarness } from '../helpers.ts'
import { randomPhone, sleep } from '../support/kns.ts'

test('a request arriving while the server closes: 503 OVERLOADED with Retry-After, the connection closed; the one in flight finishes', async () => {
  const h = await startHarness()
  let closed = false
  try {
    await h.app.listen({ port: 0, host: '127.0.0.1' })
    const { port } = h.app.server.address() as { port: number }
    const socket = connect(port, '127.0.0.1')
    let received = ''
    socket.setEncoding('utf8').on('data', (chunk: string) => { received += chunk })
    const ended = new Promise<void>((resolve) => socket.on('close', () => resolve()))
    await new Promise<void>((resolve) => socket.once('connect', () => resolve()))
    // A registration in flight (its body half sent): the connection is busy when the close begins.
    const body = JSON.stringify({ email: 'closing@example.com', phoneNumber: randomPhone() })
    socket.write(`POST /numsys/register-user-login HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body.slice(0, 10)}`)
    await sleep(100)
    const closing = h.app.close()
    closed = true
    await sleep(100)
    // The rest of its body, and the next request on the same connection.
    socket.write(`${body.slice(10)}GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nx-request-id: closing-probe-1\r\n\r\n`)
    await Promise.race([ended, sleep(5000).then(() => { throw new Error(`the connection was not closed; received: ${received}`) })])
    await closing

    const responses = received.split(/(?=HTTP\/1\.1 )/)
    assert.equal(responses.length, 2, received)
    assert.match(responses[0]!, /^HTTP\/1\.1 200 /, 'the registration in flight finished')
    const [head, json] = responses[1]!.split('\r\n\r\n')
    assert.match(head!, /^HTTP\/1\.1 503 /)
    assert.match(head!, /\r\nretry-after: 1\r\n/i)
    assert.match(head!, /\r\nconnection: close\r\n/i)
    assert.match(head!, /\r\nx-request-id: closing-probe-1\r\n/i)
    const error = JSON.parse(json!) as Record<string, unknown>
    assert.deepEqual([error.success, error.code, error.requestId], [false, 'OVERLOADED', 'closing-probe-1'])
    assert.match(String(error.message), /shutting down/)
  } finally {
    if (!closed) await h.app.close()
    await h.close()
  }
})
