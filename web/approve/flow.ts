/** What "Approve" and "Cancel" do once a wallet account is chosen: wallet, then the KNS API. */
import { ApiError, postJson } from '../shared/api.ts'
import type { PageConfig } from '../shared/page-config.ts'
import { ledgerApproveMessage } from '../../src/contract/approve-text.ts'
import type { ApprovalVerdict, TransactionDetails } from '../../src/contract/api-types.ts'
import { signPersonalMessage, type Wallet, type WalletAccount } from './wallet.ts'

/** GET /numsys/transaction_details, and the verdict of verify_signature / verify_transaction / approval-cancel: the API's own types. */
export type Details = TransactionDetails
export type Verdict = ApprovalVerdict

/** A failure to show to the user; `code` is the API's when there is one. */
export class FlowError extends Error {
  readonly code: string | undefined
  constructor(message: string, code?: string) {
    super(message)
    this.code = code
  }
}

/** How this approval is made: decides the wallet features needed. */
export function approvalKind(details: Details, config: PageConfig): 'personal-message' | 'transaction' {
  return details.method === 'event' && config.ledger === 'sui' ? 'transaction' : 'personal-message'
}

export interface FlowContext {
  details: Details
  config: PageConfig
  wallet: Wallet
  account: WalletAccount
  progress(text: string): void
}

/** Wallet errors are plain Errors with the wallet's own wording ("User rejected the request"). */
async function fromWallet<T>(step: Promise<T>): Promise<T> {
  try {
    return await step
  } catch (err) {
    const reason = err instanceof Error && err.message ? err.message : 'the request was declined'
    throw new FlowError(`Your wallet did not approve: ${reason}`, 'WALLET')
  }
}

async function fromApi<T>(step: Promise<{ body: T }>): Promise<T> {
  try {
    return (await step).body
  } catch (err) {
    if (err instanceof ApiError) throw new FlowError(err.message, err.code)
    throw err
  }
}

function check(verdict: Verdict): void {
  if (!verdict.success) throw new FlowError(verdict.error ?? 'The approval was not accepted.', verdict.code)
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** verify_transaction; on Sui the digest can reach the indexer a little after the wallet returns it. */
async function verifyTransaction(approvalNumber: string, digest: string, patient: boolean): Promise<void> {
  const deadline = Date.now() + (patient ? 20_000 : 0)
  for (;;) {
    const verdict = await fromApi(postJson<Verdict>('/numsys/verify_transaction', { approvalNumber, digest }))
    if (verdict.success || verdict.code !== 'TRANSACTION_NOT_FOUND' || Date.now() >= deadline) return check(verdict)
    await sleep(1000)
  }
}

/** Runs the approval for the chosen account; resolves when the service has recorded it. */
export async function runApproval(ctx: FlowContext): Promise<void> {
  const { details, config, wallet, account, progress } = ctx
  const ref = details.approvalNumber
  if (details.method === 'sign') {
    progress('Confirm the message in your wallet…')
    const signature = await fromWallet(signPersonalMessage(wallet, account, details.signMessage))
    progress('Checking the signature…')
    check(await fromApi(postJson<Verdict>('/numsys/verify_signature', { approvalNumber: ref, signature })))
    return
  }
  if (config.ledger === 'local') {
    progress('Confirm the approval in your wallet…')
    const text = ledgerApproveMessage(details.objectId, ref)
    const signature = await fromWallet(signPersonalMessage(wallet, account, text))
    progress('Recording the approval on the ledger…')
    const { digest } = await fromApi(postJson<{ digest: string }>('/ledger/v1/approve', { objectId: details.objectId, ref, signature }))
    progress('Checking the ledger transaction…')
    await verifyTransaction(ref, digest, false)
    return
  }
  progress('Confirm the transaction in your wallet…')
  const { executeApprove } = await import('./sui-transaction.ts')
  const digest = await fromWallet(executeApprove(wallet, account, {
    packageId: config.callPackageId, objectId: details.objectId, ref, network: config.suiNetwork,
  }))
  progress('Checking the transaction on Sui…')
  await verifyTransaction(ref, digest, true)
}

/** POST /numsys/approval-cancel. */
export async function cancelApproval(approvalNumber: string): Promise<void> {
  check(await fromApi(postJson<Verdict>('/numsys/approval-cancel', { approvalNumber })))
}

/** The vendor's redirect URL, only if it is http(s) (the API validates it too). */
export function safeRedirect(url: string): string | null {
  try {
    const parsed = new URL(url)
    return parsed.protocol === 'https:' || parsed.protocol === 'http:' ? parsed.href : null
  } catch {
    return null
  }
}
