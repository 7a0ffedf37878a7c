/**
 * What was lost, found after the faults: every approval the service acknowledged must exist,
 * every acknowledged decision must have left its approval in the state it promised (read in
 * the database, through HAProxy, as the nodes read it), and every decided approval's event
 * must have reached the vendor's webhook once (a repeat only with the same webhook-id).
 */
import pg from 'pg'
import type { ReceivedDelivery } from '../../support/webhook-receiver.ts'
import type { FaultPhase, PhaseLosses } from './fault-table.ts'
import type { MixRecords } from './mix-records.ts'
import { sleep } from './wait.ts'

export interface StoredApproval { status: string }

/** The approvals' stored states by approval number (missing: not stored). */
export async function storedApprovals(databaseUrl: string, approvalNumbers: readonly string[]): Promise<Map<string, StoredApproval>> {
  const client = new pg.Client({ connectionString: databaseUrl, connectionTimeoutMillis: 5000 })
  await client.connect()
  try {
    const { rows } = await client.query<{ approval_number: string; status: string }>(
      'SELECT approval_number, status FROM approvals WHERE approval_number = ANY($1)', [approvalNumbers])
    return new Map(rows.map((r) => [r.approval_number, { status: r.status }]))
  } finally {
    await client.end()
  }
}

interface Delivered { webhookId: string; type: string; approvalNumber: string }

function delivered(received: readonly ReceivedDelivery[]): Delivered[] {
  return received.flatMap((d) => {
    const event = (d.verified ?? JSON.parse(d.body)) as { type?: string; data?: { approvalNumber?: string } }
    return event.type === undefined || event.data?.approvalNumber === undefined ? [] : [{ webhookId: d.id, type: event.type, approvalNumber: event.data.approvalNumber }]
  })
}

/**
 * Waits (up to `timeoutMs`) until the ledger watcher has applied every acknowledged ledger
 * approval and every decided approval's event has arrived, then says what is still missing.
 */
export async function settle(databaseUrl: string, records: MixRecords, received: readonly ReceivedDelivery[], timeoutMs: number): Promise<Map<string, StoredApproval>> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const stored = await storedApprovals(databaseUrl, records.approvals.map((a) => a.approvalNumber))
    const ledgerPending = records.decisions.some((d) => d.via === 'ledger' && stored.get(d.approvalNumber)?.status === 'pending')
    const seen = new Set(delivered(received).map((d) => `${d.approvalNumber} ${d.type}`))
    const eventsMissing = [...stored].some(([number, a]) => a.status !== 'pending' && !seen.has(`${number} approval.${a.status}`))
    if ((!ledgerPending && !eventsMissing) || Date.now() > deadline) return stored
    await sleep(500)
  }
}

/** The losses of each phase, the work attributed to the phase in which it was acknowledged (decided approvals' events: their approval's). */
export function lossesByPhase(phases: readonly FaultPhase[], records: MixRecords, stored: ReadonlyMap<string, StoredApproval>,
  received: readonly ReceivedDelivery[]): Map<FaultPhase, PhaseLosses> {
  const events = delivered(received)
  const idsByEvent = new Map<string, Set<string>>()
  const receipts = new Map<string, number>()
  for (const e of events) {
    const key = `${e.approvalNumber} ${e.type}`
    idsByEvent.set(key, (idsByEvent.get(key) ?? new Set()).add(e.webhookId))
    receipts.set(e.webhookId, (receipts.get(e.webhookId) ?? 0) + 1)
  }
  const result = new Map<FaultPhase, PhaseLosses>()
  for (const phase of phases) {
    const inPhase = (at: number) => at >= phase.start && at < phase.end
    const approvals = records.approvals.filter((a) => inPhase(a.at))
    const decisions = records.decisions.filter((d) => inPhase(d.at))
    const decidedHere = approvals.filter((a) => (stored.get(a.approvalNumber)?.status ?? 'pending') !== 'pending')
    const lostEvents: string[] = []
    let duplicated = 0
    for (const approval of decidedHere) {
      const key = `${approval.approvalNumber} approval.${stored.get(approval.approvalNumber)!.status}`
      const ids = idsByEvent.get(key)
      if (ids === undefined) lostEvents.push(key)
      else {
        // A second event for one decision (another webhook-id) is a duplicate too, and a worse one: receivers cannot tell.
        duplicated += ids.size - 1
        for (const id of ids) duplicated += (receipts.get(id) ?? 1) - 1
      }
    }
    result.set(phase, {
      approvals: { acknowledged: approvals.length, lost: approvals.filter((a) => !stored.has(a.approvalNumber)).map((a) => a.approvalNumber) },
      decisions: {
        acknowledged: decisions.length,
        lost: decisions.filter((d) => stored.get(d.approvalNumber)?.status !== d.status)
          .map((d) => `${d.approvalNumber} ${d.via}: ${d.status} acknowledged, ${stored.get(d.approvalNumber)?.status ?? 'missing'} stored`),
      },
      webhooks: { expected: decidedHere.length, lost: lostEvents, duplicated },
    })
  }
  return result
}
