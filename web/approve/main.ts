/**
 * The approval page, GET /approve?ref=<approvalNumber>: loads transaction_details, shows the
 * request with a live countdown, and approves through a Wallet Standard wallet (or, without one,
 * offers the ways that work: wallet apps, a QR code), denies, or takes "This wasn't me"; each
 * decision ends on a KNS confirmation screen with a link on to the vendor.
 */
import '../shared/base.css'
import '../shared/card.css'
import './approve.css'
import { ApiError } from '../shared/api.ts'
import { readPageConfig } from '../shared/page-config.ts'
import { approvalKind, cancelApproval, FlowError, readDetails, runApproval, waitForDecision, type Details } from './flow.ts'
import {
  el, finalStateOf, hideConfirm, hideWalletPicker, setBusy, setProgress, showAnswerWays, showConfirm, showCountdown, showError, showFinal,
  showRequest, showWalletPicker, type AnswerWays, type ConfirmKind,
} from './view.ts'
import {
  compatibleWallets, connectWallet, normalizeAddress, onWalletRegistered, requiredFeatures, shortAddress, suiWallets, type Wallet,
} from './wallet.ts'
import { drawQrCode, onTouchDevice, pageLink, WALLET_APPS } from './ways.ts'
import { takeLoginReturn, type LoginReturn } from './phone-session.ts'

const APPROVAL_NUMBER = /^[0-9a-f]{24}$/
/** Codes after which the request can no longer be answered: show its new state instead. */
const FINAL_CODES = new Set(['CANCELLED', 'EXPIRED', 'ALREADY_APPROVED'])

const config = readPageConfig()
/** Back from the login of "Approve with your phone number" (the request is in what this tab kept), or null. */
let loginReturn: LoginReturn | null = takeLoginReturn()
const ref = (loginReturn === null ? null : loginReturn.ok ? loginReturn.pending.ref : loginReturn.ref) ??
  new URLSearchParams(location.search).get('ref') ?? ''

let details: Details | null = null
/** Server clock minus device clock: the countdown follows the server, which decides expiry. */
let clockSkew = 0
let timer: ReturnType<typeof setInterval> | undefined
let busy = false
/** The wallet that connected with the owner's account, reused on retry. */
let chosen: Wallet | null = null

/**
 * The HTTP Date header is truncated to the second, so the server's clock is read as its
 * midpoint, and a skew under a second is the header's rounding, not a clock set wrong (taken
 * as is, it showed a countdown up to a second long).
 */
function skewFrom(serverDate: number | null): number {
  if (serverDate === null) return 0
  const skew = serverDate + 500 - Date.now()
  return Math.abs(skew) < 1000 ? 0 : skew
}

/**
 * Time left, by the server's clock; never more than the request's whole lifetime (a 900 s request
 * must not show 15:01 because the Date header's rounding put the server a moment behind).
 */
function remaining(): number {
  if (details === null) return 0
  const expiresAt = Date.parse(details.expiresAt)
  return Math.min(expiresAt - Date.parse(details.createdAt), expiresAt - (Date.now() + clockSkew))
}

function tick(): void {
  const left = remaining()
  showCountdown(left)
  if (left <= 0 && !busy) {
    clearInterval(timer)
    // Expired while open: the server refuses it from now on, so say so at once.
    showFinal('expired', details ?? undefined)
  }
}

/** The open request of watchDecision, ended when the page loads again. */
let watching: AbortController | undefined

/**
 * While the request is open here, a decision taken elsewhere (the owner's wallet app calling
 * kns::approve, another tab, the expiry) shows at once: one `transaction_details?wait=`
 * request held open at a time, never a poll. While an action of this page runs, its own
 * outcome is shown instead.
 */
async function watchDecision(current: Details): Promise<void> {
  watching?.abort()
  const stop = new AbortController()
  watching = stop
  let failures = 0
  while (!stop.signal.aborted && details === current && remaining() > 0) {
    try {
      const now = await waitForDecision(current.approvalNumber, remaining() / 1000, stop.signal)
      failures = 0
      if (stop.signal.aborted || now.status === 'pending') continue
      // Decided by this page's own action (approve, cancel): that action shows its outcome.
      if (busy) return
      clearInterval(timer)
      details = now
      return showFinal(finalStateOf(now), now)
    } catch {
      if (stop.signal.aborted) return
      // Offline for a moment: try again, more slowly each time.
      failures++
      await new Promise((resolve) => setTimeout(resolve, Math.min(30_000, 2000 * 2 ** failures)))
    }
  }
}

