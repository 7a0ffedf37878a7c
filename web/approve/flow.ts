/** What "Approve" and "Cancel" do once a wallet account is chosen: wallet, then the KNS API. */
import { ApiError, getJson, postJson } from '../shared/api.ts'
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

/**
 * Who approves: a wallet account (which can also execute a Sui transaction), or the phone-login
 * address (personal-message signatures only; web/approve/phone-login.ts).
 */
export type Approver =
  | { kind: 'wallet'; wallet: Wallet; account: WalletAccount }
  | { kind: 'phone'; sign(text: string): Promise<string> }

export interface FlowContext {
  details: Details
  config: PageConfig
  approver: Approver
  progress(text: string): void
}

/** A personal-message signature over `text` by the approver (the wallet asks its user first). */
async function signText(approver: Approver, text: string, progress: (text: string) => void): Promise<string> {
  if (approver.kind === 'phone') {
    progress('Signing as the owner of this number…')
    return approver.sign(text)
  }
  progress('Confirm the message in your wallet…')
  return fromWallet(signPersonalMessage(approver.wallet, approver.account, text))
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

/** An API call's body, its failure as a FlowError with the API's message and code. */
export async function fromApi<T>(step: Promise<{ body: T }>): Promise<T> {
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

/** GET /numsys/transaction_details for `ref` (with `wait`, held until a decision or the time is up), with the server's Date. */
export function readDetails(ref: string, options: { wait?: number; timeoutMs?: number; signal?: AbortSignal } = {}) {
  const { wait, ...request } = options
  return getJson<Details>(`/numsys/transaction_details?ref=${encodeURIComponent(ref)}${wait === undefined ? '' : `&wait=${wait}`}`, request)
}

/** Longest single `wait` the page asks for: under the API's 60 s and a proxy's read timeout. */
const WAIT_S = 50

/**
 * GET transaction_details?wait=: answers when the approval is decided (here, by the ledger
 * watcher, in another tab, by the owner's wallet app) or when the wait is over. One request
 * held open instead of polling.
 */
export async function waitForDecision(ref: string, seconds: number, signal?: AbortSignal): Promise<Details> {
  const wait = Math.max(1, Math.min(WAIT_S, Math.ceil(seconds)))
  const options = { timeoutMs: (wait + 15) * 1000, ...(signal === undefined ? {} : { signal }) }
  const started = Date.now()
  const body = (await readDetails(ref, { wait, ...options })).body
  // Still pending long before the wait was up: the server did not hold the request (WAIT_MAX_S=0,
  // too many waiting, shutting down). Pause before the next one, longer each time it happens.
  if (body.status === 'pending' && Date.now() - started < Math.min(wait * 1000, 1000) / 2) {
    early = Math.min(early + 1, 5)
    await new Promise((resolve) => setTimeout(resolve, 1000 * 2 ** early))
  } else {
    early = 0
  }
  return body
}

/** Answers in a row that came back early (the pause after the next one doubles, up to 32 s). */
let early = 0

/** How long the page waits for Sui's indexer (and the watcher) to see a transaction the wallet executed. */
const INDEXER_PATIENCE_MS = 30_000

/**
 * verify_transaction, once. On Sui the digest can reach the indexer a little after the wallet
 * returns it: then the service's ledger watcher approves the request when it sees the event,
 * and the page waits for that decision rather than asking again and again.
 */
async function verifyTransaction(approvalNumber: string, digest: string, patient: boolean): Promise<void> {
  const verdict = await fromApi(postJson<Verdict>('/numsys/verify_transaction', { approvalNumber, digest }))
  if (verdict.success || verdict.code !== 'TRANSACTION_NOT_FOUND' || !patient) return check(verdict)
  const deadline = Date.now() + INDEXER_PATIENCE_MS
  for (let left = INDEXER_PATIENCE_MS; left > 0; left = deadline - Date.now()) {
    const now = await fromApi(waitForDecision(approvalNumber, left / 1000).then((body) => ({ body })))
    if (now.status === 'approved') return
    if (now.status !== 'pending') throw new FlowError(`The request was ${now.status} before your transaction was seen.`, now.status.toUpperCase())
  }
  // Still not seen: the service's own reason, once more.
  check(await fromApi(postJson<Verdict>('/numsys/verify_transaction', { approvalNumber, digest })))
}

/** Runs the approval for the chosen account; resolves when the service has recorded it. */
export async function runApproval(ctx: FlowContext): Promise<void> {
  const { details, config, approver, progress } = ctx
  const ref = details.approvalNumber
  if (details.method === 'sign') {
    const signature = await signText(approver, details.signMessage, progress)
    progress('Checking the signature…')
    check(await fromApi(postJson<Verdict>('/numsys/verify_signature', { approvalNumber: ref, signature })))
    return
  }
  if (config.ledger === 'local') {
    const signature = await signText(approver, ledgerApproveMessage(details.objectId, ref), progress)
    progress('Recording the approval on the ledger…')
    const { digest } = await fromApi(postJson<{ digest: string }>('/ledger/v1/approve', { objectId: details.objectId, ref, signature }))
    progress('Checking the ledger transaction…')
    await verifyTransaction(ref, digest, false)
    return
  }
  // A phone-number login holds no SUI to pay for a transaction: the page never offers it here.
  if (approver.kind !== 'wallet') throw new FlowError('This request needs a Sui transaction from a wallet.', 'UNSUPPORTED')
  progress('Confirm the transaction in your wallet…')
  const { executeApprove } = await import('./sui-transaction.ts')
  const digest = await fromWallet(executeApprove(approver.wallet, approver.account, {
    packageId: config.callPackageId, objectId: details.objectId, ref, network: config.suiNetwork,
  }))
  progress('Checking the transaction on Sui…')
  await verifyTransaction(ref, digest, true)
}

/** POST /numsys/approval-cancel: the owner said no (`denied`) or did not make the request (`not_me`). */
export async function cancelApproval(approvalNumber: string, reason: 'denied' | 'not_me'): Promise<void> {
  check(await fromApi(postJson<Verdict>('/numsys/approval-cancel', { approvalNumber, reason })))
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
