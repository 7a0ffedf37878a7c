import { check, CheckFailed, runChecks, type Check } from '../lib/checks.ts'
import { readUntilAccepted, reReadNote } from '../ledger/freshness.ts'
import type { LedgerTransaction } from '../ledger/ledger.ts'
import { checkApproverOwnsToken, checkDecidable, checkMethod, loadApproval, loaded, recordApproval, type DecideContext } from './decide-checks.ts'
import { verdictOf, type Verdict } from './verdict.ts'

export interface VerifyTransactionContext extends DecideContext {
  digest: string
  transaction?: LedgerTransaction
}

const loadTransaction = check<VerifyTransactionContext>('load_transaction', async (ctx) => {
  // A transaction executed a moment ago may not be indexed yet: re-read for a few seconds.
  const { value: transaction, waitedMs } = await readUntilAccepted(() => ctx.ledger.getTransaction(ctx.digest), (tx) => tx !== null, ctx.ledger.freshnessMs)
  if (transaction === null) {
    throw new CheckFailed('TRANSACTION_NOT_FOUND', `the ledger has no transaction with this digest${reReadNote(waitedMs)}; if it was executed just now, retry shortly`)
  }
  ctx.transaction = transaction
})

const checkSucceeded = check<VerifyTransactionContext>('check_transaction_status', (ctx) => {
  if (!ctx.transaction!.success) throw new CheckFailed('TRANSACTION_FAILED', 'the transaction did not execute successfully')
})

/** The transaction must emit ApprovalEvent for exactly this token and this approval number. */
const checkApprovalEvent = check<VerifyTransactionContext>('check_approval_event', (ctx) => {
  const approval = loaded(ctx)
  const wanted = ctx.ledger.approvalEventType
  const event = ctx.transaction!.events.find((e) =>
    e.type === wanted &&
    typeof e.json.object_id === 'string' && e.json.object_id.toLowerCase() === approval.objectId &&
    e.json.ref === approval.approvalNumber)
  if (event === undefined) {
    throw new CheckFailed('EVENT_MISSING', `the transaction emitted no ${wanted} for this token and approval number`)
  }
  ctx.approver = ctx.transaction!.sender
  ctx.proof = ctx.digest
})

/** verify_transaction: an `event` approval, proven by the owner's `kns::approve` call. */
export const VERIFY_TRANSACTION: readonly Check<VerifyTransactionContext>[] = [
  loadApproval,
  checkMethod('event'),
  checkDecidable,
  loadTransaction,
  checkSucceeded,
  checkApprovalEvent,
  checkApproverOwnsToken,
  recordApproval,
]

export async function verifyTransaction(ctx: VerifyTransactionContext): Promise<Verdict> {
  return verdictOf(await runChecks(VERIFY_TRANSACTION, ctx))
}