async function load(): Promise<void> {
  clearInterval(timer)
  watching?.abort()
  if (!APPROVAL_NUMBER.test(ref)) return showFinal('unknown')
  try {
    const { body, serverDate } = await readDetails(ref)
    details = body
    clockSkew = skewFrom(serverDate)
  } catch (err) {
    if (err instanceof ApiError && (err.status === 404 || err.status === 400)) return showFinal('unknown')
    return showFinal('unavailable', undefined, err instanceof Error ? err.message : undefined)
  }
  if (details.status !== 'pending') return showFinal(finalStateOf(details), details)
  showRequest(details, config)
  offerWays()
  tick()
  timer = setInterval(tick, 1000)
  void watchDecision(details)
  // Once: a reload after this must not reuse the login.
  const back = loginReturn
  loginReturn = null
  if (back !== null) void finishPhoneApproval(back)
}

function fail(err: unknown): void {
  const message = err instanceof Error && err.message ? err.message : 'Something went wrong. Please try again.'
  showError(message)
  setProgress('')
  busy = false
  setBusy(false)
  if (err instanceof FlowError && err.code !== undefined && FINAL_CODES.has(err.code)) void load()
  else if (remaining() <= 0) tick()
}

/** Starts approve or cancel: null when another action runs or nothing is loaded; else the request, with the page set busy. */
function beginAction(): Details | null {
  if (busy || details === null) return null
  busy = true
  setBusy(true)
  hideWalletPicker()
  showError(null)
  return details
}

/** How this browser can approve: a wallet here, or the ways that work without one. */
function currentWays(current: Details): AnswerWays {
  if (!current.wallet) return { kind: 'no-owner' }
  const kind = approvalKind(current, config)
  if (current.phoneLogin) return kind === 'transaction' ? { kind: 'phone-transaction' } : { kind: 'phone' }
  if (compatibleWallets(requiredFeatures(kind)).length > 0) return { kind: 'wallet' }
  const installed = suiWallets()
  const what = kind === 'transaction' ? 'execute Sui transactions' : 'sign messages'
  const unsuitable = installed.length > 0 ? `${installed.map((w) => w.name).join(', ')} cannot ${what}, which this request needs.` : null
  const link = pageLink(current.approvalNumber)
  return { kind: 'no-wallet', touch: onTouchDevice(), apps: WALLET_APPS.map((app) => ({ name: app.name, href: app.link(link) })), unsuitable }
}

let qrDrawn = false

/** Shows the answer that works in this browser, before anyone taps: again whenever a wallet registers. */
function offerWays(): void {
  if (details === null || details.status !== 'pending') return
  const ways = currentWays(details)
  showAnswerWays(ways)
  if (ways.kind === 'no-wallet' && !ways.touch && !qrDrawn) {
    qrDrawn = true
    drawQrCode(el('qr-code'), pageLink(details.approvalNumber)).catch(() => {
      // The encoder chunk did not load (offline): the text and the hint still say what to do.
      qrDrawn = false
      el('qr').hidden = true
    })
  }
}

/** Connects `wallet`, insists on the owner's account, then runs the approval. */
async function approveWith(wallet: Wallet): Promise<void> {
  const current = beginAction()
  if (current === null) return
  try {
    setProgress(`Connecting to ${wallet.name}…`)
    let accounts
    try {
      accounts = await connectWallet(wallet)
    } catch (err) {
      throw new FlowError(`${wallet.name} did not connect: ${err instanceof Error ? err.message : 'declined'}`, 'WALLET')
    }
    const owner = normalizeAddress(current.wallet!)
    const account = accounts.find((a) => normalizeAddress(a.address) === owner)
    if (account === undefined) {
      chosen = null
      const connected = accounts.map((a) => shortAddress(a.address)).join(', ') || 'no account'
      throw new FlowError(
        `This wallet does not own this phone number. You connected ${connected}, but only the owner ` +
        `${shortAddress(owner)} can approve. Switch to that account or wallet and try again.`, 'NOT_OWNER')
    }
    chosen = wallet
    await runApproval({ details: current, config, approver: { kind: 'wallet', wallet, account }, progress: setProgress })
    approved(current, account.address)
  } catch (err) {
    fail(err)
  }
}

