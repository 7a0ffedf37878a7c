import type { Database } from '../db/engine.ts'
import { NotFoundError } from '../errors.ts'
import { check, CheckFailed } from '../lib/checks.ts'
import { readUntilAccepted, reReadNote } from '../ledger/freshness.ts'
import type { Ledger } from '../ledger/ledger.ts'
import { findApproval, markApproved, statusAt, type Approval, type Method } from './approval.ts'

/** What the signature and transaction pipelines share. */
export interface DecideContext {
  db: Database
  ledger: Ledger
  approvalNumber: string
  now: number
  approval?: Approval
  /** Set when the approval was approved before this request (the idempotent path). */
  alreadyApproved?: boolean
  /** The address that proved ownership (signer or transaction sender). */
  approver?: string
  /**
   * Other addresses the same proof stands for (a zkLogin proof: the padded and the legacy
   * derivation): the owner may hold the token under any of them.
   */
  approverAliases?: readonly string[]
  /** The signature or digest that proved it. */
  proof?: string
}

export function loaded(ctx: DecideContext): Approval {
  if (ctx.approval === undefined) throw new Error('pipeline order: load_approval must run first')
  return ctx.approval
}

/** An unknown approval number is not a verdict but a missing resource: 404. */
export const loadApproval = check<DecideContext>('load_approval', async (ctx) => {
  const approval = await findApproval(ctx.db, ctx.approvalNumber)
  if (approval === null) throw new NotFoundError('unknown approval number', { field: 'approvalNumber' })
  ctx.approval = approval
})

export function checkMethod(method: Method) {
  return check<DecideContext>('check_method', (ctx) => {
    const approval = loaded(ctx)
    if (approval.method !== method) {
      const proof = approval.method === 'sign' ? 'a wallet signature (verify_signature)' : 'a ledger transaction (verify_transaction)'
      throw new CheckFailed('WRONG_METHOD', `this approval uses method "${approval.method}" and takes ${proof}`)
    }
  })
}

export const checkDecidable = check<DecideContext>('check_state', (ctx) => {
  const status = statusAt(loaded(ctx), ctx.now)
  if (status === 'cancelled') throw new CheckFailed('CANCELLED', 'this approval request was cancelled')
  if (status === 'expired') throw new CheckFailed('EXPIRED', 'this approval request has expired')
  ctx.alreadyApproved = status === 'approved'
  return status
})

/**
 * The approver must own the token now; on the idempotent path, it must be the address that
 * approved, so a second proof from anyone else never succeeds.
 */
export const checkApproverOwnsToken = check<DecideContext>('check_owner', async (ctx) => {
  const approval = loaded(ctx)
  const approver = ctx.approver!
  const isApprover = (address: string | null) => address !== null && (address === approver || (ctx.approverAliases?.includes(address) ?? false))
  if (ctx.alreadyApproved) {
    if (!isApprover(approval.wallet)) throw new CheckFailed('WRONG_SIGNER', `already approved by another address (${approval.wallet})`)
    ctx.approver = approval.wallet!
    return ctx.approver
  }
  // Fresh: the decision must not rest on a cached owner from before a transfer; and an
  // indexer that has not seen a transfer yet is given a few seconds to catch up.
  const { value: token, waitedMs } = await readUntilAccepted(
    () => ctx.ledger.getToken(approval.objectId, { fresh: true }),
    (t) => t !== null && isApprover(t.owner),
    ctx.ledger.freshnessMs,
  )
  if (token === null) throw new CheckFailed('TOKEN_NOT_FOUND', `the number-system token ${approval.objectId} does not exist${reReadNote(waitedMs)}`)
  if (!isApprover(token.owner)) {
    throw new CheckFailed('WRONG_SIGNER', `${approver} does not own the number-system token (owner: ${token.owner ?? 'not an address'})${reReadNote(waitedMs)}`)
  }
  ctx.approver = token.owner!
  return ctx.approver
})

export const recordApproval = check<DecideContext>('record_approval', async (ctx) => {
  if (ctx.alreadyApproved) return 'already approved'
  const approval = loaded(ctx)
  if (await markApproved(ctx.db, approval.approvalNumber, ctx.approver!, ctx.proof!, ctx.now)) return 'approved'
  // Someone else decided it between our read and our write: re-judge against the new state.
  const now = await findApproval(ctx.db, approval.approvalNumber)
  if (now?.status === 'approved' && now.wallet === ctx.approver) return 'already approved'
  if (now?.status === 'cancelled') throw new CheckFailed('CANCELLED', 'this approval request was cancelled')
  if (now?.status === 'approved') throw new CheckFailed('WRONG_SIGNER', `already approved by another address (${now.wallet})`)
  throw new CheckFailed('EXPIRED', 'this approval request has expired')
})
