import { Compile } from 'typebox/compile'
import { SESSION_LIMITS, SessionInput, type Network } from '../../contract/stats-schemas.ts'
import { EARLIEST_MS, parseInstant } from '../time.ts'

/** A session as stored, before its clientId is hashed. */
export interface Session {
  sessionId: string
  network: Network
  nodeUid: string
  clientId: string
  start: number
  end: number
  bytesUp: number
  bytesDown: number
}

/** Clocks of reporting nodes drift: a start up to this far ahead of ours is accepted. */
export const FUTURE_TOLERANCE_MS = 5 * 60_000

const checker = Compile(SessionInput)

/** Fields whose schema is a union: the first branch's message would mislead. */
const UNION_MESSAGES: Record<string, string> = {
  network: 'network must be "gateway" or "wifi"',
  start: 'start must be an ISO 8601 date-time with a zone, or epoch milliseconds before 2100',
  end: 'end must be an ISO 8601 date-time with a zone, or epoch milliseconds before 2100',
}

function toMs(value: string | number, field: string): number {
  return typeof value === 'number' ? value : parseInstant(value, field)
}

export type Checked = { session: Session; reason?: undefined } | { session?: undefined; reason: string }

/** Validates one ingested value; the reason names the field at fault. */
export function checkSession(value: unknown, now: number): Checked {
  if (!checker.Check(value)) {
    const first = checker.Errors(value)[0]
    const path = first?.instancePath.replace(/^\//, '').replace(/\//g, '.') ?? ''
    const params = first?.params as { requiredProperties?: string[] } | undefined
    if (first?.keyword === 'required' && params?.requiredProperties) return { reason: `${params.requiredProperties.join(', ')} is required` }
    return { reason: UNION_MESSAGES[path] ?? `${path === '' ? 'session' : path} ${first?.message ?? 'is invalid'}` }
  }
  const input = value as SessionInput
  let start: number
  let end: number
  try {
    start = toMs(input.start, 'start')
    end = toMs(input.end, 'end')
  } catch (err) {
    return { reason: (err as Error).message.replace(/^body: /, '') }
  }
  if (start < EARLIEST_MS) return { reason: 'start is before 2000-01-01 (epoch milliseconds expected)' }
  if (start > now + FUTURE_TOLERANCE_MS) return { reason: 'start is in the future' }
  if (end < start) return { reason: 'end is before start' }
  if (end - start > SESSION_LIMITS.durationMs) return { reason: 'end is more than 31 days after start' }
  return {
    session: {
      sessionId: input.sessionId, network: input.network, nodeUid: input.nodeUid, clientId: input.clientId,
      start, end, bytesUp: input.bytesUp, bytesDown: input.bytesDown,
    },
  }
}

export interface BadLine { index: number; reason: string }

/** Checks a whole batch: all sessions, or every bad line (a batch is taken whole or not at all). */
export function checkBatch(values: readonly unknown[], now: number, firstIndex = 0): { sessions: Session[]; errors: BadLine[] } {
  const sessions: Session[] = []
  const errors: BadLine[] = []
  values.forEach((value, i) => {
    const checked = checkSession(value, now)
    if (checked.session !== undefined) sessions.push(checked.session)
    else errors.push({ index: firstIndex + i, reason: checked.reason })
  })
  return { sessions, errors }
}
