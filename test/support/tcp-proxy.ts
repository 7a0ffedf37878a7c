/**
 * An address that moves, as a failover sees it from a client: a TCP forwarder on loopback whose
 * target can change (new connections go to the new target, connections made before stay where
 * they were, as through HAProxy without `on-marked-down shutdown-sessions`, a VIP or a DNS
 * name), and whose connections can be cut silently (a network cut: the sockets stay open, what
 * is sent is lost, no RST) or loudly (closed).
 */
import { createServer, connect, type Server, type Socket } from 'node:net'

export interface Target { host: string; port: number }

interface Pair { client: Socket; server: Socket; silent: boolean }

export class TcpProxy {
  readonly port: number
  /** Where new connections go. */
  target: Target
  /** New connections are accepted and then hear nothing, as behind a cut. */
  blackholeNew = false
  readonly #server: Server
  readonly #pairs = new Set<Pair>()

  private constructor(server: Server, port: number, target: Target) {
    this.#server = server
    this.port = port
    this.target = target
  }

  static async start(target: Target): Promise<TcpProxy> {
    let proxy: TcpProxy | undefined
    const server = createServer((client) => proxy!.#accept(client))
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject)
      server.listen(0, '127.0.0.1', () => resolve())
    })
    const address = server.address()
    proxy = new TcpProxy(server, typeof address === 'object' && address !== null ? address.port : 0, target)
    return proxy
  }

  /** `url` with its host and port replaced by the proxy's. */
  url(url: string): string {
    const parsed = new URL(url)
    parsed.hostname = '127.0.0.1'
    parsed.port = String(this.port)
    return parsed.toString()
  }

  /** Connections open now, through the proxy. */
  get connections(): number {
    return this.#pairs.size
  }

  #accept(client: Socket): void {
    const server = connect(this.target.port, this.target.host)
    const pair: Pair = { client, server, silent: this.blackholeNew }
    this.#pairs.add(pair)
    const forward = (from: Socket, to: Socket) => from.on('data', (chunk) => { if (!pair.silent) to.write(chunk) })
    forward(client, server)
    forward(server, client)
    const close = () => {
      this.#pairs.delete(pair)
      client.destroy()
      server.destroy()
    }
    // A silent pair stays open whatever happens on either side: no FIN, no RST reaches the other.
    client.on('close', () => { if (!pair.silent) close() })
    server.on('close', () => { if (!pair.silent) close() })
    client.on('error', () => {})
    server.on('error', () => {})
  }

  /** Every connection open now goes silent: both ends stay open, nothing more crosses. */
  silence(): void {
    for (const pair of this.#pairs) pair.silent = true
  }

  /** Every connection open now is closed, both ways. */
  cut(): void {
    for (const pair of this.#pairs) {
      this.#pairs.delete(pair)
      pair.client.destroy()
      pair.server.destroy()
    }
  }

  async close(): Promise<void> {
    this.cut()
    await new Promise<void>((resolve) => this.#server.close(() => resolve()))
  }
}
