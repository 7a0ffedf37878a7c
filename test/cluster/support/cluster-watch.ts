/**
 * What the fault tests watch besides the mix's own requests: every node's `/readyz`, asked
 * directly (not through HAProxy) every quarter second, with the ledger watcher's state it
 * reports (watching or standby: who leads); and whether the nodes have a primary to reach
 * (HAProxy's PostgreSQL frontend with a server UP: what the nodes get, whereas Patroni's own
 * view names a crashed leader until its key expires).
 */
import type { Haproxy } from './haproxy.ts'
import type { KnsNode } from './kns-nodes.ts'
import { sleep } from './wait.ts'

export interface ReadinessProbe {
  node: string
  /** Epoch ms when it was asked. */
  at: number
  /** 0: no answer within the probe's timeout (killed, cut off). */
  status: number
  /** /readyz's `status` and `watcher` fields. */
  state?: string
  watcher?: string
}

export interface PrimaryProbe {
  at: number
  /** The PostgreSQL member HAProxy sends the nodes to; undefined when none is UP (or HAProxy did not answer). */
  leader?: string
}

const INTERVAL_MS = 250
const PROBE_TIMEOUT_MS = 1000

export class ClusterWatch {
  readonly readiness: ReadinessProbe[] = []
  readonly primary: PrimaryProbe[] = []
  #running = false
  #loops: Promise<void>[] = []

  start(nodes: KnsNode[], haproxy: Haproxy): void {
    this.#running = true
    this.#loops = [...nodes.map((node) => this.#watchNode(node)), this.#watchPrimary(haproxy)]
  }

  async stop(): Promise<void> {
    this.#running = false
    await Promise.all(this.#loops)
  }

  /** The node whose latest answered /readyz says it watches the ledger (the first, if several do). */
  currentWatcher(): string | undefined {
    const latest = new Map<string, ReadinessProbe>()
    for (const probe of this.readiness) latest.set(probe.node, probe)
    return [...latest.values()].find((p) => p.status === 200 && p.watcher?.startsWith('watching'))?.node
  }

  async #watchNode(node: KnsNode): Promise<void> {
    while (this.#running) {
      const at = Date.now()
      try {
        const res = await fetch(`${node.url}/readyz`, { signal: AbortSignal.timeout(PROBE_TIMEOUT_MS) })
        const body = (await res.json()) as { status?: string; watcher?: string }
        this.readiness.push({ node: node.name, at, status: res.status, ...(body.status === undefined ? {} : { state: body.status }), ...(body.watcher === undefined ? {} : { watcher: body.watcher }) })
      } catch {
        this.readiness.push({ node: node.name, at, status: 0 })
      }
      await sleep(Math.max(0, INTERVAL_MS - (Date.now() - at)))
    }
  }

  async #watchPrimary(haproxy: Haproxy): Promise<void> {
    while (this.#running) {
      const at = Date.now()
      let leader: string | undefined
      try {
        leader = (await haproxy.stats()).find((s) => s.proxy === 'postgres_primary' && s.server.startsWith('pg') && s.status === 'UP')?.server
      } catch { /* no answer from the admin socket */ }
      this.primary.push({ at, ...(leader === undefined ? {} : { leader }) })
      await sleep(Math.max(0, 2 * INTERVAL_MS - (Date.now() - at)))
    }
  }
}
