/**
 * The fault table: for each fault injected under the production mix, what failed and why,
 * how long until every node was ready again, what acknowledged work was lost, and how the
 * ledger watcher's leadership moved. Computed from the mix's records, the readiness probes
 * and what the test found in the database and at the webhook receiver afterwards; rendered as
 * the Markdown table docs/cluster.md keeps (between its fault-table markers).
 */
import { readFileSync, writeFileSync } from 'node:fs'
import type { PrimaryProbe, ReadinessProbe } from './cluster-watch.ts'
import { summarizeRequests, type MixRecords, type MixRequest } from './mix-records.ts'

export interface FaultPhase {
  name: string
  /** Epoch ms: the phase's start (the mix already running), the fault, its repair (restart, link up), the cluster healthy again, the phase's end. */
  start: number
  faultAt: number
  repairedAt: number
  recoveredAt: number
  end: number
  /** The node killed or cut off. */
  lostNode?: string
  commit: 'sync' | 'async'
  notes: string[]
  /** The control: no fault, so no window either (every failure is "other"). */
  control?: boolean
}

/** What the test found after the run, per phase (by the time the work was acknowledged). */
export interface PhaseLosses {
  approvals: { acknowledged: number; lost: string[] }
  decisions: { acknowledged: number; lost: string[] }
  webhooks: { expected: number; lost: string[]; duplicated: number }
}

export interface FaultRow {
  phase: FaultPhase
  requests: number
  failed: MixRequest[]
  /** Received by the node that was lost, inside the fault's window [fault, healthy again + grace], neither. */
  onLostNode: MixRequest[]
  inWindow: MixRequest[]
  outside: MixRequest[]
  /** The failed requests by answer: 503 with Retry-After from a node; a proxy's answer (HAProxy, Kamailio); none; anything else a node answered (a 5xx without Retry-After, a wrong verdict). */
  answered503: MixRequest[]
  byProxy: MixRequest[]
  noAnswer: MixRequest[]
  wrongAnswer: MixRequest[]
  /** Seconds from the fault until every node's /readyz answered 200 again; null when none was ever unready. */
  readyAgainS: number | null
  watcher: { before: string; after: string; gapS: number; doubleS: number }
  noPrimaryS: number
  losses: PhaseLosses
}

/** A request that ends this long after the cluster is healthy again still counts as inside the window (its answer was on the way). */
export const WINDOW_GRACE_MS = 2000

export function faultRow(phase: FaultPhase, records: MixRecords, readiness: readonly ReadinessProbe[], primary: readonly PrimaryProbe[], losses: PhaseLosses): FaultRow {
  const requests = records.requests.filter((r) => r.start >= phase.start && r.start < phase.end)
  const failed = requests.filter((r) => r.failure !== undefined)
  const windowEnd = phase.recoveredAt + WINDOW_GRACE_MS
  const onLostNode = failed.filter((r) => phase.lostNode !== undefined && r.node === phase.lostNode)
  const inWindow = phase.control === true ? [] : failed.filter((r) => !onLostNode.includes(r) && r.start <= windowEnd && (r.end ?? Infinity) >= phase.faultAt)
  const answered503 = failed.filter((r) => r.byService && r.status === 503 && r.retryAfter !== undefined)
  const byProxy = failed.filter((r) => !r.byService && r.status !== 0)
  const noAnswer = failed.filter((r) => r.status === 0)
  return {
    phase, requests: requests.length, failed, onLostNode, inWindow,
    outside: failed.filter((r) => !onLostNode.includes(r) && !inWindow.includes(r)),
    answered503, byProxy, noAnswer,
    wrongAnswer: failed.filter((r) => r.byService && !answered503.includes(r)),
    readyAgainS: readyAgain(phase, readiness),
    watcher: watcherHandover(phase, readiness),
    noPrimaryS: longestWithoutPrimary(phase, primary),
    losses,
  }
}

function readyAgain(phase: FaultPhase, probes: readonly ReadinessProbe[]): number | null {
  const byNode = new Map<string, ReadinessProbe[]>()
  for (const p of probes) {
    if (p.at >= phase.faultAt && p.at < phase.end) byNode.set(p.node, [...(byNode.get(p.node) ?? []), p])
  }
  let readyAt: number | null = null
  for (const list of byNode.values()) {
    const lastBad = list.findLastIndex((p) => p.status !== 200)
    if (lastBad === -1) continue
    const good = list[lastBad + 1]
    const at = good === undefined ? Infinity : good.at
    readyAt = Math.max(readyAt ?? 0, at)
  }
  return readyAt === null ? null : (readyAt - phase.faultAt) / 1000
}

/**
 * Who watches the ledger before and after, the longest time no reachable node said it
 * watches (the handover), and how long two said so at once (two leaders: must be 0). A node
 * counts as watching between two of its probes that both said so: the time between probes is
 * not guessed, so two nodes overlap only where their probes show it.
 */
function watcherHandover(phase: FaultPhase, probes: readonly ReadinessProbe[]): FaultRow['watcher'] {
  const watchingProbe = (p: ReadinessProbe) => p.status === 200 && p.watcher?.startsWith('watching') === true
  const latest = new Map<string, ReadinessProbe>()
  const watching = () => [...latest.values()].filter(watchingProbe).map((p) => p.node).sort()
  const sorted = probes.filter((p) => p.at < phase.end).sort((a, b) => a.at - b.at)
  for (const p of sorted.filter((p) => p.at < phase.faultAt)) latest.set(p.node, p)
  const before = watching().join('+') || 'none'
  let gapS = 0
  let noneSince: number | undefined = before === 'none' ? phase.faultAt : undefined
  for (const p of sorted.filter((p) => p.at >= phase.faultAt)) {
    latest.set(p.node, p)
    if (watching().length === 0) noneSince ??= p.at
    else if (noneSince !== undefined) {
      gapS = Math.max(gapS, (p.at - noneSince) / 1000)
      noneSince = undefined
    }
  }
  if (noneSince !== undefined) gapS = Math.max(gapS, (phase.end - noneSince) / 1000)
  return { before, after: watching().join('+') || 'none', gapS, doubleS: overlapS(phase, sorted, watchingProbe) }
}

