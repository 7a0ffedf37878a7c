/**
 * An https server publishing what SHAKEN verifiers fetch, on loopback with the test PKI's own
 * TLS root: x5u certificate bundles (/certs/<leaf>.pem), the CRL (/crl.der: the intermediate's,
 * the STI-PA-style indirect one, or none), and any other document a test puts in `documents`
 * (jCards for rich call data). Counts the requests it served.
 */
import type { IncomingHttpHeaders } from 'node:http'
import { createServer, type Server } from 'node:https'
import { freePort } from './process.ts'
import { makeShakenPki, type LeafKind, type ShakenPki } from './shaken-pki.ts'

export interface X5uServer {
  pki: ShakenPki
  base: string
  /** `${base}/certs/<kind>.pem` */
  certUrl(kind: LeafKind): string
  crl: 'direct' | 'indirect' | 'none'
  /** path -> body served with 200 (and content type application/json when it starts with { or [). */
  documents: Map<string, string | Buffer>
  served: number
  /** Every request's path (without its query) and headers, in order. */
  requests: Array<{ path: string; headers: IncomingHttpHeaders }>
  close(): Promise<void>
}

export async function startX5uServer(): Promise<X5uServer> {
  // The CRL's URL is written into the certificates: the port is chosen first.
  const port = await freePort()
  const base = `https://127.0.0.1:${port}`
  const pki = makeShakenPki({ crlUrl: `${base}/crl.der` })
  const state: X5uServer = {
    pki, base, crl: 'direct', documents: new Map(), served: 0, requests: [],
    certUrl: (kind) => `${base}/certs/${kind}.pem`,
    close: async () => {
      server.closeAllConnections()
      await new Promise((resolve) => server.close(resolve))
      pki.cleanup()
    },
  }
  const server: Server = createServer({ key: pki.tls.key, cert: pki.tls.cert }, (req, res) => {
    state.served++
    const url = (req.url ?? '').split('?')[0]!
    state.requests.push({ path: url, headers: req.headers })
    const cert = /^\/certs\/(\w+)\.pem$/.exec(url)
    if (cert && cert[1]! in pki.leaves) {
      return void res.writeHead(200, { 'content-type': 'application/x-pem-file', 'cache-control': 'max-age=600' }).end(pki.leaves[cert[1] as LeafKind].bundle)
    }
    if (url === '/crl.der') {
      if (state.crl === 'none') return void res.writeHead(503).end()
      return void res.writeHead(200, { 'content-type': 'application/pkix-crl' }).end(state.crl === 'direct' ? pki.crl : pki.indirectCrl)
    }
    const document = state.documents.get(url)
    if (document !== undefined) {
      const json = typeof document === 'string' && /^[[{]/.test(document)
      return void res.writeHead(200, { 'content-type': json ? 'application/json' : 'application/octet-stream', 'cache-control': 'max-age=600' }).end(document)
    }
    res.writeHead(404).end()
  })
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve))
  return state
}
