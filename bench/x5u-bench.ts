/**
 * Caller verification through a SHAKEN certificate (x5u) in `npm run bench`: a test PKI made by
 * openssl (test/support/shaken-pki.ts), the x5u document and CRL served over https by this
 * process, the server started with the PKI's root as STI_TRUST_ANCHORS and its TLS root in
 * NODE_EXTRA_CA_CERTS (as a deployment trusting an extra root would). PASSporTs without kid,
 * so the ledger is not consulted; the certificate cache is warm before measuring (one fetch),
 * as in a running server.
 */
import { createPrivateKey, randomUUID, sign } from 'node:crypto'
import { writeFileSync } from 'node:fs'
import { createServer, type Server } from 'node:https'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import { makeShakenPki, type ShakenPki } from '../test/support/shaken-pki.ts'
import type { Endpoint } from './bench-server.ts'
import { RESIGN_AFTER_S } from './caller-bench.ts'

export const X5U_NAME = 'POST /numsys/call-signature-verification (x5u)'

const DEST = '14155550199'
const CALLS = 2000

export interface X5uFixture {
  /** What the server needs in its environment. */
  env: Record<string, string>
  endpoint(apiKey: string, log: (line: string) => void): Endpoint
  stop(): Promise<void>
}

export async function startX5uFixture(): Promise<X5uFixture> {
  const probe = createServer()
  const port = await new Promise<number>((resolve) => probe.listen(0, '127.0.0.1', () => { const p = (probe.address() as AddressInfo).port; probe.close(() => resolve(p)) }))
  const base = `https://127.0.0.1:${port}`
  const pki: ShakenPki = makeShakenPki({ crlUrl: `${base}/crl.der` })
  const server: Server = createServer({ key: pki.tls.key, cert: pki.tls.cert }, (req, res) => {
    if (req.url === '/certs/spc.pem') return void res.writeHead(200, { 'cache-control': 'max-age=3600' }).end(pki.leaves.spc.bundle)
    if (req.url === '/crl.der') return void res.writeHead(200, { 'cache-control': 'max-age=3600' }).end(pki.crl)
    res.writeHead(404).end()
  })
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve))
  const tlsCa = join(pki.dir, 'tls-ca.pem')
  writeFileSync(tlsCa, pki.tls.ca)
  const x5u = `${base}/certs/spc.pem`
  const key = createPrivateKey(pki.leaves.spc.key)
  const header = Buffer.from(JSON.stringify({ alg: 'ES256', ppt: 'shaken', typ: 'passport', x5u })).toString('base64url')
  const signCalls = (nowS: number) => Array.from({ length: CALLS }, (_, i) => {
    const orig = `1202555${String(i).padStart(4, '0')}`
    const payload = Buffer.from(JSON.stringify({ attest: 'A', dest: { tn: [DEST] }, iat: nowS, orig: { tn: orig }, origid: randomUUID() })).toString('base64url')
    const input = `${header}.${payload}`
    const signature = sign('sha256', Buffer.from(input), { key, dsaEncoding: 'ieee-p1363' }).toString('base64url')
    return JSON.stringify({ origTN: orig, destTN: DEST, jwt: `${input}.${signature}` })
  })
  return {
    env: { STI_TRUST_ANCHORS: join(pki.dir, 'root.pem'), X5U_ALLOW_PRIVATE: 'true', NODE_EXTRA_CA_CERTS: tlsCa },
    endpoint(apiKey, log) {
      const headers = { 'content-type': 'application/json', 'x-api-key': apiKey }
      let bodies: string[] = []
      let signedAt = 0
      let calls = 0
      return {
        name: X5U_NAME, method: 'POST', headers,
        prepare() {
          if (Date.now() - signedAt < RESIGN_AFTER_S * 1000) return
          bodies = signCalls(Math.floor(Date.now() / 1000))
          signedAt = Date.now()
        },
        async warm(serverPort) {
          // The first verification fetches the certificate and the CRL; every later one finds them cached.
          const response = await fetch(`http://127.0.0.1:${serverPort}/numsys/call-signature-verification`, { method: 'POST', headers, body: bodies[0] ?? signCalls(Math.floor(Date.now() / 1000))[0]! })
          const text = await response.text()
          if (!text.includes('"success":true')) throw new Error(`x5u warm-up: ${text.slice(0, 300)}`)
          log('   x5u certificate and CRL fetched and cached')
        },
        next: () => ({ path: '/numsys/call-signature-verification', body: bodies[calls++ % bodies.length]! }),
        ok: (body) => body.includes('"success":true') && body.includes('"trust":"x5u"'),
      }
    },
    async stop() {
      server.closeAllConnections()
      await new Promise((resolve) => server.close(resolve))
      pki.cleanup()
    },
  }
}
