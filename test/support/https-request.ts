/**
 * One HTTPS request that trusts only the certificate authority a test made (node:https with
 * `ca`: the server's certificate must chain to it and name the host), and what came back,
 * TLS version included. Tests of a TLS-terminating proxy (deploy/haproxy/haproxy.cfg) use it.
 */
import { request } from 'node:https'
import type { TLSSocket } from 'node:tls'

export interface HttpsAnswer {
  status: number
  headers: Record<string, string | string[] | undefined>
  body: string
  /** The negotiated TLS version, e.g. TLSv1.3. */
  tlsVersion: string | null
}

export function httpsRequest(url: string, options: { ca: string; servername?: string; method?: string; json?: unknown; headers?: Record<string, string> }): Promise<HttpsAnswer> {
  const body = options.json === undefined ? undefined : JSON.stringify(options.json)
  return new Promise((resolve, reject) => {
    const req = request(url, {
      method: options.method ?? (body === undefined ? 'GET' : 'POST'),
      ca: options.ca,
      ...(options.servername === undefined ? {} : { servername: options.servername }),
      headers: { ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...options.headers },
      timeout: 10_000,
    }, (res) => {
      // Read now: the socket is detached from the response once it has ended.
      const tlsVersion = (res.socket as TLSSocket).getProtocol()
      let text = ''
      res.setEncoding('utf8').on('data', (chunk: string) => { text += chunk })
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: text, tlsVersion }))
    })
    req.on('timeout', () => req.destroy(new Error(`no answer from ${url} within 10 s`)))
    req.on('error', reject)
    req.end(body)
  })
}
