import type { Database } from '../db/engine.ts'
import { lookupByKey } from '../db/coalesce.ts'
import { NotFoundError } from '../errors.ts'
import type { Ledger } from '../ledger/ledger.ts'
import { normalizeSuiAddress } from '@mysten/sui/utils'
import { decidedDetails, fromRow, statusAt, type Approval, type ApprovalRow } from './approval.ts'
import type { TransactionDetails } from '../contract/api-types.ts'
import { signMessageFor } from './sign-message.ts'

/** The answer of GET /numsys/transaction_details: the contract's type (derived from its schema). */
export type { TransactionDetails }

/**
 * The approval and its number's phone-login address (the zkAddress of the number's account,
 * null without one) in one statement: this is the route the approval page polls and vendors
 * wait on, and a second query per request halved its rate on PostgreSQL. A users row never
 * changes once created, so reading it with the approval is as current as reading it apart.
 * Concurrent requests share one statement (lookupByKey), as findApproval's do, and while one
 * such statement runs the next requests wait for it and go together: polled by many clients,
 * the requests arrive a few per event-loop turn, and on PostgreSQL each statement costs the
 * server a round trip's work (0.45 -> 0.58 of the bare route in A/B runs of `npm run bench`).
 */
const WITH_LOGIN_ADDRESS = 'SELECT a.*, u.zk_address AS phone_login_address FROM approvals a LEFT JOIN users u ON u.phone = a.phone_number'

async function findWithLoginAddress(db: Database, ref: string): Promise<{ approval: Approval; loginAddress: string | null } | null> {
  const row = await lookupByKey<ApprovalRow & { phone_login_address: string | null }>(db,
    `${WITH_LOGIN_ADDRESS} WHERE a.approval_number = $1`, `${WITH_LOGIN_ADDRESS} WHERE a.approval_number = ANY($1::text[])`,
    'approval_number', ref, { inFlight: 1 })
  return row === undefined ? null : { approval: fromRow(row), loginAddress: row.phone_login_address ?? null }
}

/**
 * `wallet` is the address that must approve (the token's current owner) until the request
 * is approved, then the address that did. It is left out only when the token no longer has
 * an owning address. `phoneLogin` says that address is the number's own phone-login address
 * (this service's OpenID provider): the owner approves by logging in with the number.
 */
export async function transactionDetails(deps: { db: Database; ledger: Ledger; serviceUrl: string }, ref: string): Promise<TransactionDetails> {
  const found = await findWithLoginAddress(deps.db, ref)
  if (found === null) throw new NotFoundError('unknown approval number', { field: 'ref' })
  const { approval, loginAddress } = found
  const wallet = approval.status === 'approved' ? approval.wallet : (await deps.ledger.getToken(approval.objectId))?.owner ?? null
  const phoneLogin = wallet !== null && loginAddress !== null && normalizeSuiAddress(wallet) === normalizeSuiAddress(loginAddress)
  return present(approval, wallet, phoneLogin, deps.serviceUrl)
}

function present(a: Approval, wallet: string | null, phoneLogin: boolean, serviceUrl: string): TransactionDetails {
  const { wallet: _decidedBy, ...fixed } = decidedDetails(a)
  const details: TransactionDetails = { ...fixed, status: statusAt(a, Date.now()), signMessage: signMessageFor(a, serviceUrl), phoneLogin }
  if (wallet !== null) details.wallet = wallet
  return details
}
