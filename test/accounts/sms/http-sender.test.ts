/**
 * The HTTP sender against a local node:http server playing Kannel's sendsms interface.
 */
import { after, before, test } from 'node:test'
import assert from 'node:assert/strict'
import { createServer, type IncomingMessage, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { HttpSmsSender, type HttpSmsSenderOptions } from '../../../src/accounts/sms/http-sender.ts'
import { deliveryError as refused } from './delivery-error.ts'

let server: Server
let base: string
const requests: Array<{ method: string; path: string; query: URLSearchParams; body: string; authorization: string | undefined }> = []

before(async () => {
  server = createServer((req: IncomingMessage, res) => {
    const url = new URL(req.url ?? '/', 'http://x')
    let body = ''
    req.on('data', (chunk: Buffer) => { body += chunk.toString() })
    req.on('end', () => {
      requests.push({ method: req.method ?? '', path: url.pathname, query: url.searchParams, body, authorization: req.headers.authorization })
      switch (url.pathname) {
        case '/cgi-bin/sendsms': return void res.writeHead(202).end('0: Accepted for delivery')
        case '/forbidden': return void res.writeHead(403).end('Authorization failed for sendsms')
        case '/busy': return void res.writeHead(503).end('Temporal failure, try again later.')
        case '/redirect': return void res.writeHead(302, { location: '/cgi-bin/sendsms' }).end()
        case '/echo': // a gateway that quotes the whole request back in its error
          return void res.writeHead(400).end(`bad request: ${req.url} ${decodeURIComponent(req.url ?? '')} ${url.searchParams.get('text')}`)
        case '/slow': return // never answers
        default: res.writeHead(404).end('no')
      }
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
})
after(async () => {
  server.closeAllConnections()
  await new Promise((resolve) => server.close(resolve))
})

const PARAMS = '?username=kns&password=s3cr3t-pw&from=KNS'
const code = { to: '+46701234567', text: 'Your KNS code is 493817 & more' }
const sender = (path: string, options: Partial<HttpSmsSenderOptions> = {}) => new HttpSmsSender({ url: `${base}${path}${PARAMS}`, timeoutMs: 1000, ...options })

const deliveryError = (expected: Parameters<typeof refused>[0]) => refused(expected, ['s3cr3t-pw', 's3cr3t', '493817', 'Your KNS code', code.to, '46701234567'])

test('GET with the URL\'s parameters and to/text added, URL-encoded; 202 "0: Accepted for delivery" resolves', async () => {
  const before = requests.length
  await sender('/cgi-bin/sendsms').send(code)
  const request = requests[before]!
  assert.equal(requests.length, before + 1)
  assert.equal(request.method, 'GET')
  assert.equal(request.path, '/cgi-bin/sendsms')
  assert.deepEqual(Object.fromEntries(request.query), { username: 'kns', password: 's3cr3t-pw', from: 'KNS', to: '+46701234567', text: code.text })
})

test('SMS_FROM replaces the URL\'s from; POST sends to/text as a form; user:pass@ goes as Basic authentication', async () => {
  const before = requests.length
  await new HttpSmsSender({ url: `http://u:p%40ss@${base.slice(7)}/cgi-bin/sendsms${PARAMS}`, method: 'POST', from: 'Other' }).send(code)
  const request = requests[before]!
  assert.equal(request.method, 'POST')
  assert.equal(request.query.get('from'), 'Other')
  assert.equal(request.query.get('to'), null)
  assert.deepEqual(Object.fromEntries(new URLSearchParams(request.body)), { to: code.to, text: code.text })
  assert.equal(request.authorization, `Basic ${Buffer.from('u:p@ss').toString('base64')}`)
})

test('403 rejects, not retryable, quoting the gateway\'s answer', async () => {
  await assert.rejects(sender('/forbidden').send(code), deliveryError({ reason: 'refused', retryable: false, message: /answered 403: Authorization failed/ }))
})

test('503 rejects, retryable', async () => {
  await assert.rejects(sender('/busy').send(code), deliveryError({ reason: 'throttled', retryable: true, message: /answered 503/ }))
})

test('a redirect is not followed', async () => {
  const before = requests.length
  await assert.rejects(sender('/redirect').send(code), deliveryError({ reason: 'refused', retryable: false, message: /302 \(a redirect, not followed\)/ }))
  assert.equal(requests.length, before + 1, 'only the first request was made')
})

test('a gateway that does not answer: the deadline', { timeout: 5000 }, async () => {
  const started = Date.now()
  await assert.rejects(sender('/slow', { timeoutMs: 200 }).send(code), deliveryError({ reason: 'timeout', retryable: true, message: /within 200 ms/ }))
  assert.ok(Date.now() - started < 1000)
})

test('a gateway that is not there: a retryable network error', async () => {
  const closed = createServer()
  await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve))
  const port = (closed.address() as AddressInfo).port
  await new Promise((resolve) => closed.close(resolve))
  await assert.rejects(new HttpSmsSender({ url: `http://127.0.0.1:${port}/${PARAMS}` }).send(code),
    deliveryError({ reason: 'network', retryable: true, message: /ECONNREFUSED/ }))
})

test('an answer that echoes the request keeps neither the password nor the text nor the number in the error', async () => {
  await assert.rejects(sender('/echo').send(code), deliveryError({ reason: 'rejected', retryable: false, message: /answered 400: bad request/ }))
})

test('a closed sender refuses; a bad URL is refused at construction without quoting it', async () => {
  const sms = sender('/cgi-bin/sendsms')
  await sms.close()
  await assert.rejects(sms.send(code), deliveryError({ reason: 'closed', retryable: false }))
  assert.throws(() => new HttpSmsSender({ url: 'ftp://kannel/?password=s3cr3t-pw' }), (error: Error) => /http/.test(error.message) && !error.message.includes('s3cr3t'))
})
