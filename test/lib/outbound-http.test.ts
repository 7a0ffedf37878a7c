/**
 * The guarded outbound client: https only, no private/loopback/link-local/metadata address
 * (literal, or resolved at connect time), deadline, body cap, no redirect followed.
 */
import { after, before, describe, test } from 'node:test'
import assert from 'node:assert/strict'
import type { LookupAddress } from 'node:dns'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { checkOutboundUrl, checkOutboundUrlResolved, isPublicAddress, outboundRequest, OutboundRefusedError, type OutboundOptions } from '../../src/lib/outbound-http.ts'

let server: Server
let port: number
let connections = 0
const hits: string[] = []

before(async () => {
  server = createServer((req, res) => {
    hits.push(req.url ?? '')
    if (req.url === '/redirect') return void res.writeHead(302, { location: `http://127.0.0.1:${port}/target` }).end()
    if (req.url === '/big') return void res.end(Buffer.alloc(1024 * 1024, 97))
    if (req.url === '/hang') return // never answers
    res.writeHead(200).end('ok')
  })
  server.on('connection', () => { connections++ })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  port = (server.address() as AddressInfo).port
})
after(async () => {
  server.closeAllConnections()
  await new Promise((resolve) => server.close(resolve))
})

/** A resolver that answers `addresses` for every name, as a DNS server under an attacker's control would. */
function fakeDns(...addresses: string[]): OutboundOptions['lookup'] {
  return ((_hostname: string, _options: unknown, callback: (err: null, addresses: LookupAddress[]) => void) => {
    callback(null, addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 })))
  }) as unknown as OutboundOptions['lookup']
}