/** KNS confirms, and the owner goes on to the vendor when ready (no redirect behind their back). */
function approved(current: Details, by: string): void {
  clearInterval(timer)
  setProgress('')
  showFinal('approved-here', { ...current, status: 'approved', approved: true, wallet: by })
}

/** "Approve with your phone number": off to the provider's login (the page comes back with an id_token). */
async function startPhoneApproval(): Promise<void> {
  const current = beginAction()
  if (current === null) return
  try {
    setProgress('Opening the login…')
    const { startPhoneLogin } = await import('./phone-login.ts')
    await startPhoneLogin(current.approvalNumber, config)
  } catch (err) {
    fail(err)
  }
}

/** Back from the login: salt, proof, a zkLogin signature, and the approval. */
async function finishPhoneApproval(back: LoginReturn): Promise<void> {
  if (!back.ok) return showError(back.message)
  const current = beginAction()
  if (current === null) return
  try {
    setProgress('Checking your login…')
    const { phoneSigner } = await import('./phone-login.ts')
    const sign = await phoneSigner(back.pending, back.idToken, current.wallet ?? '', setProgress)
    await runApproval({ details: current, config, approver: { kind: 'phone', sign }, progress: setProgress })
    approved(current, current.wallet!)
  } catch (err) {
    fail(err)
  }
}

function onApprove(): void {
  if (busy || details === null) return
  showError(null)
  if (details.phoneLogin) return void startPhoneApproval()
  const wallets = compatibleWallets(requiredFeatures(approvalKind(details, config)))
  if (chosen !== null && wallets.includes(chosen)) return void approveWith(chosen)
  if (wallets.length === 1) return void approveWith(wallets[0]!)
  if (wallets.length > 1) return showWalletPicker(wallets, (w) => void approveWith(w))
  // The wallet went away since the page offered Approve: offer what works instead (focus to it, Approve is gone).
  offerWays()
  el('no-wallet-heading').focus()
}

/** Deny or "This wasn't me": asks first, then cancels with the reason and confirms. */
function askToCancel(kind: ConfirmKind): void {
  if (busy || details === null) return
  showError(null)
  hideWalletPicker()
  showConfirm(kind, details)
}

function backFromConfirm(): void {
  if (busy) return
  const kind = el('confirm').dataset.kind
  hideConfirm()
  el(kind === 'not-me' ? 'not-me' : 'deny').focus()
}

async function onConfirmCancel(): Promise<void> {
  const kind = el('confirm').dataset.kind
  const reason = kind === 'not-me' ? 'not_me' : 'denied'
  const current = beginAction()
  if (current === null) return
  setProgress(reason === 'not_me' ? 'Cancelling the request…' : 'Denying the request…')
  try {
    await cancelApproval(current.approvalNumber, reason)
    clearInterval(timer)
    // Cancelling is idempotent and the first reason stays (an earlier try may have gone through):
    // say what is stored, which is what the vendor sees.
    const stored = await readDetails(current.approvalNumber).then(({ body }) => body.cancelReason ?? reason, () => reason)
    setProgress('')
    showFinal(stored === 'not_me' ? 'reported' : 'denied-here', { ...current, status: 'cancelled', cancelReason: stored })
  } catch (err) {
    hideConfirm()
    fail(err)
    // The confirmation's buttons are gone: back to the choice that opened it.
    el(kind === 'not-me' ? 'not-me' : 'deny').focus()
  }
}

el('approve').addEventListener('click', onApprove)
el('deny').addEventListener('click', () => askToCancel('deny'))
el('not-me').addEventListener('click', () => askToCancel('not-me'))
el('confirm-yes').addEventListener('click', () => void onConfirmCancel())
el('confirm-no').addEventListener('click', backFromConfirm)
el('confirm').addEventListener('keydown', (event) => { if (event.key === 'Escape') backFromConfirm() })
el('retry-load').addEventListener('click', () => void load())
onWalletRegistered(() => { if (!busy) offerWays() })
void load()
