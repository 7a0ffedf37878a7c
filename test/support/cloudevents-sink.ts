/**
 * A CAMARA notification sink as a bank would run one: https (a self-signed certificate for
 * 127.0.0.1 made by the openssl command; `ca` is what the sender must trust), keeping every
 * request's headers and CloudEvent. `respond` scripts the answers (default 204).
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { createServer, type Server } from 'node:https'
import type { IncomingHttpHeaders, ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { openssl } from './caller.ts'

export interface ReceivedEvent { headers: IncomingHttpHeaders; body: string; event: Record<string, unknown> }

export interface CloudEventsSink {
  url: string
  ca: string
  received: ReceivedEvent[]
  respond: (received: ReceivedEvent, res: ServerResponse) => void
  waitFor(count: number, timeoutMs?: number): Promise<ReceivedEvent[]>
  close(): Promise<void>
}

export async function startCloudEventsSink(path = '/camara/sink'): Promise<CloudEventsSink> {
  const dir = mkdtempSync(join(tmpdir(), 'kns-sink-'))
  try {
    openssl(['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-days', '1', '-subj', '/CN=127.0.0.1',
      '-addext', 'subjectAltName=IP:127.0.0.1', '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem')])
    const key = readFileSync(join(dir, 'key.pem'), 'utf8')
    const cert = readFileSync(join(dir, 'cert.pem'), 'utf8')
    const sink: CloudEventsSink = {
      url: '', ca: cert, received: [],
      respond: (_received, res) => { res.writeHead(204).end() },
      async waitFor(count, timeoutMs = 15_000) {
        const deadline = Date.now() + timeoutMs
        while (sink.received.length < count) {
          if (Date.now() > deadline) throw new Error(`expected ${count} events, got ${sink.received.length} within ${timeoutMs} ms`)
          await new Promise((resolve) => setTimeout(resolve, 25))
        }
        return sink.received.slice(0, count)
      },
      close: () => new Promise<void>((resolve) => { server.closeAllConnections(); server.close(() => resolve()) }),
    }
    const server: Server = createServer({ key, cert }, (req, res) => {
      const chunks: Buffer[] = []
      req.on('data', (chunk: Buffer) => chunks.push(chunk))
      req.on('end', () => {
        const body = Buffer.concat(chunks).toString('utf8')
        let event: Record<string, unknown> = {}
        try { event = JSON.parse(body) as Record<string, unknown> } catch { /* kept as received */ }
        const received = { headers: req.headers, body, event }
        sink.received.push(received)
        sink.respond(received, res)
      })
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    sink.url = `https://127.0.0.1:${(server.address() as AddressInfo).port}${path}`
    return sink
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}