const strict = (lookup?: OutboundOptions['lookup']): OutboundOptions => ({ allowPrivate: false, timeoutMs: 2000, maxResponseBytes: 1024, ...(lookup ? { lookup } : {}) })
const lax: OutboundOptions = { allowPrivate: true, timeoutMs: 500, maxResponseBytes: 1024 }
const post = { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' }

describe('which addresses are public', () => {
  test('private, loopback, link-local (metadata), shared, reserved, mapped and NAT64 forms are not', () => {
    for (const address of ['127.0.0.1', '10.0.0.1', '172.16.5.4', '192.168.1.1', '169.254.169.254', '100.64.0.1', '0.0.0.0', '224.0.0.1',
      '255.255.255.255', '::1', '::', '::127.0.0.1', '::ffff:0:7f00:1', 'fe80::1', 'fd00:ec2::254', 'fc00::1', '::ffff:127.0.0.1', '::ffff:7f00:1', '64:ff9b::a9fe:a9fe', 'not an ip']) {
      assert.equal(isPublicAddress(address), false, address)
    }
    for (const address of ['8.8.8.8', '1.1.1.1', '2606:4700:4700::1111', '::ffff:8.8.8.8']) assert.equal(isPublicAddress(address), true, address)
  })

  test('URLs: https only, no credentials, no private literal in any spelling', () => {
    for (const url of ['http://hooks.example.com/', 'ftp://hooks.example.com/', 'https://u:p@hooks.example.com/', 'https://127.0.0.1/', 'https://[::1]/',
      'https://0x7f.1/', 'https://2130706433/', 'https://169.254.169.254/latest/meta-data/', 'https://[::ffff:a9fe:a9fe]/', 'not a url']) {
      assert.throws(() => checkOutboundUrl(url, false), OutboundRefusedError, url)
    }
    assert.equal(checkOutboundUrl('https://hooks.example.com/kns', false).href, 'https://hooks.example.com/kns')
    assert.equal(checkOutboundUrl('http://127.0.0.1:8080/', true).href, 'http://127.0.0.1:8080/')
  })
})

describe('checked at connect time', () => {
  test('a name that resolves to a loopback address is refused before any connection', async () => {
    const before = connections
    await assert.rejects(outboundRequest(`https://hooks.example.com:${port}/`, post, strict(fakeDns('127.0.0.1'))),
      (err: unknown) => err instanceof OutboundRefusedError && err.code === 'ADDRESS_NOT_ALLOWED' &&
        err.message === `the address of hooks.example.com is not allowed (only public addresses are)`, 'the resolved address is never named')
    assert.equal(connections, before, 'no connection was made')
  })

  test('a name that resolves to a public and a metadata address is refused (no picking the safe one)', async () => {
    await assert.rejects(outboundRequest('https://hooks.example.com/', post, strict(fakeDns('93.184.216.34', '169.254.169.254'))),
      (err: unknown) => err instanceof OutboundRefusedError && !/169\.254|93\.184/.test(err.message))
  })

  test('localhost by name is refused with the real resolver', async () => {
    await assert.rejects(outboundRequest(`https://localhost:${port}/`, post, strict()), OutboundRefusedError)
  })
})

describe('redirects (x5u follows at most 2)', () => {
  test('a redirect to a refused address is refused before it connects; each hop is checked', async () => {
    // 127.0.0.1 stands in for a public address here; 127.0.0.2 for the internal one.
    let internalConnections = 0
    const internal = createServer((_req, res) => res.end('secret'))
    internal.on('connection', () => { internalConnections++ })
    await new Promise<void>((resolve) => internal.listen(0, '127.0.0.2', resolve))
    const internalUrl = `http://127.0.0.2:${(internal.address() as AddressInfo).port}/latest/meta-data`
    const redirecting = createServer((_req, res) => res.writeHead(302, { location: internalUrl }).end())
    await new Promise<void>((resolve) => redirecting.listen(0, '127.0.0.1', resolve))
    try {
      const options: OutboundOptions = { allowPrivate: false, allowHttp: true, addressAllowed: (a) => a === '127.0.0.1', maxRedirects: 2, timeoutMs: 2000, maxResponseBytes: 1024 }
      await assert.rejects(outboundRequest(`http://127.0.0.1:${(redirecting.address() as AddressInfo).port}/cert.pem`, { method: 'GET', headers: {} }, options),
        (err: unknown) => err instanceof OutboundRefusedError && /127\.0\.0\.2/.test(err.message))
      assert.equal(internalConnections, 0)
    } finally {
      redirecting.closeAllConnections()
      internal.closeAllConnections()
      await new Promise((resolve) => redirecting.close(resolve))
      await new Promise((resolve) => internal.close(resolve))
    }
  })

  test('redirects are followed up to the limit, then the 3xx is the answer', async () => {
    hits.length = 0
    const followed = await outboundRequest(`http://127.0.0.1:${port}/redirect`, post, { ...lax, maxRedirects: 2 })
    assert.equal(followed.status, 200)
    assert.deepEqual(hits, ['/redirect', '/target'])
  })
})

describe('answers (WEBHOOK_ALLOW_PRIVATE, against a local server)', () => {
  test('a redirect is an answer, never followed', async () => {
    hits.length = 0
    const res = await outboundRequest(`http://127.0.0.1:${port}/redirect`, post, lax)
    assert.equal(res.status, 302)
    assert.deepEqual(hits, ['/redirect'], 'the target was not requested')
  })

  test('a long body is cut at the cap', async () => {
    const res = await outboundRequest(`http://127.0.0.1:${port}/big`, post, lax)
    assert.equal(res.status, 200)
    assert.equal(res.body.length, 1024)
    assert.equal(res.truncated, true)
  })

  test('an endpoint that never answers times out at the deadline', async () => {
    const started = performance.now()
    await assert.rejects(outboundRequest(`http://127.0.0.1:${port}/hang`, post, lax), (err: Error) => err.name === 'TimeoutError')
    const took = performance.now() - started
    assert.ok(took >= 450 && took < 5000, `timed out after ${took} ms`)
  })
})

describe('a pooled connection the endpoint closed as it was reused', () => {
  /** Answers the first request of each connection (keep-alive) and resets the connection on any later one, as an idle timeout racing a reuse does. */
  async function resettingServer(): Promise<{ url: string; received: number; connections: number; close(): Promise<void> }> {
    const state = { url: '', received: 0, connections: 0, close: async () => {} }
    const perSocket = new WeakMap<object, number>()
    const resetting = createServer((req, res) => {
      state.received++
      const seen = (perSocket.get(req.socket) ?? 0) + 1
      perSocket.set(req.socket, seen)
      if (seen > 1) return void req.socket.destroy()
      res.writeHead(200, { connection: 'keep-alive' }).end('ok')
    })
    resetting.on('connection', () => { state.connections++ })
    await new Promise<void>((resolve) => resetting.listen(0, '127.0.0.1', resolve))
    state.url = `http://127.0.0.1:${(resetting.address() as AddressInfo).port}/sms`
    state.close = async () => {
      resetting.closeAllConnections()
      await new Promise((resolve) => resetting.close(resolve))
    }
    return state
  }

  test('the request goes again on a new connection, and is answered', async () => {
    const endpoint = await resettingServer()
    try {
      assert.equal((await outboundRequest(endpoint.url, post, lax)).status, 200)
      // The pooled connection is reused and reset: before the fix, this was an ECONNRESET (a login code lost).
      assert.equal((await outboundRequest(endpoint.url, post, lax)).status, 200)
      assert.equal(endpoint.connections, 2, 'the second answer came on a new connection')
      assert.equal(endpoint.received, 3, 'the reset request, then its repeat')
    } finally {
      await endpoint.close()
    }
  })

  test('a new connection reset before an answer is an error, not repeated', async () => {
    const hangUp = createServer((req) => { req.socket.destroy() })
    let received = 0
    hangUp.on('request', () => { received++ })
    await new Promise<void>((resolve) => hangUp.listen(0, '127.0.0.1', resolve))
    try {
      const url = `http://127.0.0.1:${(hangUp.address() as AddressInfo).port}/sms`
      await assert.rejects(outboundRequest(url, post, lax), (err: NodeJS.ErrnoException) => err.code === 'ECONNRESET')
      assert.equal(received, 1)
    } finally {
      hangUp.closeAllConnections()
      await new Promise((resolve) => hangUp.close(resolve))
    }
  })
})

describe('checkOutboundUrlResolved (saving a URL): the connect-time rule applied to what the name resolves to now', () => {
  const failingDns = ((_host: string, _options: unknown, callback: (err: Error) => void) => {
    callback(Object.assign(new Error('getaddrinfo ENOTFOUND'), { code: 'ENOTFOUND' }))
  }) as unknown as OutboundOptions['lookup']

  test('a name resolving to a loopback or private address (any of its addresses) is refused; a public one passes', async () => {
    for (const addresses of [['127.0.0.1'], ['93.184.215.14', '10.0.0.7'], ['::1']]) {
      await assert.rejects(checkOutboundUrlResolved('https://hooks.example.com/kns', { allowPrivate: false, lookup: fakeDns(...addresses)! }),
        (err: unknown) => err instanceof OutboundRefusedError && err.code === 'ADDRESS_NOT_ALLOWED' && /the address of hooks\.example\.com is not allowed/.test(err.message))
    }
    assert.equal((await checkOutboundUrlResolved('https://hooks.example.com/kns', { allowPrivate: false, lookup: fakeDns('93.184.215.14')! })).href, 'https://hooks.example.com/kns')
  })

  test('the real resolver: https://localhost is refused', async () => {
    await assert.rejects(checkOutboundUrlResolved('https://localhost/hook', { allowPrivate: false }), /the address of localhost is not allowed/)
  })

  test('a name that does not resolve now is accepted (the connect-time check guards it); allowPrivate resolves nothing', async () => {
    assert.equal((await checkOutboundUrlResolved('https://not-yet.example.com/', { allowPrivate: false, lookup: failingDns! })).hostname, 'not-yet.example.com')
    assert.equal((await checkOutboundUrlResolved('http://localhost:9/', { allowPrivate: true, lookup: fakeDns('127.0.0.1')! })).hostname, 'localhost')
  })

  test('the static rules still come first', async () => {
    await assert.rejects(checkOutboundUrlResolved('http://hooks.example.com/', { allowPrivate: false, lookup: fakeDns('93.184.215.14')! }), /only https URLs are allowed/)
    await assert.rejects(checkOutboundUrlResolved('https://169.254.169.254/', { allowPrivate: false, lookup: fakeDns('93.184.215.14')! }), /169\.254\.169\.254 is a loopback/)
  })
})
