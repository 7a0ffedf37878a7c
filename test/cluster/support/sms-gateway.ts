/**
 * The SMS gateway the cluster's nodes send login codes to (SMS_DELIVERY=http, Kannel's sendsms
 * shape: GET with `to` and `text`), listening on the bridge address where every host reaches
 * it. It keeps every text, so a login in the mix reads its code as a phone would.
 */
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { sleep } from './wait.ts'

export interface SmsGateway {
  /** SMS_HTTP_URL for the nodes. */
  url: string
  /** Texts received: the number (digits, as the nodes send it) and the text. */
  texts: Array<{ to: string; text: string; at: number }>
  /** The newest login code sent to `phone` after `since` (epoch ms), waiting up to `timeoutMs`; undefined when none came. */
  codeFor(phone: string, since: number, timeoutMs: number): Promise<string | undefined>
  close(): Promise<void>
}

export async function startSmsGateway(host: string): Promise<SmsGateway> {
  const texts: SmsGateway['texts'] = []
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://gateway')
    const to = url.searchParams.get('to')
    const text = url.searchParams.get('text')
    if (url.pathname !== '/cgi-bin/sendsms' || to === null || text === null) return void res.writeHead(400).end('3: missing to or text')
    texts.push({ to: to.replace(/^\+/, ''), text, at: Date.now() })
    res.writeHead(202, { 'content-type': 'text/plain' }).end('0: Accepted for delivery')
  })
  await new Promise<void>((resolve) => server.listen(0, host, resolve))
  const port = (server.address() as AddressInfo).port
  return {
    url: `http://${host}:${port}/cgi-bin/sendsms?username=kns&password=gateway-secret`,
    texts,
    async codeFor(phone, since, timeoutMs) {
      const digits = phone.replace(/^\+/, '')
      const deadline = Date.now() + timeoutMs
      for (;;) {
        const text = texts.findLast((t) => t.to === digits && t.at >= since)?.text
        const code = text === undefined ? undefined : /^(\d{6}) is your KNS login code/.exec(text)?.[1]
        if (code !== undefined || Date.now() > deadline) return code
        await sleep(50)
      }
    },
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections()
      server.close(() => resolve())
    }),
  }
}