/** Seconds within the phase during which two nodes' watching intervals (consecutive probes both watching) overlap. */
function overlapS(phase: FaultPhase, sorted: readonly ReadinessProbe[], watchingProbe: (p: ReadinessProbe) => boolean): number {
  const edges: Array<{ at: number; delta: number }> = []
  const last = new Map<string, ReadinessProbe>()
  for (const p of sorted.filter((p) => p.at >= phase.start)) {
    const previous = last.get(p.node)
    if (previous !== undefined && watchingProbe(previous) && watchingProbe(p)) edges.push({ at: previous.at, delta: 1 }, { at: p.at, delta: -1 })
    last.set(p.node, p)
  }
  edges.sort((a, b) => a.at - b.at || a.delta - b.delta)
  let open = 0
  let since = 0
  let total = 0
  for (const edge of edges) {
    if (open >= 2 && edge.at > since) total += edge.at - since
    open += edge.delta
    since = edge.at
  }
  return total / 1000
}

function longestWithoutPrimary(phase: FaultPhase, probes: readonly PrimaryProbe[]): number {
  let longest = 0
  let since: number | undefined
  for (const p of probes.filter((p) => p.at >= phase.faultAt && p.at < phase.end)) {
    if (p.leader === undefined) since ??= p.at
    else if (since !== undefined) {
      longest = Math.max(longest, p.at - since)
      since = undefined
    }
  }
  if (since !== undefined) longest = Math.max(longest, phase.end - since)
  return longest / 1000
}

const seconds = (s: number) => s.toFixed(1)

/** "12" or "12 (9 with Retry-After)": HAProxy's and Kamailio's own answers, and whether they said when to retry. */
function proxyAnswers(requests: readonly MixRequest[]): string {
  const retry = requests.filter((r) => r.retryAfter !== undefined).length
  return retry === 0 ? String(requests.length) : `${requests.length} (${retry} with Retry-After)`
}

/** The Markdown table (one row per fault) and, below it, what failed in each. */
export function renderTable(rows: readonly FaultRow[]): string {
  const header = [
    'Fault', 'Held (s)', 'Requests', 'Failed', 'Which: lost node / window / other', 'Answers: 503+Retry-After / proxy / none / other',
    'Ready again (s)', 'Approvals lost', 'Decisions lost', 'Webhooks lost / dup.', 'Ledger watcher', 'No primary (s)',
  ]
  const lines = [`| ${header.join(' | ')} |`, `|${header.map(() => '---').join('|')}|`]
  for (const row of rows) {
    const { phase, losses, watcher } = row
    const held = phase.control !== true && phase.repairedAt > phase.faultAt ? seconds((phase.repairedAt - phase.faultAt) / 1000) : '-'
    const handover = watcher.before === watcher.after && watcher.gapS === 0
      ? `${watcher.after} kept it`
      : `${watcher.before} → ${watcher.after}, none for ${seconds(watcher.gapS)} s`
    lines.push(`| ${[
      `${phase.name}${phase.commit === 'async' ? ' (APPROVAL_COMMIT=async)' : ''}`, held, row.requests, row.failed.length,
      `${row.onLostNode.length} / ${row.inWindow.length} / ${row.outside.length}`,
      `${row.answered503.length} / ${proxyAnswers(row.byProxy)} / ${row.noAnswer.length} / ${row.wrongAnswer.length}`,
      row.readyAgainS === null ? 'never unready' : seconds(row.readyAgainS),
      `${losses.approvals.lost.length} of ${losses.approvals.acknowledged}`,
      `${losses.decisions.lost.length} of ${losses.decisions.acknowledged}`,
      `${losses.webhooks.lost.length} / ${losses.webhooks.duplicated} (of ${losses.webhooks.expected})`,
      `${handover}${watcher.doubleS > 0 ? `; **two at once for ${seconds(watcher.doubleS)} s**` : ''}`,
      row.noPrimaryS === 0 ? '0' : seconds(row.noPrimaryS),
    ].join(' | ')} |`)
  }
  const details = rows.map((row) => {
    const notes = row.phase.notes.length === 0 ? '' : ` (${row.phase.notes.join('; ')})`
    const name = `${row.phase.name}${row.phase.commit === 'async' ? ' (APPROVAL_COMMIT=async)' : ''}`
    return `- **${name}**${notes}: ${row.failed.length === 0 ? 'nothing failed' : `failed: ${summarizeRequests(row.failed)}`}`
  })
  return [...lines, '', ...details].join('\n')
}

const START = '<!-- fault-table:start -->'
const END = '<!-- fault-table:end -->'

/** Replaces the table between the markers of `docPath` (the current table replaces the earlier one). */
export function writeTableInto(docPath: string, table: string, heading: string): void {
  const doc = readFileSync(docPath, 'utf8')
  const from = doc.indexOf(START)
  const to = doc.indexOf(END)
  if (from === -1 || to < from) throw new Error(`${docPath} has no ${START} ... ${END} section`)
  writeFileSync(docPath, `${doc.slice(0, from + START.length)}\n${heading}\n\n${table}\n${doc.slice(to)}`)
}
