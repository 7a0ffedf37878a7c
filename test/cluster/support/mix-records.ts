/**
 * What the production mix records: every request it sends (HTTP through HAProxy, SIP through
 * Kamailio) with its times, answer and who answered, and every approval and decision the
 * service acknowledged. The fault table (fault-table.ts) is computed from these alone.
 */

export type RequestKind =
  | 'approval.create' | 'approval.details' | 'approval.wait'
  | 'decision.signature' | 'decision.cancel' | 'decision.ledger'
  | 'call.stir' | 'call.sip' | 'registration' | 'login'

export interface MixRequest {
  /** x-request-id (HTTP) or Call-ID (SIP): what the nodes' and Kamailio's logs name. */
  id: string
  kind: RequestKind
  /** Epoch ms: sent, and answered (or given up); `end` is undefined while in flight. */
  start: number
  end?: number
  /** HTTP or SIP status; 0 when no answer came (connection error, timeout). */
  status: number
  /** Undefined when the request did what it should; otherwise why not (an error code, a client error, a wrong verdict). */
  failure?: string
  /**
   * Whether the service itself answered (a KNS node: HTTP with our x-request-id echoed, SIP
   * not from the dispatcher) rather than the proxy in front of it or nobody.
   */
  byService: boolean
  retryAfter?: string
  /** The node that received it (from the nodes' logs, or Kamailio's for SIP), filled in after the run. */
  node?: string
}

export interface AcknowledgedApproval {
  approvalNumber: string
  referenceNumber: string
  method: 'sign' | 'event'
  /** Epoch ms when its 200 arrived. */
  at: number
  /** APPROVAL_COMMIT of the nodes at the time. */
  commit: 'sync' | 'async'
}

export interface AcknowledgedDecision {
  approvalNumber: string
  /** The state the approval must be in: a 200 `success: true` decided it, or (ledger) the owner's kns::approve was recorded. */
  status: 'approved' | 'cancelled'
  via: 'signature' | 'cancel' | 'ledger'
  at: number
}

export interface MixRecords {
  requests: MixRequest[]
  approvals: AcknowledgedApproval[]
  decisions: AcknowledgedDecision[]
}

export function newRecords(): MixRecords {
  return { requests: [], approvals: [], decisions: [] }
}

/** The client-side name of a failed fetch: `timeout`, or the socket error's code (ECONNRESET...). */
export function clientError(err: unknown): string {
  const e = err as Error & { cause?: { code?: string; message?: string } }
  if (e.name === 'TimeoutError' || e.name === 'AbortError') return 'timeout'
  return String(e.cause?.code ?? e.cause?.message ?? e.message)
}

/** "approval.create 200: 812, approval.create 503 DATABASE_UNAVAILABLE: 3": for messages. */
export function summarizeRequests(requests: readonly MixRequest[]): string {
  const counts = new Map<string, number>()
  for (const r of requests) {
    const label = `${r.kind} ${r.status}${r.failure === undefined ? '' : ` ${r.failure}`}`
    counts.set(label, (counts.get(label) ?? 0) + 1)
  }
  return [...counts].sort((a, b) => b[1] - a[1]).map(([label, n]) => `${label}: ${n}`).join(', ') || 'none'
}

/**
 * Fills in `node` for every request a node logged (Fastify logs each request's id at `info`)
 * and every call Kamailio logged relaying (`INVITE <Call-ID> from <address> -> sip:<node>` and
 * `retried on sip:<node>`: the last node it went to).
 */
export function attributeNodes(requests: MixRequest[], nodeLogs: ReadonlyArray<{ node: string; log: string }>, dispatcherLog: string,
  nodeByAddress: ReadonlyMap<string, string>): void {
  const nodeOf = new Map<string, string>()
  for (const { node, log } of nodeLogs) {
    for (const match of log.matchAll(/"reqId":"(mix-[^"]+)"/g)) if (!nodeOf.has(match[1]!)) nodeOf.set(match[1]!, node)
  }
  for (const match of dispatcherLog.matchAll(/INVITE (mix-sip-[0-9a-f]+)(?: from \S+ ->|: retried on) sip:([\d.]+):/g)) {
    const node = nodeByAddress.get(match[2]!)
    if (node !== undefined) nodeOf.set(match[1]!, node)
  }
  for (const request of requests) {
    const node = nodeOf.get(request.id)
    if (node !== undefined) request.node = node
  }
}
