import type { Database } from '../db/engine.ts'
import { NotFoundError } from '../errors.ts'
import type { Ledger } from '../ledger/ledger.ts'
import { decidedDetails, findApproval, statusAt, type Approval } from './approval.ts'
import type { TransactionDetails } from '../contract/api-types.ts'
import { signMessageFor } from './sign-message.ts'

/** The answer of GET /numsys/transaction_details: the contract's type (derived from its schema). */
export type { TransactionDetails }

/**
 * `wallet` is the address that must approve (the token's current owner) until the request
 * is approved, then the address that did. It is left out only when the token no longer has
 * an owning address.
 */
export async function transactionDetails(deps: { db: Database; ledger: Ledger; serviceUrl: string }, ref: string): Promise<TransactionDetails> {
  const approval = await findApproval(deps.db, ref)
  if (approval === null) throw new NotFoundError('unknown approval number', { field: 'ref' })
  const wallet = approval.status === 'approved' ? approval.wallet : (await deps.ledger.getToken(approval.objectId))?.owner ?? null
  return present(approval, wallet, deps.serviceUrl)
}

function present(a: Approval, wallet: string | null, serviceUrl: string): TransactionDetails {
  const { wallet: _decidedBy, ...fixed } = decidedDetails(a)
  const details: TransactionDetails = { ...fixed, status: statusAt(a, Date.now()), signMessage: signMessageFor(a, serviceUrl) }
  if (wallet !== null) details.wallet = wallet
  return details
}
