/**
 * A bank's redirect URI in tests: a plain http server on 127.0.0.1 (loopback http is what the
 * provider allows besides https) that answers a small page and keeps every request it got, so
 * a test waits for the browser's arrival there instead of intercepting it.
 */
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'

export interface BankCallback {
  /** http://127.0.0.1:<port>/bank/callback, the URI to register. */
  uri: string
  /** The request to the callback after `after` earlier ones (at once when it has come; rejects after `timeoutMs`). */
  arrival(after: number, timeoutMs?: number): Promise<URL>
  /** How many requests reached the callback so far. */
  readonly count: number
  close(): Promise<void>
}

export async function startBankCallback(): Promise<BankCallback> {
  const arrivals: URL[] = []
  const waiting: Array<{ after: number; resolve: (url: URL) => void }> = []
  const server: Server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', `http://${req.headers.host ?? '127.0.0.1'}`)
    if (url.pathname === '/bank/callback') {
      arrivals.push(url)
      for (const w of waiting.splice(0)) {
        if (arrivals.length > w.after) w.resolve(arrivals[w.after]!)
        else waiting.push(w)
      }
    }
    res.writeHead(url.pathname === '/bank/callback' ? 200 : 404, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' })
    res.end('<!doctype html><html lang="en"><title>Acme Bank</title><h1>Back at the bank</h1></html>')
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return {
    uri: `http://127.0.0.1:${port}/bank/callback`,
    get count() { return arrivals.length },
    arrival: (after, timeoutMs = 15_000) => arrivals.length > after
      ? Promise.resolve(arrivals[after]!)
      : new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no request reached the bank's callback within ${timeoutMs} ms`)), timeoutMs)
        waiting.push({ after, resolve: (url) => { clearTimeout(timer); resolve(url) } })
      }),
    close: () => new Promise((resolve) => {
      server.closeAllConnections()
      server.close(() => resolve())
    }),
  }
}
