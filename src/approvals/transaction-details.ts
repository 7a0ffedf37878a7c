import type { Database } from '../db/engine.ts'
import { NotFoundError } from '../errors.ts'
import type { Ledger } from '../ledger/ledger.ts'
import { phoneLoginAddress } from '../identity/register.ts'
import { normalizeSuiAddress } from '@mysten/sui/utils'
import { decidedDetails, findApproval, statusAt, type Approval } from './approval.ts'
import type { TransactionDetails } from '../contract/api-types.ts'
import { signMessageFor } from './sign-message.ts'

/** The answer of GET /numsys/transaction_details: the contract's type (derived from its schema). */
export type { TransactionDetails }

/**
 * `wallet` is the address that must approve (the token's current owner) until the request
 * is approved, then the address that did. It is left out only when the token no longer has
 * an owning address. `phoneLogin` says that address is the number's own phone-login address
 * (this service's OpenID provider): the owner approves by logging in with the number.
 */
export async function transactionDetails(deps: { db: Database; ledger: Ledger; serviceUrl: string }, ref: string): Promise<TransactionDetails> {
  const approval = await findApproval(deps.db, ref)
  if (approval === null) throw new NotFoundError('unknown approval number', { field: 'ref' })
  const wallet = approval.status === 'approved' ? approval.wallet : (await deps.ledger.getToken(approval.objectId))?.owner ?? null
  const loginAddress = approval.phoneNumber === null ? null : await phoneLoginAddress(deps.db, approval.phoneNumber)
  const phoneLogin = wallet !== null && loginAddress !== null && normalizeSuiAddress(wallet) === normalizeSuiAddress(loginAddress)
  return present(approval, wallet, phoneLogin, deps.serviceUrl)
}

function present(a: Approval, wallet: string | null, phoneLogin: boolean, serviceUrl: string): TransactionDetails {
  const { wallet: _decidedBy, ...fixed } = decidedDetails(a)
  const details: TransactionDetails = { ...fixed, status: statusAt(a, Date.now()), signMessage: signMessageFor(a, serviceUrl), phoneLogin }
  if (wallet !== null) details.wallet = wallet
  return details
}
