/**
 * A real HTTP endpoint for webhook deliveries, as a vendor would run one: every delivery is
 * verified with the `standardwebhooks` package (an implementation independent of ours), and
 * kept with what the verification said. `respond` scripts the answers (down, redirects...).
 */
import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { Webhook } from 'standardwebhooks'

export interface ReceivedDelivery {
  id: string
  timestamp: string
  headers: IncomingHttpHeaders
  body: string
  /** Parsed and verified by `standardwebhooks`; null when it refused the signature. */
  verified: Record<string, unknown> | null
  verifyError: string | null
  receivedAt: number
}

export interface WebhookReceiver {
  url: string
  received: ReceivedDelivery[]
  /** The secret deliveries are verified with (set after `kns webhook add`). */
  secret: string | null
  /** The answer to the next request (default 204). */
  respond: (delivery: ReceivedDelivery, res: ServerResponse) => void
  waitFor(count: number, timeoutMs?: number): Promise<ReceivedDelivery[]>
  close(): Promise<void>
}

/** Listens on `host` (loopback unless told: the cluster test's nodes reach it on the bridge address). */
export async function startWebhookReceiver(path = '/hooks/kns', port = 0, host = '127.0.0.1'): Promise<WebhookReceiver> {
  const waiters: Array<() => void> = []
  const receiver: WebhookReceiver = {
    url: '',
    received: [],
    secret: null,
    respond: (_delivery, res) => { res.writeHead(204).end() },
    async waitFor(count, timeoutMs = 15_000) {
      const deadline = Date.now() + timeoutMs
      while (receiver.received.length < count) {
        if (Date.now() > deadline) throw new Error(`expected ${count} deliveries, got ${receiver.received.length} within ${timeoutMs} ms`)
        await new Promise<void>((resolve) => { waiters.push(resolve); setTimeout(resolve, 50) })
      }
      return receiver.received.slice(0, count)
    },
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections()
      server.close(() => resolve())
    }),
  }
  const server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (chunk: Buffer) => chunks.push(chunk))
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8')
      let verified: Record<string, unknown> | null = null
      let verifyError: string | null = null
      try {
        if (receiver.secret === null) throw new Error('no secret set on the receiver')
        verified = new Webhook(receiver.secret).verify(body, req.headers as Record<string, string>) as Record<string, unknown>
      } catch (err) {
        verifyError = (err as Error).message
      }
      const delivery: ReceivedDelivery = {
        id: String(req.headers['webhook-id']), timestamp: String(req.headers['webhook-timestamp']), headers: req.headers, body,
        verified, verifyError, receivedAt: Date.now(),
      }
      if (req.url !== path) {
        res.writeHead(404).end()
        return
      }
      receiver.received.push(delivery)
      for (const wake of waiters.splice(0)) wake()
      receiver.respond(delivery, res)
    })
  })
  await new Promise<void>((resolve) => server.listen(port, host, resolve))
  receiver.url = `http://${host}:${(server.address() as AddressInfo).port}${path}`
  return receiver
}
