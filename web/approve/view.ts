/**
 * DOM updates for the approval page. Every vendor-supplied string goes through textContent:
 * the page never builds HTML from data.
 */
import { maskPhone } from '../shared/mask-phone.ts'
import type { PageConfig } from '../shared/page-config.ts'
import type { Details } from './flow.ts'
import { safeRedirect } from './flow.ts'
import { shortAddress, type Wallet } from './wallet.ts'

export function el<T extends HTMLElement = HTMLElement>(id: string): T {
  const found = document.getElementById(id)
  if (found === null) throw new Error(`#${id} is missing from the page`)
  return found as T
}

function setField(name: string, text: string): void {
  for (const node of document.querySelectorAll<HTMLElement>(`[data-field="${name}"]`)) node.textContent = text
}

export function methodLabel(details: Details, config: PageConfig): string {
  if (details.phoneLogin) {
    if (details.method === 'sign') return 'Log in with your phone number and a code sent to it (no fee)'
    return config.ledger === 'sui' ? 'Sui transaction from a wallet holding this address (network fee)' : 'Approve on the KNS ledger by logging in with your phone number'
  }
  if (details.method === 'sign') return 'Sign a message in your wallet (no fee)'
  return config.ledger === 'sui' ? 'Sui transaction from your wallet (network fee)' : 'Approve on the KNS ledger with your wallet'
}

/** `14:59`, or `2 h 05 min` above an hour; never negative. */
export function formatRemaining(ms: number): string {
  const s = Math.max(0, Math.ceil(ms / 1000))
  if (s >= 3600) return `${Math.floor(s / 3600)} h ${String(Math.floor((s % 3600) / 60)).padStart(2, '0')} min`
  return `${Math.floor(s / 60)}:${String(s % 60).padStart(2, '0')}`
}

function finishLoading(): void {
  el('loading').hidden = true
  document.getElementById('loading-label')?.remove()
  el('main').setAttribute('aria-busy', 'false')
}

/** A moment in the reader's own time zone and words: "24 Nov 2026, 14:05". */
function setTime(name: string, iso: string): void {
  const node = document.querySelector<HTMLTimeElement>(`time[data-field="${name}"]`)!
  node.dateTime = iso
  node.textContent = new Date(iso).toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'short' })
}

export function showRequest(details: Details, config: PageConfig): void {
  setField('vendorBrand', details.vendorBrand)
  setField('title', details.title)
  setField('message', details.message)
  setField('phone', details.phoneNumber ? maskPhone(details.phoneNumber) : 'Not known')
  setField('referenceNumber', details.referenceNumber)
  setTime('createdAt', details.createdAt)
  setTime('expiresAt', details.expiresAt)
  // What approving does, in plain words; the mechanics stay behind "Technical details".
  setField('what', `Approving tells ${details.vendorBrand} that you, the owner of this phone number, agree to this request. ` +
    `It does not transfer your number or your funds. Check that the reference matches the one ${details.vendorBrand} shows you. ` +
    'If you did not ask for this, do not approve it: choose "This wasn\'t me".')
  setField('method', methodLabel(details, config))
  const owner = document.querySelector<HTMLElement>('[data-field="owner"]')!
  owner.textContent = details.wallet ? shortAddress(details.wallet) : 'None'
  if (details.wallet) owner.title = details.wallet
  document.title = `Approve: ${details.title} · ${details.vendorBrand}`
  finishLoading()
  el('final').hidden = true
  el('request').hidden = false
}

export function showCountdown(remainingMs: number): void {
  const node = el('countdown')
  node.textContent = formatRemaining(remainingMs)
  node.classList.toggle('urgent', remainingMs < 60_000)
}

/**
 * Where the page ends. `approved`, `cancelled`, `reported` and `expired` are read from the API
 * (another tab, the wallet app, a reload); `approved-here` and `denied-here` follow this page's
 * own action and say so.
 */
export type FinalState = 'approved' | 'approved-here' | 'denied-here' | 'cancelled' | 'reported' | 'expired' | 'unknown' | 'unavailable'

interface FinalCopy {
  heading: string
  text: (d?: Details) => string
  /** What to do next, as a numbered list. */
  steps?: (d?: Details) => string[]
  /** The vendor's page the link leads to (none: no link). */
  link?: { to: 'success' | 'cancel'; label: (vendor: string) => string }
}

