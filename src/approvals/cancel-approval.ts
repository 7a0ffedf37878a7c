import type { Database } from '../db/engine.ts'
import { NotFoundError } from '../errors.ts'
import { findApproval, markCancelled, statusAt, type CancelReason } from './approval.ts'
import { failed, type Verdict } from './verdict.ts'

/**
 * The user declines on the approval page. Knowing the approval number (96 random bits, only
 * in the approval URL) is what entitles the caller, as for the page itself. Cancelling twice
 * is idempotent (the first reason stays); an approved or expired request can no longer be cancelled.
 */
export async function cancelApproval(db: Database, approvalNumber: string, reason: CancelReason = 'denied'): Promise<Verdict> {
  const approval = await findApproval(db, approvalNumber)
  if (approval === null) throw new NotFoundError('unknown approval number', { field: 'approvalNumber' })
  const now = Date.now()
  if (await markCancelled(db, approvalNumber, reason, now)) return { success: true }
  const current = (await findApproval(db, approvalNumber))!
  const status = statusAt(current, now)
  if (status === 'cancelled') return { success: true }
  if (status === 'approved') return failed('ALREADY_APPROVED', 'this approval request was already approved')
  return failed('EXPIRED', 'this approval request has expired')
}