const FINAL_TEXT: Record<FinalState, FinalCopy> = {
  approved: {
    heading: 'Already approved',
    text: (d) => `This request was approved${d?.wallet ? ` by wallet ${shortAddress(d.wallet)}` : ''}. Nothing more to do.`,
    link: { to: 'success', label: (vendor) => `Back to ${vendor}` },
  },
  'approved-here': {
    heading: 'Approved',
    text: (d) => `You approved this request. ${d?.vendorBrand ?? 'The vendor'} can see your answer now.`,
    link: { to: 'success', label: (vendor) => `Continue to ${vendor}` },
  },
  'denied-here': {
    heading: 'Request denied',
    text: (d) => `You said no. ${d?.vendorBrand ?? 'The vendor'} can see your answer now, and this request can no longer be approved.`,
    link: { to: 'cancel', label: (vendor) => `Back to ${vendor}` },
  },
  cancelled: {
    heading: 'Request cancelled',
    text: () => 'This request was cancelled. It can no longer be approved.',
    link: { to: 'cancel', label: (vendor) => `Back to ${vendor}` },
  },
  reported: {
    heading: 'Cancelled: you did not ask for this',
    text: (d) => `Nothing was approved, and ${d?.vendorBrand ?? 'the vendor'} can see that you did not make this request. ` +
      'Someone may be trying to take over your phone number. What to do now:',
    steps: (d) => [
      'Do not approve any request you did not make, even if someone calls or texts you about it.',
      'Call your mobile operator on the number on its website or your bill (not one from a message). Say someone may be trying ' +
        'to move your number to a new SIM and ask them to lock it.',
      `Tell ${d?.vendorBrand ?? 'the company that sent this'} you did not ask for this${d ? `, quoting reference ${d.referenceNumber}` : ''}.`,
      'Change the passwords of accounts that send codes to this number.',
    ],
  },
  expired: {
    heading: 'Request expired',
    text: (d) => `This request was not answered in time and can no longer be approved.${d ? ` If you still need it, ask ${d.vendorBrand} to send a new one.` : ''}`,
    link: { to: 'cancel', label: (vendor) => `Back to ${vendor}` },
  },
  unknown: {
    heading: 'Request not found',
    text: () => 'This link does not match any approval request. Check that you opened the whole link you were sent.',
  },
  unavailable: { heading: 'Could not load the request', text: () => 'The service could not be reached.' },
}

/**
 * The mark above each final heading: a tick for an approval (whichever way it was seen), a cross
 * for a request that can no longer be approved because it was said no to or cancelled. It repeats
 * the heading, which carries the words, so it stays hidden from screen readers (aria-hidden).
 * Keyed here by every state, so a new state cannot fall back to an unstyled mark.
 */
export const FINAL_ICON: Record<FinalState, 'tick' | 'cross' | 'warning' | 'question'> = {
  approved: 'tick',
  'approved-here': 'tick',
  'denied-here': 'cross',
  cancelled: 'cross',
  reported: 'warning',
  expired: 'warning',
  unknown: 'question',
  unavailable: 'warning',
}

/** The final state of a decided request as the API reports it. */
export function finalStateOf(details: Details): FinalState {
  if (details.status === 'cancelled') return details.cancelReason === 'not_me' ? 'reported' : 'cancelled'
  return details.status === 'pending' ? 'unknown' : details.status
}

/** A request that cannot be answered (or could not be loaded). Moves focus to the heading. */
export function showFinal(state: FinalState, details?: Details, reason?: string): void {
  const section = el('final')
  section.dataset.state = state
  section.dataset.icon = FINAL_ICON[state]
  const copy = FINAL_TEXT[state]
  el('final-vendor').textContent = details ? `Request from ${details.vendorBrand}` : ''
  el('final-vendor').hidden = details === undefined
  el('final-heading').textContent = copy.heading
  el('final-text').textContent = reason ?? copy.text(details)
  el('final-title').textContent = details ? details.title : ''
  el('final-title').hidden = details === undefined
  const steps = el('final-steps')
  steps.replaceChildren(...(copy.steps?.(details) ?? []).map((text) => {
    const item = document.createElement('li')
    item.textContent = text
    return item
  }))
  steps.hidden = copy.steps === undefined
  const link = el<HTMLAnchorElement>('final-link')
  const target = details && copy.link ? safeRedirect(copy.link.to === 'success' ? details.successRedirectUrl : details.cancelRedirectUrl) : null
  link.hidden = target === null
  link.className = `button ${state === 'approved-here' ? 'primary' : 'secondary'}`
  if (target !== null) {
    link.href = target
    link.textContent = copy.link!.label(details!.vendorBrand)
  }
  el('retry-load').hidden = state !== 'unavailable'
  document.title = `${copy.heading} · KNS`
  const wasLoading = !el('loading').hidden
  if (wasLoading) finishLoading()
  el('request').hidden = true
  el('main').dataset.view = 'final'
  section.hidden = false
  if (!wasLoading) el('final-heading').focus()
}

export function setBusy(busy: boolean): void {
  for (const id of ['approve', 'deny', 'not-me', 'confirm-yes', 'confirm-no']) el(id).setAttribute('aria-disabled', String(busy))
  el('request').setAttribute('aria-busy', String(busy))
}

export function setProgress(text: string): void {
  el('progress').textContent = text
}

export function showError(text: string | null): void {
  el('error').hidden = text === null
  el('error-text').textContent = text ?? ''
}

/** The wallet chooser (several Sui wallets are installed): calls `onPick` with the one chosen. */
export function showWalletPicker(wallets: Wallet[], onPick: (wallet: Wallet) => void): void {
  const list = el('wallet-list')
  list.replaceChildren()
  for (const wallet of wallets) {
    const item = document.createElement('li')
    const button = document.createElement('button')
    button.type = 'button'
    button.className = 'button secondary'
    if (/^data:image\/(svg\+xml|webp|png|gif);base64,/.test(wallet.icon)) {
      const icon = document.createElement('img')
      icon.src = wallet.icon
      icon.alt = ''
      icon.width = 28
      icon.height = 28
      button.append(icon)
    }
    button.append(document.createTextNode(wallet.name))
    button.addEventListener('click', () => onPick(wallet))
    item.append(button)
    list.append(item)
  }
  el('wallet-picker').hidden = false
  // The choice replaces the Approve button (it would only open this list again).
  el('approve').hidden = true
  list.querySelector('button')?.focus()
}

export function hideWalletPicker(): void {
  el('wallet-picker').hidden = true
  el('approve').hidden = !el('no-wallet').hidden
}

/** How this browser can answer: with a wallet here, or (none) the ways that work without one. */
export type AnswerWays =
  | { kind: 'wallet' }
  | { kind: 'no-wallet'; touch: boolean; apps: { name: string; href: string }[]; unsuitable: string | null }
  | { kind: 'no-owner' }
  /** The owner is the number's phone-login address: "Approve with your phone number". */
  | { kind: 'phone' }
  /** ... but the request needs a Sui transaction, which a phone login cannot pay for. */
  | { kind: 'phone-transaction' }

/**
 * Without a usable wallet, the way that works replaces Approve before anyone taps it: wallet
 * apps' links on a phone, a QR code (drawn by the caller into #qr-code) on a computer. Deny and
 * "This wasn't me" need no wallet and stay.
 */
export function showAnswerWays(ways: AnswerWays): void {
  const withButton = ways.kind === 'wallet' || ways.kind === 'phone'
  el('no-wallet').hidden = withButton
  el('approve').hidden = !withButton || !el('wallet-picker').hidden
  el('approve').textContent = ways.kind === 'phone' ? 'Approve with your phone number' : 'Approve'
  el('phone-hint').hidden = ways.kind !== 'phone'
  if (withButton) return
  el('wallet-apps').hidden = true
  el('qr').hidden = true
  if (ways.kind === 'phone-transaction') {
    el('no-wallet-heading').textContent = 'This request needs a Sui wallet'
    el('no-wallet-text').textContent = 'It must be approved by a Sui transaction from your number\'s address, which costs a network fee in SUI. ' +
      'Logging in with your phone number cannot pay that fee. Ask the sender for a request you can approve by signing, or deny it.'
    el('no-wallet-hint').textContent = ''
    return
  }
  if (ways.kind === 'no-owner') {
    el('no-wallet-heading').textContent = 'This request cannot be approved here'
    el('no-wallet-text').textContent = 'The ledger shows no wallet owning this phone number, so nobody can approve it. You can still deny it.'
    el('no-wallet-hint').textContent = ''
    return
  }
  el('no-wallet-heading').textContent = ways.touch ? 'Approve in your Sui wallet app' : 'Continue on your phone'
  el('no-wallet-text').textContent = (ways.unsuitable === null ? 'No Sui wallet was found in this browser. ' : `${ways.unsuitable} `) +
    (ways.touch
      ? 'Open this page in the app of the wallet that owns this number:'
      : 'Scan this code with your phone to open this request there, in your Sui wallet app.')
  if (ways.touch) {
    const apps = el('wallet-apps')
    apps.replaceChildren(...ways.apps.map((app, i) => {
      const link = document.createElement('a')
      link.className = `button ${i === 0 ? 'primary' : 'secondary'}`
      link.href = app.href
      link.rel = 'noreferrer'
      link.textContent = `Open in ${app.name}`
      return link
    }))
    apps.hidden = false
  } else {
    el('qr').hidden = false
  }
  el('no-wallet-hint').textContent = ways.touch
    ? 'Another Sui wallet app: open its browser and paste this page\'s address.'
    : 'Or add a Sui wallet extension to this browser, then reload this page.'
}

export type ConfirmKind = 'deny' | 'not-me'

/** Asks before a decision that cannot be undone; the choice buttons take the place of the answer buttons. */
export function showConfirm(kind: ConfirmKind, details: Details): void {
  el('confirm-heading').textContent = kind === 'deny' ? 'Deny this request?' : 'Did you not ask for this?'
  el('confirm-text').textContent = kind === 'deny'
    ? `${details.vendorBrand} will see that you said no, and the request can no longer be approved.`
    : `We will cancel the request so nobody can approve it, and let ${details.vendorBrand} know you did not make it.`
  el('confirm-yes').textContent = kind === 'deny' ? 'Yes, deny' : 'Cancel the request'
  el('confirm').dataset.kind = kind
  el('confirm').hidden = false
  for (const id of ['actions', 'wallet-picker', 'no-wallet']) el(id).dataset.covered = 'true'
  el('not-me').hidden = true
  el('confirm-heading').focus()
}

export function hideConfirm(): void {
  el('confirm').hidden = true
  for (const id of ['actions', 'wallet-picker', 'no-wallet']) delete el(id).dataset.covered
  el('not-me').hidden = false
}
